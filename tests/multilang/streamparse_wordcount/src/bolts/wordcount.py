"""streamparse bolts: split sentences (words on the default stream, the sentence's word count on
``lengths``), count words, total the word counts."""

from collections import Counter

from stormpy.multilang.streamparse import Bolt, Stream


class SplitBolt(Bolt):
    outputs = [Stream(fields=["word"]), Stream(fields=["sentence", "n"], name="lengths")]

    def process(self, tup):
        words = tup.values.sentence.split()
        for word in words:
            self.emit([word])
        self.emit([tup.values.sentence, len(words)], stream="lengths")


class WordCountBolt(Bolt):
    outputs = ["word", "count"]

    def initialize(self, conf, ctx):
        self.counter = Counter()

    def process(self, tup):
        word = tup.values[0]
        self.counter[word] += 1
        self.emit([word, self.counter[word]])


class TotalBolt(Bolt):
    outputs = ["total"]

    def initialize(self, conf, ctx):
        self.total = 0

    def process(self, tup):
        self.total += tup.values.n
        self.emit([self.total])
