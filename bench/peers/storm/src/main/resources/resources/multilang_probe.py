"""A multilang bolt on Storm's own storm.py using most of the protocol: the component that runs
unchanged under Apache Storm (a ShellBolt of ShellComponentRun.java) and under stormpy
(``bench/peers/storm_shell.py``), whose emitted tuples are compared.

Per sentence: each word with its position on the default stream, anchored to the sentence; a
summary on ``shape`` (counts, a float, a list, null, a bool, and how many task ids were
answered to the first emit); a log line; then the ack. (No direct emit: Apache Storm 2.8's JSON
serializer casts an emit's ``task`` to a Java Long, but its JSON parser gives small numbers as
Integer, so a direct emit kills the worker there with a ClassCastException.)
A sentence with the word ``retry`` is failed the first time it comes (the spout sends it again)
and processed the second time.
"""

import storm


class Probe(storm.Bolt):
    def initialize(self, conf, context):
        self.failed_once = set()

    def process(self, tup):
        sentence = tup.values[0]
        words = sentence.split(" ")
        if "retry" in words and sentence not in self.failed_once:
            self.failed_once.add(sentence)
            storm.fail(tup)
            return
        targets = None
        for position, word in enumerate(words):
            tasks = storm.emit([word, position], anchors=[tup])
            if targets is None:
                targets = tasks
        storm.emit([sentence, len(words), len(sentence) / 4, words[:2], None, len(words) % 2 == 0,
                    len(targets)], stream="shape", anchors=[tup])
        storm.logInfo(f"probe: {len(words)} words")
        storm.ack(tup)


Probe().run()
