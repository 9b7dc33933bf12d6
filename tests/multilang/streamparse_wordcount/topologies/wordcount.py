"""The word count topology in streamparse's DSL; ``topology`` and ``config`` are what
``stormpy local`` / ``stormpy jar`` load (run with ``src/`` on the path, as streamparse does)."""

from bolts.wordcount import SplitBolt, TotalBolt, WordCountBolt
from spouts.sentences import SentenceSpout

from stormpy.multilang.streamparse import Grouping, Topology


class WordCount(Topology):
    config = {"wordcount.sentences": ["the cow jumped over the moon",
                                      "an apple a day keeps the doctor away",
                                      "the moon is made of cheese"]}
    sentence_spout = SentenceSpout.spec()
    split_bolt = SplitBolt.spec(inputs=[sentence_spout], par=2)
    count_bolt = WordCountBolt.spec(inputs={split_bolt: Grouping.fields("word")}, par=2)
    total_bolt = TotalBolt.spec(name="totals", inputs={split_bolt["lengths"]: Grouping.GLOBAL})


topology = WordCount.to_topology()
config = WordCount.config
