"""Exactly-once on real processes: the transactional global count on a Nimbus + supervisors
cluster, with worker processes killed with SIGKILL one after the other while it runs (the
coordinator's worker first), ends at exactly N in SQLite."""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest
import txcount
from cluster_kit import (  # noqa: F401 - fixtures
    attach_cluster_logs,
    cluster_fixture,
    kill_and_check_gone,
    task_port,
    wait_for,
    worker_pids_by_port,
)

from stormpy.bundle import build_bundle
from stormpy.testing._cluster import ProcessCluster
from stormpy.topology._layout import compute_layout
from stormpy.transactional import SqliteState

HERE = Path(__file__).resolve().parent / "transactional_topologies"


pytestmark = [pytest.mark.timeout(300), pytest.mark.zookeeper, pytest.mark.cluster]


def stored(db: Path) -> dict[str, Any]:
    if not db.exists():
        return {"count": 0, "applied": []}
    state = SqliteState(db)
    try:
        value = state.get("count")
    finally:
        state.close()
    return {"count": 0, "applied": []} if value is None else value.value


def count(db: Path) -> int:
    return int(stored(db)["count"])


def test_kill9_workers_global_count_is_exact(cluster: ProcessCluster, tmp_path: Path) -> None:
    n = 2000
    db = tmp_path / "count.sqlite"
    spec = txcount.build(str(db), n)
    bundle = build_bundle(HERE, tmp_path / "txcount.zip").path
    conf = {"topology.workers": 2, "topology.message.timeout.secs": 6,
            "topology.max.spout.pending": 3,
            "transactional.zookeeper.root": f"/stormpy-tests/tx-{uuid.uuid4().hex[:8]}"}
    tid = cluster.client().submit("txcount", bundle, spec.to_doc(), conf)
    coordinator_task = compute_layout(spec, conf).component_tasks["numbers-coordinator"][0]

    def coordinator_port() -> int | None:
        return task_port(cluster, tid, coordinator_task)

    wait_for(lambda: count(db) > 0, 90, "the first commit", cluster)
    killed: list[int] = []
    for round_ in range(4):
        ports = worker_pids_by_port(cluster, tid)
        target = coordinator_port() if round_ == 0 else sorted(ports)[round_ % 2]
        assert target in ports
        progress = count(db)
        if progress >= n:
            break
        os.kill(ports[target], signal.SIGKILL)
        killed.append(target)
        # the next kill only once the topology committed again after this one
        wait_for(lambda p=progress: count(db) > p or count(db) >= n, 120,
                 "a commit after the kill", cluster)
    assert killed and killed[0] == coordinator_port()
    wait_for(lambda: count(db) >= n, 180, f"the count to reach {n}", cluster)
    kill_and_check_gone(cluster, "txcount", tid)
    assert count(db) == n
    rows = stored(db)["applied"]
    assert [t for t, _ in rows] == list(range(1, len(rows) + 1))  # no gap, no repeat
    assert sum(total for _, total in rows) == n
