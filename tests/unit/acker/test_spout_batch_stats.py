"""A spout task's bookkeeping for batch roots and timeouts: pending count, acked/failed and the
complete latency counted per message id (a batch's latency once per id), accumulating over
replies and expiries, for batches and single tuples alike. Simulated time for the timeouts; the
acker reply is driven directly with a known emit time."""

from __future__ import annotations

from time import perf_counter
from typing import Any

from stormpy import Bolt, Spout, TopologyBuilder, Tuple
from stormpy.acker.streams import ACK_ACK, ACK_FAIL
from stormpy.testing import LocalCluster
from stormpy.topology._columns import ColumnBatch

TIMEOUT = {"topology.message.timeout.secs": 10}
LOG: dict[str, list[Any]] = {"acked": [], "failed": []}


class OnceSpout(Spout):
    """On its first call emits three single tracked tuples and two tracked batches of four;
    records acks and fails, replays nothing."""

    outputs = ["n"]

    def open(self, conf: Any, context: Any) -> None:
        self.done = False

    def next_tuple(self) -> None:
        if self.done:
            return
        self.done = True
        for i in range(3):
            self.emit([i], msg_id=("single", i))
        for b in range(2):
            self.emit_batch([[b * 10 + i] for i in range(4)], [("batch", b, i) for i in range(4)])

    def ack(self, msg_id: Any) -> None:
        LOG["acked"].append(msg_id)

    def fail(self, msg_id: Any) -> None:
        LOG["failed"].append(msg_id)


class Keep(Bolt):
    """Never acks anything (everything times out)."""

    def execute(self, tup: Tuple) -> None:
        LOG.setdefault("kept", []).append(tup.values[0])

    def execute_columns(self, batch: ColumnBatch) -> None:
        LOG.setdefault("kept", []).extend(batch.column(0))


def _spout_task(worker: Any) -> Any:
    return next(r for r in worker.tasks.values() if r.component_id == "spout")


def _topology() -> Any:
    b = TopologyBuilder()
    b.set_spout("spout", OnceSpout)
    b.set_bolt("keep", Keep).shuffle_grouping("spout")
    return b.create_topology()


def setup_function() -> None:
    LOG.clear()
    LOG.update(acked=[], failed=[])


def test_expired_batches_and_single_tuples_free_exactly_their_records_and_count_each_fail() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        worker = cluster.submit_topology("t", TIMEOUT, _topology())
        cluster.wait_for(lambda: len(LOG.get("kept", ())) == 11, 10, "11 tuples kept")
        cluster.wait_until_quiet()
        task = _spout_task(worker)
        before = task.n_pending, len(task.pending), task.stats.failed
        cluster.advance_time(TIMEOUT["topology.message.timeout.secs"] * 2 + 1)
        cluster.wait_for(lambda: len(LOG["failed"]) == 11, 10, "every record failed")
        cluster.wait_until_quiet()
        after = task.n_pending, len(task.pending), task.stats.failed
    assert before == (11, 5, 0)  # 3 single roots + 2 batch roots, 11 records pending
    assert after == (0, 0, 11)  # each record freed once and counted once
    assert sorted(LOG["failed"], key=str) == sorted(
        [("single", i) for i in range(3)] + [("batch", b, i) for b in range(2) for i in range(4)],
        key=str)
    assert LOG["acked"] == []


def test_acker_replies_about_batches_count_every_id_and_its_latency() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        worker = cluster.submit_topology("t", {**TIMEOUT, "topology.acker.executors": 1},
                                         _topology())
        cluster.wait_for(lambda: len(LOG.get("kept", ())) == 11, 10, "11 tuples kept")
        cluster.wait_until_quiet()
        task = _spout_task(worker)
        stats = task.stats
        base = (task.n_pending, stats.acked, stats.failed, stats.latency_sum, stats.latency_count)
        # driven directly (the loop is idle): a batch of 4 emitted 1 s ago, then 2 emitted 2 s ago
        task._batch_done(ACK_ACK, ["a0", "a1", "a2", "a3"], perf_counter() - 1.0)
        task._batch_done(ACK_ACK, ["b0", "b1"], perf_counter() - 2.0)
        task._batch_done(ACK_FAIL, ["c0", "c1", "c2"], perf_counter())
        task._batch_done(ACK_FAIL, ["d0"], perf_counter())
        got = (task.n_pending, stats.acked, stats.failed, stats.latency_sum, stats.latency_count)
    assert base[:3] == (11, 0, 0) and base[3:] == (0.0, 0)
    pending, acked, failed, latency_sum, latency_count = got
    assert pending == 11 - 10 and acked == 6 and failed == 4 and latency_count == 6
    assert 8.0 <= latency_sum < 9.0  # 4 ids x 1 s + 2 ids x 2 s: once per id, summed
    assert LOG["acked"] == ["a0", "a1", "a2", "a3", "b0", "b1"]
    assert LOG["failed"] == ["c0", "c1", "c2", "d0"]
