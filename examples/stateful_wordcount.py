"""Stateful word count (the sentences and splitter of ``wordcount.py``): a StatefulBolt whose
counts the framework checkpoints (Storm's ``IStatefulBolt`` with ``KeyValueState``). The builder
adds the checkpoint spout and wraps the bolts; an input is acked once the state that counted it is
committed, so after a failure the counts roll back to the last checkpoint and the replayed
sentences are counted exactly once.

Run it (nothing else to start: in local mode the state lives with the LocalCluster). The
checkpoint spout starts a checkpoint every second, but ``--idle-stop`` counts only the user's
components: the run stops 2 s after the last sentence was counted and committed (acked):

    stormpy local examples stateful_wordcount:topology --idle-stop 2

Keep the counts in a SQLite file instead of memory, so a second run continues from them:

    stormpy local examples stateful_wordcount:topology --idle-stop 2 \\
        -c topology.state.provider=sqlite -c 'topology.state.provider.config={"path": "wc.sqlite"}'
"""

from __future__ import annotations

from stormpy import TopologyBuilder, Tuple
from stormpy.state import KeyValueState, StatefulBolt
from wordcount import SENTENCES, SentenceSpout, SplitSentence

__all__ = ["SENTENCES", "StatefulWordCount", "build"]


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
