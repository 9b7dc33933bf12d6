"""LocalCluster: run topologies inside this process (Storm's LocalCluster).

Each submitted topology runs as one Worker holding all its tasks on its own loop thread — the
same executor, routing and acking code as a cluster worker, with same-worker delivery. With
``simulated_time=True`` timers (ticks, message timeouts) only move when the test calls
``advance_time``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from stormpy.config import merged
from stormpy.topology.spec import TopologySpec
from stormpy.worker.clock import Clock, SimulatedClock
from stormpy.worker.loop import Worker


class TopologyNotFound(KeyError):
    """No running topology by that name."""


class LocalCluster:
    """In-process cluster. Use as a context manager so every topology is stopped."""

    def __init__(self, simulated_time: bool = False, conf: Mapping[str, Any] | None = None) -> None:
        self.clock: Clock = SimulatedClock() if simulated_time else Clock()
        self.conf = dict(conf or {})
        self._workers: dict[str, Worker] = {}

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def submit_topology(self, name: str, conf: Mapping[str, Any] | None, topology: TopologySpec, *,
                        active: bool = True,
                        observer: Callable[[str, str, list[Any], list[int]], None] | None = None
                        ) -> Worker:
        """Start ``topology`` under ``name``; it begins active unless ``active=False``."""
        if name in self._workers:
            raise ValueError(f"topology {name!r} is already running")
        topology.validate()
        full = merged(self.conf, conf, {"topology.name": name})
        worker = Worker(f"{name}-{uuid.uuid4().hex[:8]}", topology, full, clock=self.clock,
                        active=active, observer=observer)
        self._workers[name] = worker
        worker.start(name=f"local-{name}")
        return worker

    def worker(self, name: str) -> Worker:
        try:
            return self._workers[name]
        except KeyError:
            raise TopologyNotFound(f"no topology named {name!r} (running: "
                                   f"{sorted(self._workers)})") from None

    def kill_topology(self, name: str, wait_secs: float = 0.0) -> None:
        """Deactivate, wait ``wait_secs`` (simulated or real), stop and forget the topology."""
        worker = self.worker(name)
        if wait_secs:
            worker.set_active(False)
            self.sleep(wait_secs)
        worker.stop()
        del self._workers[name]

    def activate(self, name: str) -> None:
        self.worker(name).set_active(True)

    def deactivate(self, name: str) -> None:
        self.worker(name).set_active(False)

    def get_stats(self, name: str) -> dict[str, dict[str, Any]]:
        """Per-component emitted/transferred/executed/acked/failed and complete latency."""
        return self.worker(name).stats()

    def topologies(self) -> list[str]:
        return sorted(self._workers)

    def sleep(self, seconds: float) -> None:
        """Advance simulated time, or really sleep."""
        if isinstance(self.clock, SimulatedClock):
            self.advance_time(seconds)
        else:
            time.sleep(seconds)

    def wait_until_quiet(self, name: str | None = None, timeout: float = 30.0,
                         rounds: int = 3) -> None:
        """Wait until the named topology (default: all) has done nothing for ``rounds`` loop
        rounds, with no background job pending. Raises the topology's WorkerError if it failed,
        TimeoutError if it never goes quiet."""
        workers = [self.worker(name)] if name else list(self._workers.values())
        starts = [w.rounds for w in workers]
        deadline = time.monotonic() + timeout
        while True:
            for w in workers:
                if w.failure is not None:
                    raise w.failure
            if all(w.rounds >= s + rounds and w.is_quiet(rounds) for w, s in zip(workers, starts)):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"topologies {[w.topology_id for w in workers]} still busy after "
                                   f"{timeout}s")
            time.sleep(0.0005)

    def wait_for(self, condition: Callable[[], bool], timeout: float = 30.0,
                 what: str = "condition") -> None:
        """Poll ``condition`` until true; TimeoutError naming ``what`` otherwise."""
        deadline = time.monotonic() + timeout
        while not condition():
            for w in self._workers.values():
                if w.failure is not None:
                    raise w.failure
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
            time.sleep(0.001)

    def advance_time(self, seconds: float, step: float = 1.0) -> None:
        """Move simulated time forward in ``step``-second increments, letting every topology go
        quiet after each one (Storm's advance-cluster-time)."""
        if not isinstance(self.clock, SimulatedClock):
            raise RuntimeError("advance_time needs LocalCluster(simulated_time=True)")
        remaining = seconds
        while remaining > 1e-9:
            inc = min(step, remaining)
            self.wait_until_quiet()
            self.clock.advance(inc)
            remaining -= inc
        self.wait_until_quiet()

    def shutdown(self) -> None:
        """Stop every topology."""
        for name in list(self._workers):
            self._workers.pop(name).stop()
