"""What the chaining tests share (``test_chaining.py``, ``test_chaining_bounds.py``): a worker
on simulated time with one acker, a relay bolt recording each tuple with the chain depth it ran
at, a line of such bolts, and the runner of a component."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy import Bolt, TopologyBuilder, Tuple
from stormpy.testing import FeederSpout
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig

#: what the bolts saw, in order: (component, values[0], the dispatch's chain depth)
SEEN: list[tuple[str, Any, int]] = []
#: the worker under test (the bolts read its chain depth)
WORKER: list[Worker] = []
#: components whose execute is running now (to catch an execute re-entered from its own emit)
INSIDE: set[str] = set()


def depth() -> int:
    """The chain depth of the worker under test (-1 when there is none)."""
    return WORKER[0].dispatch.chain_depth if WORKER else -1


class Relay(Bolt):
    """Records each tuple with the chain depth and passes ``n + 1`` on (anchored) while
    ``n < limit``; acks. Fails the test if its execute is re-entered from its own emit."""

    outputs = ["n"]

    def __init__(self, name: str, limit: int = 3) -> None:
        self.name = name
        self.limit = limit

    def execute(self, tup: Tuple) -> None:
        assert self.name not in INSIDE, "execute re-entered from its own emit"
        INSIDE.add(self.name)
        try:
            SEEN.append((self.name, tup.values[0], depth()))
            if tup.values[0] < self.limit:
                self.emit([tup.values[0] + 1], tup)
            self.ack(tup)
        finally:
            INSIDE.discard(self.name)


def worker_of(builder: TopologyBuilder, conf: Mapping[str, Any] | None = None, *,
              opened: bool = True) -> Worker:
    """A fresh worker (one acker, simulated time, ``conf`` on top) of ``builder``'s topology,
    opened unless ``opened`` is false; what the bolts saw is cleared."""
    SEEN.clear()
    WORKER.clear()
    INSIDE.clear()
    worker = Worker(WorkerConfig("t", builder.create_topology(),
                                 {"topology.acker.executors": 1, **(conf or {})}),
                    clock=SimulatedClock())
    WORKER.append(worker)
    if opened:
        worker.open()
    return worker


def runner_of(worker: Worker, component: str) -> Any:
    """The task runner of ``component`` (its first task)."""
    return next(r for r in worker.tasks.values() if r.component_id == component)


def line(n: int) -> tuple[TopologyBuilder, FeederSpout]:
    """A spout feeding relays b0 → b1 → ... → b{n-1} (limit ``n``)."""
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("s", feeder)
    previous = "s"
    for i in range(n):
        b.set_bolt(f"b{i}", Relay, kwargs={"name": f"b{i}", "limit": n}).shuffle_grouping(previous)
        previous = f"b{i}"
    return b, feeder
