"""CoordinatedBolt counting in local mode (in-memory transactional store): batches complete
through every grouping, with several upstream tasks, chained batch bolts and tasks that receive
no tuple of a batch; every task finishes every batch exactly once."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from stormpy.testing import LocalCluster
from stormpy.transactional import TransactionalTopologyBuilder
from transactional_kit import (
    BackgroundCommitter,
    CountingBolt,
    DirectForwarder,
    ForgetfulBolt,
    SizedSpout,
    Splitter,
    SumCommitter,
    events,
    new_log,
)

pytestmark = pytest.mark.timeout(60)

SIZES = [7, 0, 12, 1, 30, 0, 5]


def run(builder: TransactionalTopologyBuilder, log: str, tx_id: str, batches: int,
        conf: dict[str, Any] | None = None) -> dict[str, list[int]]:
    """Run until ``batches`` transactions committed; return the task layout."""
    with LocalCluster() as cluster:
        worker = cluster.submit_topology(tx_id, {"transactional.store": "memory",
                                                 "topology.max.spout.pending": 3, **(conf or {})},
                                         builder.create_topology())
        cluster.wait_for(lambda: len(events(log, "commit")) >= batches, 30,
                         f"{batches} commits")
        cluster.wait_until_quiet(tx_id)
        assert worker.errors == {}
        layout = worker.layout.component_tasks
    return layout


def finishes(log: str, component: str) -> dict[int, dict[int, int]]:
    """txid → task → tuples counted, for one component (each task finishes a txid once)."""
    out: dict[int, dict[int, int]] = defaultdict(dict)
    for _k, comp, task, txid, _attempt, count in events(log, "finish"):
        if comp == component:
            assert task not in out[txid], f"task {task} finished txid {txid} twice"
            out[txid][task] = count
    return out


def commits(log: str) -> list[tuple[int, int]]:
    return [(txid, total) for _k, txid, _a, total in events(log, "commit")]


def test_fields_grouping_with_several_upstream_tasks_and_empty_batches() -> None:
    log = new_log()
    b = TransactionalTopologyBuilder("tx-fields", "spout", SizedSpout, 3, kwargs={"sizes": SIZES})
    b.set_bolt("count", CountingBolt, 4, kwargs={"log": log}).fields_grouping("spout", ["n"])
    b.set_bolt("sum", SumCommitter, 2, kwargs={"log": log}).shuffle_grouping("count")
    layout = run(b, log, "tx-fields", len(SIZES))
    per_tx = finishes(log, "count")
    for txid, size in enumerate(SIZES, 1):
        assert set(per_tx[txid]) == set(layout["count"])  # every task, even with no tuple
        assert sum(per_tx[txid].values()) == size
    # two committer tasks: each commits its share, the shares add up to the batch
    totals: dict[int, int] = defaultdict(int)
    for txid, total in commits(log):
        totals[txid] += total
    assert dict(totals) == {t: s for t, s in enumerate(SIZES, 1)}


def test_all_grouping_each_task_sees_the_whole_batch() -> None:
    log = new_log()
    b = TransactionalTopologyBuilder("tx-all", "spout", SizedSpout, 2, kwargs={"sizes": SIZES})
    b.set_bolt("count", CountingBolt, 3, kwargs={"log": log}).all_grouping("spout")
    b.set_bolt("sum", SumCommitter, kwargs={"log": log}).global_grouping("count")
    run(b, log, "tx-all", len(SIZES))
    for txid, size in enumerate(SIZES, 1):
        assert list(finishes(log, "count")[txid].values()) == [size] * 3
    assert commits(log) == [(t, 3 * s) for t, s in enumerate(SIZES, 1)]


def test_direct_grouping_and_global_grouping_leave_tasks_without_tuples() -> None:
    log = new_log()
    b = TransactionalTopologyBuilder("tx-direct", "spout", SizedSpout, 2, kwargs={"sizes": SIZES})
    b.set_bolt("forward", DirectForwarder, 2, kwargs={"target": "count"}).global_grouping("spout")
    b.set_bolt("count", CountingBolt, 3, kwargs={"log": log}).direct_grouping("forward", "direct")
    b.set_bolt("sum", SumCommitter, kwargs={"log": log}).global_grouping("count")
    layout = run(b, log, "tx-direct", len(SIZES))
    tasks = layout["count"]
    for txid, size in enumerate(SIZES, 1):
        got = finishes(log, "count")[txid]
        assert got == {t: sum(1 for i in range(size) if i % 3 == j) for j, t in enumerate(tasks)}
    assert commits(log) == [(t, s) for t, s in enumerate(SIZES, 1)]


def test_two_chained_batch_bolts_and_a_basic_bolt() -> None:
    log = new_log()
    b = TransactionalTopologyBuilder("tx-chain", "spout", SizedSpout, 3, kwargs={"sizes": SIZES})
    b.set_bolt("split", Splitter, 2).shuffle_grouping("spout")
    b.set_bolt("first", CountingBolt, 3, kwargs={"log": log}).fields_grouping("split", ["value"])
    b.set_bolt("second", CountingBolt, 2, kwargs={"log": log}).shuffle_grouping("first")
    b.set_bolt("sum", SumCommitter, kwargs={"log": log, "count_tuples": True}) \
        .global_grouping("second")
    run(b, log, "tx-chain", len(SIZES))
    first, second = finishes(log, "first"), finishes(log, "second")
    for txid, size in enumerate(SIZES, 1):
        assert sum(first[txid].values()) == size
        assert sum(second[txid].values()) == 3  # one [id, count] per task of "first"
    assert commits(log) == [(t, 2) for t in range(1, len(SIZES) + 1)]


def test_commits_are_in_txid_order_without_gap_or_repeat() -> None:
    log = new_log()
    sizes = [3] * 25
    b = TransactionalTopologyBuilder("tx-order", "spout", SizedSpout, 2, kwargs={"sizes": sizes})
    b.set_bolt("count", CountingBolt, 3, kwargs={"log": log}).shuffle_grouping("spout")
    b.set_bolt("sum", SumCommitter, kwargs={"log": log}).global_grouping("count")
    run(b, log, "tx-order", len(sizes), {"topology.max.spout.pending": 5})
    assert [t for t, _ in commits(log)] == list(range(1, len(sizes) + 1))


def test_emitting_without_the_attempt_first_is_a_clear_error() -> None:
    log = new_log()
    b = TransactionalTopologyBuilder("tx-bad", "spout", SizedSpout, 1, kwargs={"sizes": [3]})
    b.set_bolt("bad", ForgetfulBolt).shuffle_grouping("spout")
    b.set_bolt("count", CountingBolt, kwargs={"log": log}).shuffle_grouping("bad")
    with LocalCluster() as cluster, pytest.raises(Exception, match="must be the batch's "
                                                  "TransactionAttempt"):
        cluster.submit_topology("tx-bad", {"transactional.store": "memory"},
                                b.create_topology())
        cluster.wait_for(lambda: False, 20, "the worker to fail")


def test_public_names() -> None:
    import stormpy.transactional as tx
    assert sorted(tx.__all__) == sorted([
        "BatchBolt", "BatchOutputCollector", "Committer", "MemoryTransactionalSpout",
        "OpaquePartitionedTransactionalSpout", "OpaqueValue", "PartitionedTransactionalSpout",
        "SqliteState", "StoreUnavailable", "TRANSACTIONAL_CONFIG", "TransactionAttempt",
        "TransactionalSpout", "TransactionalState", "TransactionalTopologyBuilder", "TransactionalValue",
        "ZkState"])
    for name in tx.__all__:
        assert getattr(tx, name) is not None


def test_batches_complete_across_workers_with_serialised_tuples() -> None:
    """Two in-process workers: attempts and counts cross between them as msgpack."""
    log = new_log()
    b = TransactionalTopologyBuilder("tx-2w", "spout", SizedSpout, 3, kwargs={"sizes": SIZES})
    b.set_bolt("count", CountingBolt, 3, kwargs={"log": log}).fields_grouping("spout", ["n"])
    b.set_bolt("second", CountingBolt, 2, kwargs={"log": log}).all_grouping("count")
    b.set_bolt("sum", SumCommitter, kwargs={"log": log, "count_tuples": True}) \
        .global_grouping("second")
    with LocalCluster() as cluster:
        cluster.submit_topology("tx-2w", {"transactional.store": "memory",
                                          "topology.max.spout.pending": 3},
                                b.create_topology(), workers=2)
        cluster.wait_for(lambda: len(events(log, "commit")) >= len(SIZES), 30, "every commit")
        cluster.wait_until_quiet("tx-2w")
        assert all(w.errors == {} for w in cluster.workers_of("tx-2w"))
    for txid, size in enumerate(SIZES, 1):
        assert sum(finishes(log, "count")[txid].values()) == size
        assert list(finishes(log, "second")[txid].values()) == [3, 3]
    assert commits(log) == [(t, 2) for t in range(1, len(SIZES) + 1)]


def test_commit_finished_in_background_keeps_order_and_replays_failures() -> None:
    log = new_log()
    sizes = [3, 1, 4, 1, 5, 9, 2]
    b = TransactionalTopologyBuilder("tx-bg", "spout", SizedSpout, 2, kwargs={"sizes": sizes})
    b.set_bolt("count", CountingBolt, 2, kwargs={"log": log}).shuffle_grouping("spout")
    b.set_bolt("sum", BackgroundCommitter, kwargs={"log": log, "fail_txids": [3]}) \
        .global_grouping("count")
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("tx-bg", {"transactional.store": "memory",
                                                   "topology.max.spout.pending": 3},
                                         b.create_topology())
        cluster.wait_for(lambda: len(events(log, "commit")) >= len(sizes), 30, "every commit")
        cluster.wait_until_quiet("tx-bg")
        errors = [e["error"] for e in worker.errors.get("sum", [])]
    assert commits(log) == [(t, s) for t, s in enumerate(sizes, 1)]
    (broken,) = events(log, "commit-error")
    assert any(f"transaction 3 attempt {broken[2]}" in e for e in errors)
