"""A windowed JoinBolt on real processes (Nimbus, supervisors, workers on ZooKeeper): the worker
of a join task killed with SIGKILL mid-stream. Every record is counted: each one's two halves
join in at least one window (no output lost: the lost halves time out, the spout replays the
record and both halves are joined again), and a record yields more rows than its windows give
(two for a 1 s window sliding by 0.5 s) only when it was replayed."""

from __future__ import annotations

import os
import signal
import sqlite3
from collections import Counter
from pathlib import Path

import joinpairs
import pytest
from cluster_kit import (  # noqa: F401 - fixtures
    attach_cluster_logs,
    cluster_fixture,
    kill_and_check_gone,
    wait_for,
)

from stormpy.bundle import build_bundle
from stormpy.testing.cluster import ProcessCluster
from stormpy.topology.layout import compute_layout

HERE = Path(__file__).resolve().parent / "join_topologies"


pytestmark = [pytest.mark.timeout(300), pytest.mark.zookeeper, pytest.mark.cluster]

WINDOWS_PER_RECORD = 2  # a 1 s window sliding by 0.5 s holds a pair in one or two windows


def query(db: Path, sql: str) -> list[tuple[int, ...]]:
    if not db.exists():
        return []
    conn = sqlite3.connect(db, timeout=30)
    try:
        return list(conn.execute(sql))
    except sqlite3.OperationalError:  # table not created yet
        return []
    finally:
        conn.close()


def acked(db: Path) -> int:
    rows = query(db, "SELECT count(*) FROM acked")
    return int(rows[0][0]) if rows else 0


def test_kill9_join_worker_loses_no_row(cluster: ProcessCluster, tmp_path: Path) -> None:
    n = 1500
    spout_db, sink_db = tmp_path / "spout.sqlite", tmp_path / "sink.sqlite"
    spec = joinpairs.build(str(spout_db), str(sink_db), n)
    bundle = build_bundle(HERE, tmp_path / "joinpairs.zip").path
    conf = {"topology.workers": 2, "topology.message.timeout.secs": 6,
            "topology.max.spout.pending": 300}
    tid = cluster.client().submit("joinpairs", bundle, spec.to_doc(), conf)
    layout = compute_layout(spec, conf)
    join_tasks = layout.component_tasks["join"]
    spout_task = layout.component_tasks["records"][0]

    def port_of(task: int) -> int | None:
        a = cluster.state.assignment(tid)
        if a is None:
            return None
        for (start, end), (_node, port) in a.executors.items():
            if start <= task <= end:
                return int(port)
        return None

    wait_for(lambda: acked(spout_db) > 100, 90, "the first joined records", cluster)
    workers = wait_for(lambda: cluster.worker_processes(tid)
                       if len(cluster.worker_processes(tid)) == 2 else None,
                       60, "two worker processes", cluster)
    ports = {int(argv[argv.index("--port") + 1]): pid for pid, argv in workers}
    candidates = [p for p in {port_of(t) for t in join_tasks} if p != port_of(spout_task)]
    assert candidates, "every join task shares the spout's worker"
    progress = acked(spout_db)
    assert progress < n, "the stream ended before the kill"
    os.kill(ports[candidates[0]], signal.SIGKILL)
    wait_for(lambda: acked(spout_db) > progress + 100 or acked(spout_db) >= n, 120,
             "progress after the kill", cluster)
    wait_for(lambda: acked(spout_db) >= n, 180, f"all {n} records acked", cluster)
    kill_and_check_gone(cluster, "joinpairs", tid)

    rows = query(sink_db, "SELECT id, name, amount FROM rows")
    assert all(name == f"user{i}" and amount == i * 10 for i, name, amount in rows), \
        "a row joins halves of different records"
    per_record = Counter(r[0] for r in rows)
    lost = [i for i in range(n) if per_record[i] == 0]
    assert not lost, f"records acked without a joined row: {lost[:20]} ({len(lost)})"
    fails = Counter(r[0] for r in query(spout_db, "SELECT id FROM failed"))
    extra = {i: c for i, c in per_record.items() if c > WINDOWS_PER_RECORD * (1 + fails[i])}
    assert not extra, f"more rows than windows and replays allow: {extra}"
    assert sum(fails.values()) > 0, "the kill made no record fail: it tested nothing"
    print(f"join kill -9: {n} records, {len(rows)} rows, {sum(fails.values())} replays, "
          f"{sum(1 for i in per_record if fails[i])} records replayed")
