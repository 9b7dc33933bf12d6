"""Word count: the classic Storm topology, reliable end to end.

Run it:  stormpy local examples wordcount:topology --idle-stop 1
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from stormpy import BasicBolt, Bolt, Spout, TopologyBuilder, TopologyContext, Tuple

SENTENCES = [
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
    "i am at two with nature",
]


class SentenceSpout(Spout):
    """Emits ``count`` sentences (cycling through SENTENCES), each with a message id, and replays
    any that fail. Each task emits its share."""

    outputs = ["sentence"]

    def __init__(self, count: int = 10_000) -> None:
        self.count = count

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        n = len(context.component_tasks)
        self.ids = iter(range(context.task_index, self.count, n))
        self.replay: list[int] = []
        self.acked = 0

    def next_tuple(self) -> None:
        i = self.replay.pop() if self.replay else next(self.ids, None)
        if i is not None:
            self.emit([SENTENCES[i % len(SENTENCES)]], msg_id=i)

    def ack(self, msg_id: int) -> None:
        self.acked += 1

    def fail(self, msg_id: int) -> None:
        self.replay.append(msg_id)


class SplitSentence(BasicBolt):
    """Splits a sentence into words (emits anchored to the sentence automatically)."""

    outputs = ["word"]

    def process(self, tup: Tuple) -> None:
        for word in tup.values[0].split():
            self.emit([word])


class WordCount(Bolt):
    """Counts words (fields grouping sends each word to one task) and emits running counts."""

    outputs = ["word", "count"]

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.counts: Counter[str] = Counter()
        self.task = context.task_id

    def execute(self, tup: Tuple) -> None:
        word = tup.values[0]
        self.counts[word] += 1
        self.emit([word, self.counts[word]], anchors=tup)
        self.ack(tup)

    def cleanup(self) -> None:
        top = ", ".join(f"{w}={c}" for w, c in self.counts.most_common(3))
        print(f"count task {self.task}: {sum(self.counts.values())} words; top: {top}")


def build(sentences: int = 10_000) -> TopologyBuilder:
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout, 2, kwargs={"count": sentences})
    builder.set_bolt("split", SplitSentence, 2).shuffle_grouping("sentences")
    builder.set_bolt("count", WordCount, 3).fields_grouping("split", ["word"])
    return builder


topology = build().create_topology()
config = {"topology.max.spout.pending": 2000}
