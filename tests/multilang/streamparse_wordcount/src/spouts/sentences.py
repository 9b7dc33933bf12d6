"""A streamparse spout: each sentence of ``wordcount.sentences`` once, its index as tuple id
(ReliableSpout replays a failed one)."""

from stormpy.multilang.streamparse import ReliableSpout


class SentenceSpout(ReliableSpout):
    outputs = ["sentence"]

    def initialize(self, stormconf, context):
        self.sentences = list(stormconf.get("wordcount.sentences", []))
        self.next_index = 0

    def next_tuple(self):
        if self.next_index < len(self.sentences):
            i = self.next_index
            self.next_index += 1
            self.emit([self.sentences[i]], tup_id=i)
