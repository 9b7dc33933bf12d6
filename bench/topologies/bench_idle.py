"""An idle-ish topology for the scale runs (``bench.scale_sim``, ``bench.scale_hosts``): a spout
that emits one tuple every few seconds and a bolt that drops it, so a run measures the cluster's
machinery (heartbeats, assignments, scheduling), not tuples."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from stormpy import Bolt, Spout, TopologyBuilder, TopologyContext, Tuple
from stormpy.topology._spec import TopologySpec

#: seconds between two tuples of one spout task
EMIT_EVERY_SECS = 5.0


class IdleSpout(Spout):
    """Emits ``(n,)`` every :data:`EMIT_EVERY_SECS` seconds."""

    outputs = ["n"]

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.n = 0
        self.next_at = time.monotonic()

    def next_tuple(self) -> None:
        now = time.monotonic()
        if now < self.next_at:
            return
        self.next_at = now + EMIT_EVERY_SECS
        self.n += 1
        self.emit([self.n])


class DropBolt(Bolt):
    """Drops every tuple."""

    def execute(self, tup: Tuple) -> None:
        return None


def build(workers: int) -> TopologySpec:
    """A spout and a bolt with ``workers`` executors each (so every worker has work to run)."""
    b = TopologyBuilder()
    b.set_spout("idle", IdleSpout, workers)
    b.set_bolt("drop", DropBolt, workers).shuffle_grouping("idle")
    return b.create_topology()
