"""A streamparse-style word count on pystorm's classes (a test fixture): the spout and bolts as
streamparse users write them (``outputs`` declared on the class, ``initialize``, ``process``,
``self.emit``, ``self.logger``), importable by the worker and by ``pystorm_run``."""

from collections import Counter

from pystorm import BatchingBolt, Bolt, ReliableSpout, TicklessBatchingBolt

SENTENCES_KEY = "wordcount.sentences"


class SentenceSpout(ReliableSpout):
    """Emits each sentence of ``wordcount.sentences`` once, its index as the tuple id; pystorm's
    ReliableSpout replays a failed one (up to max_fails times)."""

    outputs = ["sentence"]
    max_fails = 5

    def initialize(self, conf, ctx):
        self.sentences = list(conf.get(SENTENCES_KEY, ["the cow jumped over the moon"]))
        self.next_index = 0

    def next_tuple(self):
        if self.next_index < len(self.sentences):
            i = self.next_index
            self.next_index += 1
            self.emit([self.sentences[i]], tup_id=i)


class SplitSentenceBolt(Bolt):
    """Auto-anchored, auto-acked split."""

    outputs = ["word"]

    def process(self, tup):
        for word in tup.values[0].split():
            self.emit([word])


class WordCountBolt(Bolt):
    """Running counts; emits [word, count] for every word seen."""

    outputs = ["word", "count"]

    def initialize(self, conf, ctx):
        self.counts = Counter()

    def process(self, tup):
        word = tup.values.word  # the namedtuple of the source stream's fields
        self.counts[word] += 1
        self.emit([word, self.counts[word]])
        self.logger.debug("counted %s", word)


class FlakyBolt(Bolt):
    """Raises on the word 'boom' the first time it sees it (pystorm auto-fails the tuple)."""

    outputs = ["word"]

    def initialize(self, conf, ctx):
        self.seen_boom = False

    def process(self, tup):
        if tup.values[0] == "boom" and not self.seen_boom:
            self.seen_boom = True
            raise ValueError("boom")
        self.emit([tup.values[0]])


class FlakyKeepRunningBolt(FlakyBolt):
    exit_on_exception = False


class BatchCountBolt(BatchingBolt):
    """Counts words per batch of ticks, grouped by word."""

    outputs = ["word", "count"]
    ticks_between_batches = 1

    def group_key(self, tup):
        return tup.values[0]

    def process_batch(self, key, tups):
        self.emit([key, len(tups)])


class TicklessCountBolt(TicklessBatchingBolt):
    outputs = ["word", "count"]
    secs_between_batches = 1

    def group_key(self, tup):
        return tup.values[0]

    def process_batch(self, key, tups):
        self.emit([key, len(tups)])
