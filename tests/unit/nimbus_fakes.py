"""An in-memory stand-in for ClusterState (the subset Nimbus uses) and helpers for Nimbus unit tests."""

from __future__ import annotations

import time
from collections.abc import Mapping, Set
from pathlib import Path
from typing import Any

from stormpy.bundle import build_bundle
from stormpy.cluster import Assignment, ErrorInfo, StormBase, SupervisorInfo, WorkerHeartbeat
from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.monitor import Monitor
from stormpy.nimbus.store import BundleStore
from stormpy.nimbus.topologies import TopologyManager
from stormpy.nimbus.uploads import StagedBundle
from wordcount import build


class FakeClusterState:
    """Dict-backed cluster state with the ClusterState methods Nimbus calls."""

    def __init__(self) -> None:
        self.bases: dict[str, StormBase] = {}
        self.sups: dict[str, SupervisorInfo] = {}
        self.assigns: dict[str, Assignment] = {}
        self.beats: dict[str, dict[tuple[str, int], WorkerHeartbeat]] = {}
        self.errs: dict[str, dict[str, list[ErrorInfo]]] = {}
        self.marks: set[str] = set()

    # submissions in flight
    def mark_submitting(self, tid: str) -> None:
        self.marks.add(tid)

    def clear_submitting(self, tid: str) -> None:
        self.marks.discard(tid)

    def submitting(self) -> list[str]:
        return sorted(self.marks)

    # supervisors
    def nimbus_records(self) -> dict[str, dict[str, Any]]:
        return {}  # no other Nimbus registered

    def supervisors(self, callback: Any = None) -> dict[str, SupervisorInfo]:
        return dict(self.sups)

    def supervisors_of(self, sids: list[str]) -> dict[str, SupervisorInfo]:
        return {sid: self.sups[sid] for sid in sids if sid in self.sups}

    def add_supervisor(self, sid: str, ports: list[int], host: str = "127.0.0.1") -> None:
        self.sups[sid] = SupervisorInfo(sid, host, tuple(ports), time.time(), "test")

    # storms
    def storm_bases(self) -> dict[str, StormBase]:
        return dict(self.bases)

    def storm_base(self, tid: str, callback: Any = None) -> StormBase | None:
        return self.bases.get(tid)

    def set_storm_base(self, base: StormBase) -> None:
        self.bases[base.topology_id] = base

    def remove_storm_base(self, tid: str) -> None:
        self.bases.pop(tid, None)

    def active_storms(self) -> list[str]:
        return sorted(self.bases)

    # assignments
    def assignments(self, callback: Any = None) -> dict[str, Assignment]:
        return dict(self.assigns)

    def assignment(self, tid: str, callback: Any = None) -> Assignment | None:
        return self.assigns.get(tid)

    def set_assignment(self, assignment: Assignment) -> None:
        self.assigns[assignment.topology_id] = assignment

    # heartbeats
    def set_worker_heartbeat(self, beat: WorkerHeartbeat) -> None:
        self.beats.setdefault(beat.topology_id, {})[(beat.node, beat.port)] = beat

    def worker_heartbeats(self, tid: str) -> dict[tuple[str, int], WorkerHeartbeat]:
        return dict(self.beats.get(tid, {}))

    def heartbeats_of(self, tids: list[str]) -> dict[str, dict[tuple[str, int], WorkerHeartbeat]]:
        return {tid: self.worker_heartbeats(tid) for tid in tids}

    def remove_worker_heartbeat(self, tid: str, node: str, port: int) -> None:
        self.beats.get(tid, {}).pop((node, port), None)

    def all_errors(self, tid: str) -> dict[str, list[ErrorInfo]]:
        return dict(self.errs.get(tid, {}))

    # whole topologies
    def topologies(self) -> list[str]:
        return sorted(set(self.bases) | set(self.assigns) | set(self.beats) | set(self.errs))

    def remove_topology(self, tid: str) -> None:
        for table in (self.assigns, self.beats, self.errs, self.bases):
            table.pop(tid, None)  # type: ignore[attr-defined]
        self.marks.discard(tid)


def staged_bundle(tmp: Path, key: str = "bkey") -> StagedBundle:
    """A real (tiny) bundle file staged as if uploaded."""
    src = tmp / f"src-{key}"
    src.mkdir(parents=True, exist_ok=True)
    (src / "mod.py").write_text("X = 1\n")
    info = build_bundle(src, tmp / f"{key}.zip")
    return StagedBundle(key, info.path, info.sha256, info.size, time.time())


class SimClock:
    """Wall-clock stand-in that tests move by hand."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, secs: float) -> None:
        self.now += secs


class NimbusRig:
    """A TopologyManager over ``state`` (default: a fresh :class:`FakeClusterState`) holding two
    supervisors, sup-a and sup-b, of two slots each, a bundle store under ``tmp`` and, with
    ``monitor``, a Monitor (``monitor_kw`` passed on), all on one :class:`SimClock`; nothing runs
    until a test calls it."""

    def __init__(self, tmp: Path, conf: Mapping[str, Any], *, state: FakeClusterState | None = None,
                 monitor: bool = True, **monitor_kw: Any) -> None:
        self.tmp = tmp
        self.clock = SimClock()
        self.state = FakeClusterState() if state is None else state
        self.state.add_supervisor("sup-a", [6700, 6701])
        self.state.add_supervisor("sup-b", [6700, 6701])
        self.store = BundleStore(NimbusDirs(tmp / "local"))
        self.manager = TopologyManager(self.state, self.store, conf, clock=self.clock)  # type: ignore[arg-type]
        if monitor:
            self.monitor = Monitor(self.manager, conf, clock=self.clock, **monitor_kw)

    def submit(self, name: str = "wc", workers: int = 2, status: str = "active") -> str:
        """Submit the example word count as ``name`` over ``workers`` workers; its id."""
        return self.manager.submit(name, staged_bundle(self.tmp, name), build(100).create_topology(),
                                   {"topology.workers": workers}, status)

    def beat(self, tid: str, skip: Set[tuple[str, int]] = frozenset()) -> None:
        """Every worker assigned to ``tid`` but those in ``skip`` heartbeats to the monitor now."""
        for (node, port), execs in self.state.assigns[tid].workers().items():
            if (node, port) not in skip:
                self.monitor.beats.record([WorkerHeartbeat(tid, node, port, self.clock(), 1.0, execs)])

    def run(self, secs: int, *tids: str, skip: Set[tuple[str, int]] = frozenset()) -> None:
        """``secs`` seconds, one at a time: the workers of ``tids`` (but ``skip``) heartbeat, then
        a monitor round runs (its errors raised)."""
        for _ in range(secs):
            self.clock.advance(1)
            for tid in tids:
                self.beat(tid, skip)
            self.monitor.tick(raise_errors=True)
