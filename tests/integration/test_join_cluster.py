"""A windowed JoinBolt on real processes (Nimbus, supervisors, workers on ZooKeeper) feeding a
sink slower than its output: the worker of a join task killed with SIGKILL mid-stream. The
guarantee of docs/joins.md ("Acking and failures"), record by record: every acked record has
its row written (a row is anchored to both halves of its record, so a row lost with the killed
worker, in its join's windows or queued for a sink task there, holds its record un-acked until
it times out and the spout replays it); its two halves reach the join task together, so they
share a window; and a record yields more rows than its windows give (two for a 1 s window
sliding by 0.5 s) only when it was replayed: a window joins every copy of one half it holds
with every copy of the other, so r replays allow up to 2 * (1 + r) ** 2 rows."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import joinpairs
import pytest
from cluster_kit import attach_cluster_logs, cluster_fixture  # noqa: F401 - fixtures
from killed_worker_kit import TOPOLOGIES, failed_ids, kill_a_worker_mid_stream, query

from stormpy.bundle import build_bundle
from stormpy.testing._cluster import ProcessCluster
from stormpy.topology._layout import compute_layout

pytestmark = [pytest.mark.timeout(300), pytest.mark.zookeeper, pytest.mark.cluster]

WINDOWS_PER_PAIR = 2  # a 1 s window sliding by 0.5 s holds a pair of halves in one or two
MESSAGE_TIMEOUT_SECS = 6
#: a record lost by a kill fails within two message timeouts (the spout's pending map rotates
#: once per timeout), plus slack for a loaded machine
FAIL_WITHIN = 2 * MESSAGE_TIMEOUT_SECS + 6


def test_kill9_join_worker_loses_no_row(cluster: ProcessCluster, tmp_path: Path) -> None:
    # about 35 s at the sink: room for two more kills when one lost nothing (a loaded machine can
    # stall the target worker, which is then killed holding nothing), each judged within
    # FAIL_WITHIN of its kill
    n = 6000
    spout_db, sink_db = tmp_path / "spout.sqlite", tmp_path / "sink.sqlite"
    # a sink slower than the join's output: rows queue up at it, also on an idle machine, so
    # killing its worker loses rows whose inputs already left their windows
    spec = joinpairs.build(str(spout_db), str(sink_db), n, row_secs=0.003)
    bundle = build_bundle(TOPOLOGIES, tmp_path / "joinpairs.zip").path
    conf = {"topology.workers": 2, "topology.message.timeout.secs": MESSAGE_TIMEOUT_SECS,
            "topology.max.spout.pending": 300}
    tid = cluster.client().submit("joinpairs", bundle, spec.to_doc(), conf)
    layout = compute_layout(spec, conf)
    kill_a_worker_mid_stream(cluster, "joinpairs", tid, tasks=layout.component_tasks["join"],
                             spout_task=layout.component_tasks["records"][0], db=spout_db, n=n,
                             first=100, what="records", until_a_fail=True,
                             fail_within=FAIL_WITHIN)

    rows = query(sink_db, "SELECT id, name, amount FROM rows")
    assert all(name == f"user{i}" and amount == i * 10 for i, name, amount in rows), \
        "a row joins halves of different records"
    per_record = Counter(r[0] for r in rows)
    fails = failed_ids(spout_db)
    lost = [i for i in range(n) if per_record[i] == 0]
    assert not lost, (f"records acked without a joined row: {lost[:20]} ({len(lost)}; "
                      f"{sum(1 for i in lost if fails[i])} of them replayed)")
    # each copy of a record's users half (the first emit and one per replay) joins each copy of
    # its orders half that shares a window with it (a replay can meet a late original there)
    extra = {i: (c, fails[i]) for i, c in per_record.items()
             if c > WINDOWS_PER_PAIR * (1 + fails[i]) ** 2}
    assert not extra, f"more rows than windows and replays allow (rows, replays): {extra}"
    assert sum(fails.values()) > 0, "the kill made no record fail: it tested nothing"
    print(f"join kill -9: {n} records, {len(rows)} rows, {sum(fails.values())} replays, "
          f"{sum(1 for i in per_record if fails[i])} records replayed")
