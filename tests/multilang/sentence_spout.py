"""A reliable spout on Storm's storm.py (a test fixture): emits the sentences given as
arguments, each with its index as the message id, replays failed ones, logs acks."""
import sys

import storm

SENTENCES = sys.argv[1:] or ["the cow jumped over the moon"]


class SentenceSpout(storm.Spout):
    def initialize(self, conf, context):
        self.todo = list(range(len(SENTENCES)))

    def nextTuple(self):
        if self.todo:
            i = self.todo.pop(0)
            storm.emit([SENTENCES[i]], id=i)

    def ack(self, id):
        storm.logInfo(f"acked {id}")

    def fail(self, id):
        self.todo.append(id)


SentenceSpout().run()
