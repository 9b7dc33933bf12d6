"""The bench's split bolt in Python on Apache Storm, through Storm's multilang protocol (a
ShellBolt running this with Storm's own storm.py): one word per emit, anchored to the sentence
and the sentence acked after ``process`` (storm.BasicBolt), as the README's SplitSentence."""

import storm


class SplitSentence(storm.BasicBolt):
    def process(self, tup):
        for word in tup.values[0].split():
            storm.emit([word])


SplitSentence().run()
