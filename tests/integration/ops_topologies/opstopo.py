"""Topologies of the on-call tests (logs, log levels, dumps): a counting spout feeding

* ``chatty``: logs ``chatty-bolt saw <n>`` at INFO and ``chatty-debug <n>`` at DEBUG (logger
  ``opstopo.chatty``) for every tuple;
* ``noisy``: logs ``lines`` lines of 1 KB per tuple and prints one (fills a log fast, for rotation);
* ``busy``: on its first tuple spins forever in :meth:`BusyBolt.spin_in_user_code`.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from stormpy import BasicBolt, Spout, TopologyBuilder, TopologySpec, Tuple

log = logging.getLogger("opstopo.chatty")


class CountingSpout(Spout):
    outputs = ["n"]

    def __init__(self, rate: float = 20.0) -> None:
        self.rate = rate

    def open(self, conf: Any, context: Any) -> None:
        self.n = 0
        self.next_at = time.monotonic()

    def next_tuple(self) -> None:
        now = time.monotonic()
        if now >= self.next_at:
            self.next_at = max(self.next_at + 1.0 / self.rate, now - 1.0)
            self.n += 1
            self.emit([self.n])


class ChattyBolt(BasicBolt):
    def process(self, tup: Tuple) -> None:
        log.info("chatty-bolt saw %d", tup.values[0])
        log.debug("chatty-debug %d", tup.values[0])


class NoisyBolt(BasicBolt):
    def __init__(self, lines: int = 5) -> None:
        self.lines = lines

    def process(self, tup: Tuple) -> None:
        filler = "x" * 1000
        for i in range(self.lines):
            log.info("noisy %d.%d %s", tup.values[0], i, filler)
        print(f"noisy print {tup.values[0]}")


class BusyBolt(BasicBolt):
    def process(self, tup: Tuple) -> None:
        self.spin_in_user_code()

    def spin_in_user_code(self) -> None:
        total = 0
        while True:
            total = (total + 1) % 1_000_003


def build(kind: str, rate: float = 20.0) -> TopologySpec:
    builder = TopologyBuilder()
    builder.set_spout("numbers", CountingSpout, 1, kwargs={"rate": rate})
    bolt = {"chatty": ChattyBolt, "noisy": NoisyBolt, "busy": BusyBolt}[kind]
    builder.set_bolt(kind, bolt, 1).shuffle_grouping("numbers")
    return builder.create_topology()
