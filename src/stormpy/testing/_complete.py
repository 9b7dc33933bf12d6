"""complete_topology: run a topology on fixed inputs and return everything each component emitted
(Storm's ``Testing.completeTopology`` with ``MockedSources``).

Under simulated time a run ends when every mocked tuple was emitted and its tuple tree completed
(acked or failed): while some are still pending once the topology is quiet, simulated time moves
on one second at a time (each step waited out until quiet), so tuples held by a windowed bolt see
their window close, stateful bolts' checkpoints commit (and ack their inputs) and tuples nobody
acks time out, at most 1.5 × ``topology.message.timeout.secs`` + 1 simulated seconds (a spout
tuple times out between 1 and 1.5 timeouts; none with message timeouts off)."""

from __future__ import annotations

import copy
import math
import threading
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from stormpy.config import message_timeout_secs, setting
from stormpy.local._cluster import LocalCluster
from stormpy.testing import _registry as registry
from stormpy.testing._acks import AckFailMapTracker
from stormpy.testing._components import FixedTupleSpout
from stormpy.topology._errors import InvalidTopologyError
from stormpy.topology._imports import class_path
from stormpy.topology._spec import TopologySpec
from stormpy.topology._tuple import DEFAULT_STREAM
from stormpy.topology.clock import SimulatedClock
from stormpy.worker.spout_task import TIMEOUT_BUCKETS

__all__ = ["CompleteResult", "MockedSources", "complete_topology"]


class MockedSources:
    """The tuples each mocked spout emits, per stream, in the order added (Storm's
    ``MockedSources``): ``MockedSources().add_mock_data("spout", ["a"], ["b"], stream="s")``."""

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        #: spout id → [(stream, values)] in emission order
        self.data: dict[str, list[tuple[str, list[Any]]]] = {}
        for sid, rows in (data or {}).items():
            if isinstance(rows, Mapping):
                for stream, stream_rows in rows.items():
                    self.add_mock_data(sid, *stream_rows, stream=stream)
            else:
                self.add_mock_data(sid, *rows)

    def add_mock_data(self, spout: str, *values: Sequence[Any],
                      stream: str = DEFAULT_STREAM) -> MockedSources:
        """Append tuples (each a sequence of values) for ``spout`` on ``stream``; chains."""
        rows = self.data.setdefault(spout, [])
        for v in values:
            if isinstance(v, (str, bytes)) or not isinstance(v, Sequence):
                raise TypeError(f"mock data for {spout}/{stream}: each tuple must be a list of "
                                f"values, got {v!r}")
            rows.append((stream, list(v)))
        return self


MockData = MockedSources | Mapping[str, Any]


class CompleteResult:
    """What ran: ``tuples(component, stream)`` lists the values emitted, in emission order per
    task; ``acked(spout, stream)``/``failed(spout, stream)`` list the positions (within that
    stream's mock data) of the mocked tuples acked/failed."""

    def __init__(self, emitted: dict[tuple[str, str], list[list[Any]]],
                 logs: dict[str, AckFailMapTracker], stats: dict[str, dict[str, Any]]) -> None:
        self._emitted = emitted
        self._logs = logs
        self.stats = stats

    def tuples(self, component: str, stream: str = DEFAULT_STREAM) -> list[list[Any]]:
        return list(self._emitted.get((component, stream), []))

    def acked(self, spout: str, stream: str = DEFAULT_STREAM) -> list[Any]:
        return sorted(pos for s, pos in self._logs[spout].acked if s == stream)

    def failed(self, spout: str, stream: str = DEFAULT_STREAM) -> list[Any]:
        return sorted(pos for s, pos in self._logs[spout].failed if s == stream)


