"""Stateful word count: a StatefulBolt whose counts the framework checkpoints (Storm's
``IStatefulBolt`` with ``KeyValueState``). The builder adds the checkpoint spout and wraps the bolts;
an input is acked once the state that counted it is committed, so after a failure the counts roll
back to the last checkpoint and the replayed sentences are counted exactly once.

Run it (nothing else to start: in local mode the state lives with the LocalCluster; the
checkpoint spout starts a checkpoint every second, so the topology is never idle and runs until
``--ttl``):

    stormpy local examples stateful_wordcount:topology --ttl 10

Keep the counts in a SQLite file instead of memory, so a second run continues from them:

    stormpy local examples stateful_wordcount:topology --ttl 10 \\
        -c topology.state.provider=sqlite -c 'topology.state.provider.config={"path": "wc.sqlite"}'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy import BasicBolt, Spout, TopologyBuilder, TopologyContext, Tuple
from stormpy.state import KeyValueState, StatefulBolt

SENTENCES = [
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
    "i am at two with nature",
]


class SentenceSpout(Spout):
    """Emits ``count`` sentences, each with a message id, and replays those that fail."""

    outputs = ["sentence"]

    def __init__(self, count: int = 2000) -> None:
        self.count = count

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        n = len(context.component_tasks)
        self.ids = iter(range(context.task_index, self.count, n))
        self.replay: list[int] = []

    def next_tuple(self) -> None:
        i = self.replay.pop() if self.replay else next(self.ids, None)
        if i is not None:
            self.emit([SENTENCES[i % len(SENTENCES)]], msg_id=i)

    def fail(self, msg_id: int) -> None:
        self.replay.append(msg_id)


class SplitSentence(BasicBolt):
    outputs = ["word"]

    def process(self, tup: Tuple) -> None:
        for word in tup.values[0].split():
            self.emit([word])


class StatefulWordCount(StatefulBolt):
    """Counts words in its checkpointed state; emits ``[word, count]``."""

    outputs = ["word", "count"]

    def init_state(self, state: KeyValueState) -> None:
        self.counts = state

    def execute(self, tup: Tuple) -> None:
        word = tup.values[0]
        count = self.counts.get(word, 0) + 1
        self.counts.put(word, count)
        self.emit([word, count], anchors=[tup])
        self.ack(tup)


def build(sentences: int = 2000) -> TopologyBuilder:
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout, 1, kwargs={"count": sentences})
    builder.set_bolt("split", SplitSentence, 2).shuffle_grouping("sentences")
    builder.set_bolt("count", StatefulWordCount, 2).fields_grouping("split", ["word"])
    return builder


topology = build().create_topology()
config = {"topology.max.spout.pending": 1000}
