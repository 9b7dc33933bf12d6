"""Trident word count: sentences split into words, counted per word into SQLite exactly once.

    stormpy local examples trident_wordcount:topology --idle-stop 2

(nothing else to start). Each committed batch prints the counts it changed, most frequent first
(``batch 20: the=1000, and=500, ...``); the counts stay in ``trident-wordcount.sqlite`` and read
back as plain values with::

    python -c "from stormpy.trident import StateFactory, read_state; \\
print(read_state(StateFactory.sqlite('trident-wordcount.sqlite', 'counts')))"
"""

from typing import Any

from stormpy.trident import (
    Aggregator,
    Count,
    FixedBatchSpout,
    StateFactory,
    TridentCollector,
    TridentTopology,
    TridentTuple,
)

SENTENCES = ["the cow jumped over the moon", "the man went to the store and bought some candy",
             "four score and seven years ago", "how many apples can you eat"]
COUNTS = StateFactory.sqlite("trident-wordcount.sqlite", "counts")


def split(tuple_):  # a module-level function: workers import operations by path
    return [[word] for word in tuple_["sentence"].split()]


class PrintCounts(Aggregator):
    """Prints, once per batch, the counts the batch changed (the five largest)."""

    def init(self, batch_id: Any, collector: TridentCollector) -> dict[str, Any]:
        return {"batch": batch_id, "counts": {}}

    def aggregate(self, state: dict[str, Any], tuple_: TridentTuple,
                  collector: TridentCollector) -> None:
        state["counts"][tuple_["word"]] = tuple_["count"]

    def complete(self, state: dict[str, Any], collector: TridentCollector) -> None:
        top = sorted(state["counts"].items(), key=lambda kv: (-kv[1], kv[0]))[:5]
        batch = getattr(state["batch"], "txid", state["batch"])
        print(f"batch {batch}: " + ", ".join(f"{word}={n}" for word, n in top), flush=True)


trident = TridentTopology()
counts = trident.new_stream("wordcount", FixedBatchSpout(["sentence"], 100,
                                                         [[SENTENCES[i % 4]] for i in range(2000)])) \
    .flat_map(split, ["word"]) \
    .group_by(["word"]) \
    .persistent_aggregate(COUNTS, Count(), ["count"]) \
    .parallelism_hint(2)
counts.new_values_stream().global_().aggregate(["word", "count"], PrintCounts(), [])
topology = trident.build()
config = {"topology.max.spout.pending": 3}
