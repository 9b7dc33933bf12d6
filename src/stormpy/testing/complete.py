"""complete_topology: run a topology on fixed inputs and return everything each component emitted
(Storm's ``Testing.completeTopology``)."""

from __future__ import annotations

import copy
import threading
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from stormpy.local.cluster import LocalCluster
from stormpy.testing import registry
from stormpy.testing.components import FixedTupleSpout, _AckLog
from stormpy.topology.errors import InvalidTopologyError
from stormpy.topology.imports import class_path
from stormpy.topology.spec import TopologySpec
from stormpy.topology.tuple import DEFAULT_STREAM


class CompleteResult:
    """What ran: ``tuples(component, stream)`` lists the values emitted, in emission order per
    task; ``acked(spout)``/``failed(spout)`` list mocked message ids (tuple positions)."""

    def __init__(self, emitted: dict[tuple[str, str], list[list[Any]]],
                 logs: dict[str, _AckLog], stats: dict[str, dict[str, Any]]) -> None:
        self._emitted = emitted
        self._logs = logs
        self.stats = stats

    def tuples(self, component: str, stream: str = DEFAULT_STREAM) -> list[list[Any]]:
        return list(self._emitted.get((component, stream), []))

    def acked(self, spout: str) -> list[Any]:
        return sorted(self._logs[spout].acked)

    def failed(self, spout: str) -> list[Any]:
        return sorted(self._logs[spout].failed)


def complete_topology(topology: TopologySpec, mock_sources: Mapping[str, Sequence[Sequence[Any]]],
                      conf: Mapping[str, Any] | None = None, *, timeout: float = 60.0,
                      cluster: LocalCluster | None = None, workers: int = 1) -> CompleteResult:
    """Replace each spout named in ``mock_sources`` with one that emits exactly those tuples (on
    its default stream, with message ids), run until every mocked tuple is emitted and the
    topology is quiet, and return what every component emitted. Uses simulated time unless a
    ``cluster`` is given, so message timeouts never fire on their own. ``workers`` > 1 runs the
    topology as several in-process workers exchanging serialised tuples."""
    spec = copy.deepcopy(topology)
    logs: dict[str, _AckLog] = {}
    keys: list[str] = []
    for sid, rows in mock_sources.items():
        comp = spec.components.get(sid)
        if comp is None or comp.kind != "spout":
            raise InvalidTopologyError(f"mock source {sid!r} is not a spout of the topology")
        stream = comp.streams.get(DEFAULT_STREAM)
        if stream is None:
            raise InvalidTopologyError(f"spout {sid!r} has no default stream to mock")
        log = _AckLog()
        logs[sid] = log
        comp.class_path = class_path(FixedTupleSpout)
        keys.append(registry.register(log))
        comp.kwargs = {"tuples": [list(r) for r in rows], "fields": stream.fields.to_list(),
                       "key": keys[-1]}
    emitted: dict[tuple[str, str], list[list[Any]]] = defaultdict(list)
    lock = threading.Lock()

    def observe(component: str, stream: str, values: list[Any], targets: list[int]) -> None:
        with lock:
            emitted[(component, stream)].append(list(values))

    own = cluster is None
    lc = cluster or LocalCluster(simulated_time=True)
    name = f"complete-{id(spec)}"
    try:
        lc.submit_topology(name, conf, spec, observer=observe, workers=workers)
        total = {sid: len(rows) for sid, rows in mock_sources.items()}

        def all_emitted() -> bool:
            with lock:
                return all(len(emitted[(sid, DEFAULT_STREAM)]) >= n for sid, n in total.items())
        lc.wait_for(all_emitted, timeout, "mock sources to emit every tuple")
        lc.wait_until_quiet(name, timeout)
        stats = lc.get_stats(name)
        lc.kill_topology(name)
    finally:
        for key in keys:
            registry.unregister(key)
        if own:
            lc.shutdown()
    return CompleteResult(dict(emitted), logs, stats)
