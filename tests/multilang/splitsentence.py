"""Storm's split-sentence example bolt on Storm's own storm.py (a test fixture)."""
import storm


class SplitSentenceBolt(storm.BasicBolt):
    def process(self, tup):
        words = tup.values[0].split(" ")
        for word in words:
            storm.emit([word])


SplitSentenceBolt().run()
