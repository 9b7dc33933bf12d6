"""Trident word count: sentences split into words, counted per word into SQLite exactly once.

    stormpy local examples trident_wordcount:topology --idle-stop 2

(nothing else to start; the counts end in ``trident-wordcount.sqlite``, table ``trident_state``).
"""

from stormpy.trident import Count, FixedBatchSpout, StateFactory, TridentTopology

SENTENCES = ["the cow jumped over the moon", "the man went to the store and bought some candy",
             "four score and seven years ago", "how many apples can you eat"]


def split(tuple_):  # a module-level function: workers import operations by path
    return [[word] for word in tuple_["sentence"].split()]


trident = TridentTopology()
trident.new_stream("wordcount", FixedBatchSpout(["sentence"], 100,
                                                [[SENTENCES[i % 4]] for i in range(2000)])) \
    .flat_map(split, ["word"]) \
    .group_by(["word"]) \
    .persistent_aggregate(StateFactory.sqlite("trident-wordcount.sqlite", "counts"), Count(),
                          ["count"]) \
    .parallelism_hint(2)
topology = trident.build()
config = {"topology.max.spout.pending": 3}
