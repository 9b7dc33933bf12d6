"""Test topologies for the supervisor/worker-process tests (bundled and run by real workers).

``paced``: spouts emitting at a fixed rate (light on CPU), a bolt acking everything.
``failing``: a bolt that raises on its first tuple. ``stuck``: a bolt that hangs.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from stormpy import Bolt, Spout, TopologyBuilder, TopologyContext, Tuple


class PacedSpout(Spout):
    """Emits one tracked tuple every ``1 / rate`` seconds (per task); counts its opens in the
    checkpoint state (``pace/<task index>`` → ``{"opens": n}``)."""

    outputs = ["n"]

    def __init__(self, rate: float = 100.0) -> None:
        self.rate = rate

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        store = context.state_store()
        key = f"{context.component_id}/{context.task_index}"
        store.put(key, {"opens": store.get(key, {"opens": 0})["opens"] + 1})
        self.i = 0
        self.next_at = time.monotonic()

    def next_tuple(self) -> None:
        now = time.monotonic()
        if now < self.next_at:
            return
        self.next_at = max(self.next_at + 1.0 / self.rate, now - 1.0)
        self.emit([self.i], msg_id=self.i)
        self.i += 1


class AckAll(Bolt):
    outputs: list[str] = []

    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


class Explode(Bolt):
    outputs: list[str] = []

    def execute(self, tup: Tuple) -> None:
        raise RuntimeError(f"boom on {tup.values}")


class Stuck(Bolt):
    """Blocks the executor loop for good on its first tuple (a hung component)."""

    outputs: list[str] = []

    def execute(self, tup: Tuple) -> None:
        time.sleep(3600)


def paced(rate: float = 100.0) -> Any:
    b = TopologyBuilder()
    b.set_spout("pace", PacedSpout, 2, kwargs={"rate": rate})
    b.set_bolt("sink", AckAll, 2).shuffle_grouping("pace")
    return b.create_topology()


def failing() -> Any:
    b = TopologyBuilder()
    b.set_spout("pace", PacedSpout, 1, kwargs={"rate": 50.0})
    b.set_bolt("explode", Explode, 1).shuffle_grouping("pace")
    return b.create_topology()


def stuck() -> Any:
    b = TopologyBuilder()
    b.set_spout("pace", PacedSpout, 1, kwargs={"rate": 20.0})
    b.set_bolt("stuck", Stuck, 1).shuffle_grouping("pace")
    return b.create_topology()
