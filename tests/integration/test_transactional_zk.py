"""Transactional topologies in local mode with their coordinator and emitter state in a real
ZooKeeper: exact counts in SQLite, ordered commits, replays after failures, a restart of the whole
topology and a ZooKeeper outage."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import transactional_global_count as global_count
from parts_kit import unavailable
from stormpy.cluster.zkserver import INSTALL_HINT, ZooKeeperNotFound, ZooKeeperServer
from stormpy.testing import LocalCluster
from stormpy.transactional import SqliteState, TransactionalTopologyBuilder
from transactional_kit import (
    CountingBolt,
    FlakyOpaqueSpout,
    SizedSpout,
    SumCommitter,
    events,
    new_log,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(120)]


def zk_conf(zookeeper: ZooKeeperServer, zk_root: str, **extra: Any) -> dict[str, Any]:
    return {"transactional.zookeeper.servers": [zookeeper.connect_string],
            "transactional.zookeeper.root": zk_root, "topology.max.spout.pending": 3,
            "topology.message.timeout.secs": 10, **extra}


def stored(db: Path, key: str = "total") -> int | None:
    state = SqliteState(db)
    try:
        value = state.get(key)
    finally:
        state.close()
    return None if value is None else value.value


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "state.sqlite"


def test_global_count_example_ends_at_exactly_n(zookeeper: ZooKeeperServer, zk_root: str,
                                                db: Path) -> None:
    n = 500
    spec = global_count.build(n, str(db), take_per_batch=7).create_topology()
    with LocalCluster() as cluster:
        cluster.submit_topology("global-count", zk_conf(zookeeper, zk_root), spec)
        cluster.wait_for(lambda: stored(db, global_count.GLOBAL_COUNT_KEY) == n, 60,
                         f"the global count to reach {n}")
        cluster.wait_until_quiet("global-count")
        assert cluster.worker("global-count").errors == {}
    assert stored(db, global_count.GLOBAL_COUNT_KEY) == n


def sized_topology(log: str, db: Path, sizes: list[int], *, fail_count: list[int] | None = None,
                   fail_commit: list[int] | None = None) -> Any:
    b = TransactionalTopologyBuilder("sized", "spout", SizedSpout, 2, kwargs={"sizes": sizes})
    b.set_bolt("count", CountingBolt, 3, kwargs={"log": log, "fail_txids": fail_count or []}) \
        .shuffle_grouping("spout")
    b.set_bolt("sum", SumCommitter, kwargs={"log": log, "database": str(db),
                                            "fail_txids": fail_commit or []}) \
        .global_grouping("count")
    return b.create_topology()


def run_sized(zookeeper: ZooKeeperServer, zk_root: str, spec: Any, db: Path, total: int,
              conf: dict[str, Any] | None = None) -> dict[str, Any]:
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("sized", {**zk_conf(zookeeper, zk_root), **(conf or {})},
                                         spec)
        cluster.wait_for(lambda: stored(db) == total, 60, f"the total to reach {total}")
        cluster.wait_until_quiet("sized")
        return dict(worker.errors)


def test_failed_batch_replays_with_same_txid_and_new_attempt(zookeeper: ZooKeeperServer,
                                                             zk_root: str, db: Path) -> None:
    log = new_log()
    sizes = [5, 4, 6, 3, 8, 2, 7, 1]
    spec = sized_topology(log, db, sizes, fail_count=[3])
    errors = run_sized(zookeeper, zk_root, spec, db, sum(sizes))
    assert errors == {}  # FailedException fails the batch without an error report
    failed = events(log, "failed")
    assert {e[1] for e in failed} == {3}
    commits = [(e[1], e[2]) for e in events(log, "commit")]
    assert [t for t, _a in commits] == list(range(1, len(sizes) + 1))
    failed_attempts = {e[2] for e in failed}
    assert dict(commits)[3] not in failed_attempts  # committed by a later attempt of txid 3
    assert [e[1] for e in events(log, "applied")] == list(range(1, len(sizes) + 1))


def test_committer_raising_replays_the_commit_and_reports_the_error(
        zookeeper: ZooKeeperServer, zk_root: str, db: Path) -> None:
    log = new_log()
    sizes = [5, 4, 6, 3, 8, 2]
    spec = sized_topology(log, db, sizes, fail_commit=[2])
    errors = run_sized(zookeeper, zk_root, spec, db, sum(sizes))
    (broken,) = events(log, "commit-error")
    texts = [e["error"] for e in errors["sum"]]
    assert any(f"transaction 2 attempt {broken[2]}" in t and "broke on purpose" in t
               for t in texts)
    commits = [(e[1], e[2]) for e in events(log, "commit")]
    assert [t for t, _a in commits] == list(range(1, len(sizes) + 1))  # nothing overtook 2
    assert dict(commits)[2] != broken[2]
    # the broken attempt had stored its update: the replay found the txid and skipped it
    assert [e[1] for e in events(log, "applied")] == list(range(1, len(sizes) + 1))


def test_opaque_spout_whose_replays_differ_still_counts_exactly(zookeeper: ZooKeeperServer,
                                                                zk_root: str, db: Path) -> None:
    log = new_log()
    data = [list(range(p * 100, p * 100 + 40)) for p in range(3)]
    b = TransactionalTopologyBuilder("opaque", "spout", FlakyOpaqueSpout, 2, kwargs={
        "data": data, "take": 6, "log": log, "batches": 30})
    b.set_bolt("count", CountingBolt, 2, kwargs={"log": log, "fail_txids": [2, 5]}) \
        .shuffle_grouping("spout")
    b.set_bolt("sum", SumCommitter, kwargs={"log": log, "database": str(db), "opaque": True,
                                            "fail_txids": [3, 4], "count_tuples": False}) \
        .global_grouping("count")
    total = sum(len(p) for p in data)
    with LocalCluster() as cluster:
        cluster.submit_topology("opaque", zk_conf(zookeeper, zk_root), b.create_topology())
        cluster.wait_for(lambda: stored(db) == total, 60, f"the opaque total to reach {total}")
        cluster.wait_until_quiet("opaque")
    # replays of 2..5 emitted other tuples than their first attempts, yet the count is exact
    assert stored(db) == total
    assert {e[1] for e in events(log, "commit-error")} == {3, 4}


def test_restarted_topology_continues_exactly_where_it_stopped(zookeeper: ZooKeeperServer,
                                                               zk_root: str, db: Path) -> None:
    n = 900
    conf = zk_conf(zookeeper, zk_root)
    spec = global_count.build(n, str(db), take_per_batch=3).create_topology()
    key = global_count.GLOBAL_COUNT_KEY
    with LocalCluster() as cluster:
        cluster.submit_topology("gc", conf, spec)
        cluster.wait_for(lambda: (stored(db, key) or 0) >= 90, 60, "some batches to commit")
        cluster.kill_topology("gc")  # stops mid-flight
    assert (stored(db, key) or 0) < n
    with LocalCluster() as cluster:
        cluster.submit_topology("gc", conf, spec)
        cluster.wait_for(lambda: stored(db, key) == n, 90, f"the count to reach {n}")
        cluster.wait_until_quiet("gc")
    assert stored(db, key) == n


def test_zookeeper_outage_pauses_and_resumes_without_gap_or_repeat(tmp_path: Path,
                                                                   db: Path) -> None:
    log = new_log()
    sizes = [4] * 60
    data_dir = tmp_path / "zk"
    server = ZooKeeperServer(heap_mb=128, data_dir=data_dir)
    try:
        server.start()
    except ZooKeeperNotFound as exc:  # the shared fixture's policy: a failure in CI
        unavailable("ZooKeeper", str(exc), INSTALL_HINT)
    port = server.port
    try:
        spec = sized_topology(log, db, sizes)
        with LocalCluster() as cluster:
            cluster.submit_topology("sized", zk_conf(server, "/tx-outage"), spec)
            cluster.wait_for(lambda: len(events(log, "applied")) >= 5, 60, "5 commits")
            server.stop()
            at_stop = len(events(log, "applied"))
            server = ZooKeeperServer(port, heap_mb=128, data_dir=data_dir)
            server.start()
            cluster.wait_for(lambda: stored(db) == sum(sizes), 90, "the total after the outage")
            cluster.wait_until_quiet("sized")
    finally:
        server.stop()
    assert [e[1] for e in events(log, "applied")] == list(range(1, len(sizes) + 1))
    assert at_stop < len(sizes)  # the outage happened mid-run
