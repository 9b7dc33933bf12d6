"""The transactional global count (``tests/integration/transactional_topologies/txcount.py``) with
the host of its coordinator cut off from every other host in the middle of the run: Nimbus moves
the executors, the count goes on on the other host, and after the heal it ends at exactly N with
every transaction applied once, in order (the old workers stop)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import txcount
from partition_cluster import NetnsCluster
from partition_kit import record, worker_hosts

from stormpy.bundle import build_bundle
from stormpy.topology._layout import compute_layout
from stormpy.transactional import SqliteState

pytestmark = [pytest.mark.timeout(300), pytest.mark.zookeeper, pytest.mark.cluster, pytest.mark.partitions]

TOPOLOGIES = Path(__file__).resolve().parent.parent / "integration" / "transactional_topologies"



def stored(db: Path) -> dict[str, list[list[int]] | int]:
    if not db.exists():
        return {"count": 0, "applied": []}
    state = SqliteState(db)
    try:
        value = state.get("count")
    finally:
        state.close()
    return {"count": 0, "applied": []} if value is None else value.value


def count(db: Path) -> int:
    return int(stored(db)["count"])  # type: ignore[arg-type]


def test_transactional_count_exact_across_a_host_cut(netns_cluster: Callable[..., NetnsCluster],
                                                     tmp_path: Path) -> None:
    cluster = netns_cluster(**{"supervisor.worker.shutdown.sleep.secs": 3})
    n = 1200
    db = tmp_path / "count.sqlite"
    spec = txcount.build(str(db), n)
    bundle = build_bundle(TOPOLOGIES, tmp_path / "txcount.zip").path
    conf = {"topology.workers": 2, "topology.message.timeout.secs": 6, "topology.max.spout.pending": 3,
            "transactional.zookeeper.root": f"/stormpy-pt-tx-{uuid.uuid4().hex[:8]}"}
    tid = cluster.client().submit("txcount", bundle, spec.to_doc(), conf)
    coordinator_task = compute_layout(spec, conf).component_tasks["numbers-coordinator"][0]
    cluster.wait_for(lambda: set(worker_hosts(cluster, tid)) == {"sup0", "sup1"}, 60,
                     "one worker on each supervisor host")
    cluster.wait_for(lambda: count(db) > 0, 90, "the first commit")

    def coordinator_host() -> str | None:
        a = cluster.state.assignment(tid)
        ids = {sid: cluster.supervisor_hosts[i] for i, sid in cluster.supervisor_ids().items()}
        for (start, end), (node, _port) in (a.executors.items() if a is not None else []):
            if start <= coordinator_task <= end:
                return ids.get(node)
        return None

    cut = cluster.wait_for(coordinator_host, 30, "the coordinator's host")
    other = "sup1" if cut == "sup0" else "sup0"
    cluster.net.isolate(cut)
    cut_at = time.monotonic()
    cluster.wait_for(lambda: set(worker_hosts(cluster, tid)) == {other}, 60,
                     f"Nimbus to move the executors of {cut} to {other}")
    progress = count(db)
    cluster.wait_for(lambda: count(db) > progress or count(db) >= n, 120,
                     f"a commit from {other} while {cut} is cut off")
    count_in_cut = count(db)
    cluster.net.heal_all()
    cut_secs = time.monotonic() - cut_at

    cluster.wait_for(lambda: count(db) >= n, 180, f"the count to reach {n}")
    cluster.wait_for(lambda: len(cluster.worker_processes(tid)) == 2, 60,
                     "only the two workers of the final assignment")
    cluster.client().kill("txcount", 0)
    cluster.wait_for(lambda: not cluster.worker_processes(tid), 40, "the workers to exit")
    final = stored(db)
    rows = final["applied"]
    assert isinstance(rows, list)
    assert final["count"] == n
    assert [t for t, _ in rows] == list(range(1, len(rows) + 1)), "a transaction applied twice or skipped"
    assert sum(total for _, total in rows) == n
    record("transactional count, coordinator host cut off",
           f"count={final['count']} of {n}, transactions={len(rows)} (1..{len(rows)}, none twice); "
           f"cut {cut_secs:.0f} s, count when healed {count_in_cut}")
