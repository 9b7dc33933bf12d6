"""A columnar bolt's collector methods take batches wherever they take tuples: ``ack_many`` of
batches and tuples, ``reset_timeout``, ``emit_direct`` and ``emit_many`` on a stream with other
subscribers anchored to batches (lists of anchors included); bad anchors are refused."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy import Bolt, ColumnBatch, Stream, TopologyBuilder, Tuple
from stormpy.testing import FeederSpout, LocalCluster
from stormpy.worker import Worker, WorkerConfig

TIMEOUT = {"topology.message.timeout.secs": 10}
#: words failed the first time the per-tuple bolt sees them
FAIL_ONCE: set[str] = set()
DIRECT: list[str] = []


class Split(Bolt):
    outputs = ["word"]

    def execute(self, tup: Tuple) -> None:
        self.emit_many([[w] for w in tup.values[0].split()], tup)
        self.ack(tup)


class Fanout(Bolt):
    """Columnar: re-emits its batch's words on "plain" (also taken by a per-tuple bolt) with
    anchors [batch] and each to "direct" anchored to the batch; resets the timeout; acks with
    ack_many."""

    @classmethod
    def declare_outputs(cls, kwargs: Any) -> dict[str, Stream]:
        return {"plain": Stream(["word"], name="plain"),
                "direct": Stream(["word"], name="direct", direct=True)}

    def prepare(self, conf: Any, context: Any) -> None:
        self.direct_task = context.tasks_of("direct_sink")[0]

    def execute_columns(self, batch: ColumnBatch) -> None:
        self.reset_timeout(batch)
        words = batch.column(0)
        self.emit_many([[w] for w in words], [batch], stream="plain")
        for w in words:
            self.emit_direct(self.direct_task, [w], batch, stream="direct")
        self.ack_many([batch])


class PerTuple(Bolt):
    def execute(self, tup: Tuple) -> None:
        if tup.values[0] in FAIL_ONCE:
            FAIL_ONCE.discard(tup.values[0])
            self.fail(tup)
        else:
            self.ack(tup)


class DirectSink(Bolt):
    def execute(self, tup: Tuple) -> None:
        DIRECT.append(tup.values[0])
        self.ack(tup)


def _topology(feeder: FeederSpout) -> Any:
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("split", Split).shuffle_grouping("feeder")
    b.set_bolt("fanout", Fanout).shuffle_grouping("split")
    b.set_bolt("plain", PerTuple).shuffle_grouping("fanout", "plain")
    b.set_bolt("direct_sink", DirectSink).direct_grouping("fanout", "direct")
    return b.create_topology()


def test_batches_anchor_tuples_on_other_streams_and_their_failure_fails_the_root() -> None:
    FAIL_ONCE.clear()
    DIRECT.clear()
    FAIL_ONCE.add("bad")
    feeder = FeederSpout(["sentence"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, _topology(feeder))
        feeder.feed(["a b c"], msg_id=1)
        feeder.feed(["d bad"], msg_id=2)
        cluster.wait_for(lambda: len(feeder.acked) + len(feeder.failed) == 2, 10, "both done")
        cluster.wait_until_quiet()
        stats = cluster.get_stats("t")
    assert feeder.acked == [1] and feeder.failed == [2]
    assert sorted(DIRECT) == ["a", "b", "bad", "c", "d"]
    assert stats["fanout"]["executed"] == stats["fanout"]["acked"] == 5
    assert stats["plain"]["executed"] == 5 and stats["plain"]["failed"] == 1


class Column(Bolt):
    def execute_columns(self, batch: ColumnBatch) -> None:
        self.ack(batch)


def test_bad_anchors_are_refused_naming_the_component() -> None:
    b = TopologyBuilder()
    b.set_spout("feeder", FeederSpout(["w"]))
    b.set_bolt("split", Split).shuffle_grouping("feeder")
    b.set_bolt("col", Column).shuffle_grouping("split")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 1}))
    worker.open()
    split = next(r for r in worker.tasks.values() if r.component_id == "split").instance
    with pytest.raises(TypeError, match="'split': anchors must be"):
        split.emit_many([["x"]], 42)
    with pytest.raises(TypeError, match="'split': an anchor must be a Tuple or a ColumnBatch"):
        split.emit_many([["x"]], ["not a tuple"])
    split.emit_many([["x"], ["y"]])  # untracked: one batch, queued as one item of two tuples
    col = next(r for r in worker.tasks.values() if r.component_id == "col")
    assert len(col.queue) == 1 and worker.dispatch.queued_rows[col.task_id] == 1
    doc = next(d for d in worker.task_stats() if d["task"] == col.task_id)
    assert doc["receive_queue"] == 2
    worker.run_once()
    assert len(col.queue) == 0 and worker.dispatch.queued_rows[col.task_id] == 0
    assert col.stats.executed == col.stats.acked == 2


class RoundSplit(Bolt):
    outputs = ["word"]

    def execute_batch(self, tuples: list[Tuple]) -> None:
        self.emit_many([[w] for t in tuples for w in t.values[0].split()], tuples)
        self.ack_many(tuples)


class RunningCount(Bolt):
    outputs = ["word", "count"]

    def prepare(self, conf: Any, context: Any) -> None:
        self.counts: dict[str, int] = {}

    def execute_columns(self, batch: ColumnBatch) -> None:
        pairs = []
        for w in batch.column("word"):
            self.counts[w] = self.counts.get(w, 0) + 1
            pairs.append([w, self.counts[w]])
        self.emit_many(pairs, batch)
        self.ack(batch)


def test_complete_topology_sees_every_tuple_of_the_batches_across_workers() -> None:
    from stormpy.testing import complete_topology

    b = TopologyBuilder()
    b.set_spout("sentences", FeederSpout(["sentence"]))
    b.set_bolt("split", RoundSplit, 2).shuffle_grouping("sentences")
    b.set_bolt("count", RunningCount, 2).fields_grouping("split", ["word"])
    sentences = [[f"w{i % 7} w{i % 3} shared"] for i in range(60)]
    result = complete_topology(b.create_topology(), {"sentences": sentences},
                               {"topology.acker.executors": 2}, workers=2)
    words = [w for s in sentences for w in s[0].split()]
    assert sorted(result.tuples("split")) == sorted([w] for w in words)
    final: dict[str, int] = {}
    for word, count in result.tuples("count"):
        final[word] = max(final.get(word, 0), count)
    assert final == {w: words.count(w) for w in set(words)}
    assert result.acked("sentences") == list(range(60))
    assert result.stats["count"]["executed"] == len(words)
