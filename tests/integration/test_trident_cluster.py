"""Exactly-once Trident state on real processes: the Trident count on a Nimbus + supervisors
cluster, worker processes killed with SIGKILL in turn (the coordinator's first), ends with exact
per-word counts in SQLite, for transactional and opaque state, and in Redis for opaque state
(three kills)."""

from __future__ import annotations

import os
import signal
import uuid
from collections import Counter
from collections.abc import Callable
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
from stormpy.local._redis_server import RedisServer
from stormpy.state import SqliteStore
from stormpy.state._redis_store import open_redis_store, redis_config
from stormpy.testing._cluster import ProcessCluster
from stormpy.topology._layout import compute_layout
from stormpy.trident import OPAQUE, TRANSACTIONAL, MapState

HERE = Path(__file__).resolve().parent / "trident_topologies"

pytestmark = [pytest.mark.timeout(300), pytest.mark.zookeeper, pytest.mark.cluster]


def counts(db: Path, kind: str) -> dict[str, int]:
    if not db.exists():
        return {}
    return read_counts(MapState(SqliteStore(db, "trident_state", segments=("counts",)), kind))


def redis_counts(config: dict[str, object], kind: str) -> dict[str, int]:
    return read_counts(MapState(open_redis_store(redis_config(config), "counts"), kind))


def read_counts(state: MapState) -> dict[str, int]:
    try:
        return {key[0]: value for key, value in state.items()}
    finally:
        state.close()


def kill_workers_until_counted(cluster: ProcessCluster, tid: str, coordinator_task: int,
                               total: Callable[[], int], n: int, kills: int) -> list[int]:
    """SIGKILL a worker of ``tid`` ``kills`` times (the coordinator's first, then the two in
    turn), each after a commit since the previous one, while fewer than ``n`` are counted; then
    wait until ``n`` are; return the ports killed."""

    wait_for(lambda: total() > 0, 90, "the first commit", cluster)
    killed: list[int] = []
    for round_ in range(kills):
        ports = worker_pids_by_port(cluster, tid)
        target = task_port(cluster, tid, coordinator_task) if round_ == 0 else sorted(ports)[round_ % 2]
        assert target in ports
        progress = total()
        if progress >= n:
            break
        os.kill(ports[target], signal.SIGKILL)
        killed.append(target)
        wait_for(lambda p=progress: total() > p or total() >= n, 120,
                 "a commit after the kill", cluster)
    wait_for(lambda: total() >= n, 180, f"{n} counted", cluster)
    return killed


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
    killed = kill_workers_until_counted(cluster, tid, coordinator_task,
                                        lambda: sum(counts(db, kind).values()), n, 3)
    assert killed
    kill_and_check_gone(cluster, f"trident-{kind}", tid)
    assert counts(db, kind) == expected


def test_kill9_workers_trident_redis_opaque_counts_are_exact(
        cluster: ProcessCluster, tmp_path: Path, redis_server: RedisServer) -> None:
    """The Trident count on Redis opaque state (Storm's ``RedisMapState.opaque``) through three
    worker SIGKILLs: the committed counts are exact."""
    n = 3000
    config = redis_server.provider_config(f"trident-{uuid.uuid4().hex[:8]}")
    expected = dict(Counter(f"w{i % 7}" for i in range(n)))
    spec = tridentcount.build("", n, OPAQUE, redis=config)
    bundle = build_bundle(HERE, tmp_path / "tridentcount.zip").path
    conf = {"topology.workers": 2, "topology.message.timeout.secs": 6,
            "topology.max.spout.pending": 3,
            "transactional.zookeeper.root": f"/stormpy-tests/trident-{uuid.uuid4().hex[:8]}"}
    tid = cluster.client().submit("trident-redis", bundle, spec.to_doc(), conf)
    coordinator_task = compute_layout(spec, conf).component_tasks[
        "spout-tridentcount-coordinator"][0]
    killed = kill_workers_until_counted(cluster, tid, coordinator_task,
                                        lambda: sum(redis_counts(config, OPAQUE).values()), n, 3)
    assert len(killed) == 3, f"the count ended after {len(killed)} kills: raise n"
    kill_and_check_gone(cluster, "trident-redis", tid)
    assert redis_counts(config, OPAQUE) == expected
