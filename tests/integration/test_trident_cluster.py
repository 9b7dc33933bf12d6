"""Exactly-once Trident state on real processes: the Trident count on a Nimbus + supervisors
cluster, worker processes killed with SIGKILL in turn (the coordinator's first), ends with exact
per-word counts in SQLite, for transactional and opaque state."""

from __future__ import annotations

import os
import signal
import uuid
from collections import Counter
from pathlib import Path

import pytest
import tridentcount
from cluster_kit import (  # noqa: F401 - fixtures
    attach_cluster_logs,
    cluster_fixture,
    kill_and_check_gone,
    task_port,
    wait_for,
    worker_pids_by_port,
)

from stormpy.bundle import build_bundle
from stormpy.state import SqliteStore
from stormpy.testing.cluster import ProcessCluster
from stormpy.topology.layout import compute_layout
from stormpy.trident import OPAQUE, TRANSACTIONAL, MapState

HERE = Path(__file__).resolve().parent / "trident_topologies"


pytestmark = [pytest.mark.timeout(300), pytest.mark.zookeeper, pytest.mark.cluster]


def counts(db: Path, kind: str) -> dict[str, int]:
    if not db.exists():
        return {}
    state = MapState(SqliteStore(db, "trident_state", segments=("counts",)), kind)
    try:
        return {key[0]: value for key, value in state.items()}
    finally:
        state.close()


@pytest.mark.parametrize("kind", [TRANSACTIONAL, OPAQUE])
def test_kill9_workers_trident_counts_are_exact(cluster: ProcessCluster, tmp_path: Path,
                                                kind: str) -> None:
    n = 1500
    db = tmp_path / "counts.sqlite"
    expected = dict(Counter(f"w{i % 7}" for i in range(n)))
    spec = tridentcount.build(str(db), n, kind)
    bundle = build_bundle(HERE, tmp_path / "tridentcount.zip").path
    conf = {"topology.workers": 2, "topology.message.timeout.secs": 6,
            "topology.max.spout.pending": 3,
            "transactional.zookeeper.root": f"/stormpy-tests/trident-{uuid.uuid4().hex[:8]}"}
    tid = cluster.client().submit(f"trident-{kind}", bundle, spec.to_doc(), conf)
    coordinator_task = compute_layout(spec, conf).component_tasks[
        "spout-tridentcount-coordinator"][0]

    def total() -> int:
        return sum(counts(db, kind).values())

    def coordinator_port() -> int | None:
        return task_port(cluster, tid, coordinator_task)

    wait_for(lambda: total() > 0, 90, "the first commit", cluster)
    killed: list[int] = []
    for round_ in range(3):
        ports = worker_pids_by_port(cluster, tid)
        target = coordinator_port() if round_ == 0 else sorted(ports)[round_ % 2]
        assert target in ports
        progress = total()
        if progress >= n:
            break
        os.kill(ports[target], signal.SIGKILL)
        killed.append(target)
        wait_for(lambda p=progress: total() > p or total() >= n, 120,
                 "a commit after the kill", cluster)
    assert killed
    wait_for(lambda: total() >= n, 180, f"{n} counted", cluster)
    kill_and_check_gone(cluster, f"trident-{kind}", tid)
    assert counts(db, kind) == expected