def _mock_spouts(spec: TopologySpec, sources: MockedSources,
                 logs: dict[str, AckFailMapTracker]) -> tuple[list[str], dict[tuple[str, str], int]]:
    """Swap each mocked spout of ``spec`` for a FixedTupleSpout; return the registry keys and
    how many tuples each (spout, stream) must emit."""
    keys: list[str] = []
    totals: dict[tuple[str, str], int] = defaultdict(int)
    for sid, rows in sources.data.items():
        comp = spec.components.get(sid)
        if comp is None or comp.kind != "spout":
            raise InvalidTopologyError(f"mock source {sid!r} is not a spout of the topology")
        for stream, values in rows:
            declared = comp.streams.get(stream)
            if declared is None:
                raise InvalidTopologyError(f"mock data for spout {sid!r} on stream {stream!r}, "
                                           f"which it does not declare (declared: "
                                           f"{sorted(comp.streams)})")
            if declared.direct:
                raise InvalidTopologyError(f"spout {sid!r}: stream {stream!r} is direct; mocked "
                                           "sources emit on grouped streams only")
            if len(values) != len(declared.fields):
                raise InvalidTopologyError(f"mock data for {sid}/{stream}: {values!r} has "
                                           f"{len(values)} values for fields "
                                           f"{declared.fields.to_list()}")
            totals[(sid, stream)] += 1
        log = logs[sid] = AckFailMapTracker()
        keys.append(registry.register(log))
        comp.class_path = class_path(FixedTupleSpout)
        comp.kwargs = {"tuples": [v for _, v in rows], "streams": [s for s, _ in rows],
                       "fields": {n: st.fields.to_list() for n, st in comp.streams.items()},
                       "key": keys[-1]}
    return keys, totals


def timeout_bound_secs(timeout_secs: float) -> int:
    """Whole seconds by which a spout tuple pending since now has surely timed out: its pending
    map rotates every ``timeout / (TIMEOUT_BUCKETS - 1)`` and drops a tuple after
    ``TIMEOUT_BUCKETS`` rotations at most (1.5 × the timeout), plus one second."""
    return math.ceil(timeout_secs * TIMEOUT_BUCKETS / (TIMEOUT_BUCKETS - 1)) + 1


def complete_topology(topology: TopologySpec, mock_sources: MockData,
                      conf: Mapping[str, Any] | None = None, *, timeout: float = 60.0,
                      cluster: LocalCluster | None = None, workers: int = 1) -> CompleteResult:
    """Replace each spout named in ``mock_sources`` with one that emits exactly the given tuples
    (with message ids), run until every mocked tuple is emitted and the topology is quiet, and
    return what every component emitted.

    ``mock_sources`` is a :class:`MockedSources`, or a mapping spout id → list of tuples (default
    stream) or → mapping stream → list of tuples (any declared stream). Uses simulated time
    unless a ``cluster`` is given, so message timeouts never fire on their own. ``workers`` > 1
    runs the topology as several in-process workers exchanging serialised tuples.
    """
    sources = mock_sources if isinstance(mock_sources, MockedSources) else MockedSources(mock_sources)
    spec = copy.deepcopy(topology)
    logs: dict[str, AckFailMapTracker] = {}
    keys, totals = _mock_spouts(spec, sources, logs)
    emitted: dict[tuple[str, str], list[list[Any]]] = defaultdict(list)
    lock = threading.Lock()

    def observe(component: str, stream: str, values: list[Any], targets: list[int]) -> None:
        with lock:
            emitted[(component, stream)].append(list(values))

    own = cluster is None
    lc = cluster or LocalCluster(simulated_time=True)
    name = f"complete-{id(spec)}"
    try:
        worker = lc.submit_topology(name, conf, spec, observer=observe, workers=workers)

        def all_emitted() -> bool:
            with lock:
                return all(len(emitted[key]) >= n for key, n in totals.items())
        lc.wait_for(all_emitted, timeout, "mock sources to emit every tuple")
        lc.wait_until_quiet(name, timeout)
        if isinstance(lc.clock, SimulatedClock):  # wait out windows and timeouts (module doc)
            total = sum(totals.values())
            steps = (timeout_bound_secs(message_timeout_secs(worker.conf))
                     if setting(worker.conf, "topology.enable.message.timeouts") else 0)
            while steps > 0 and sum(len(log.acked) + len(log.failed)
                                    for log in logs.values()) < total:
                lc.advance_time(1.0)
                steps -= 1
        stats = lc.get_stats(name)
        lc.kill_topology(name)
    finally:
        for key in keys:
            registry.unregister(key)
        if own:
            lc.shutdown()
    return CompleteResult(dict(emitted), logs, stats)
