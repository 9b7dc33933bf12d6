"""The columnar path: a bolt defining ``execute_columns`` receives one ``ColumnBatch`` per
``emit_many`` and target task, a single node of the tuple tree acked or failed as a whole.
Acking on and off, anchoring to a batch (and its failure replaying the roots), fields grouping
of a batch across tasks and workers, timeouts, ticks, counts in the stats."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import BasicBolt, Bolt, Spout, TopologyBuilder, TopologyContext, Tuple
from stormpy.testing import FeederSpout, LocalCluster
from stormpy.topology._columns import ColumnBatch

TIMEOUT = {"topology.message.timeout.secs": 10}
#: what the columnar bolts saw: (component, task, tuples) per batch; counted words per task
SEEN: list[tuple[str, int, int]] = []
#: batches count received from a task of another worker
REMOTE: list[int] = []
WORDS: dict[int, Counter[str]] = {}
TICKS: list[int] = []
SINK: Counter[str] = Counter()
#: words whose batch the sink fails the first time it sees them
FAIL_ONCE: set[str] = set()


@pytest.fixture(autouse=True)
def _clear() -> None:
    SEEN.clear()
    REMOTE.clear()
    WORDS.clear()
    TICKS.clear()
    SINK.clear()
    FAIL_ONCE.clear()


class RoundSplit(Bolt):
    """Splits every sentence of the round and emits all the words with ONE emit_many anchored to
    all the round's sentences."""

    outputs = ["word"]

    def execute_batch(self, tuples: list[Tuple]) -> None:
        self.emit_many([[w] for t in tuples for w in t.values[0].split()], tuples)
        self.ack_many(tuples)


class SentenceSplit(Bolt):
    """Per sentence: one emit_many of its words anchored to it (a batch per sentence)."""

    outputs = ["word"]

    def execute(self, tup: Tuple) -> None:
        self.emit_many([[w] for w in tup.values[0].split()], tup)
        self.ack(tup)


class ColumnCount(Bolt):
    """Counts the word column of each batch (per task), acks it; ticks come through execute."""

    outputs = ["word", "count"]
    component_config = {"topology.tick.tuple.freq.secs": 1}

    def __init__(self, emit: bool = False) -> None:
        self.emits = emit

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.task = context.task_id
        self.here = set(context.worker_tasks)
        self.counts = WORDS.setdefault(self.task, Counter())

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            TICKS.append(self.task)
        else:  # a tuple emitted one at a time
            self.counts[tup.values[0]] += 1
        self.ack(tup)

    def execute_columns(self, batch: ColumnBatch) -> None:
        assert type(batch) is ColumnBatch and batch.component == "split"
        SEEN.append(("count", self.task, len(batch)))
        if batch.task not in self.here:
            REMOTE.append(len(batch))
        out = []
        for w in batch.column("word"):
            self.counts[w] += 1
            out.append([w, self.counts[w]])
        if self.emits:
            self.emit_many(out, batch)
        self.ack(batch)


class ColumnSink(Bolt):
    """Receives [word, count] batches; fails a batch holding a word of FAIL_ONCE (once per word),
    acks the others and counts their words."""

    def execute_columns(self, batch: ColumnBatch) -> None:
        words = batch.column(0)
        bad = FAIL_ONCE.intersection(words)
        if bad:
            FAIL_ONCE.difference_update(bad)
            self.fail(batch)
            return
        SINK.update(words)
        self.ack(batch)


class ReplaySpout(Spout):
    """Emits the given sentences tracked; replays every failed one; counts acks and fails."""

    outputs = ["sentence"]
    STATE: dict[str, Any] = {}

    def __init__(self, sentences: list[str]) -> None:
        self.sentences = sentences

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.todo = list(range(len(self.sentences)))
        ReplaySpout.STATE.update(acked=set(), failed=[])

    def next_tuple(self) -> None:
        if self.todo:
            i = self.todo.pop(0)
            self.emit([self.sentences[i]], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        ReplaySpout.STATE["acked"].add(msg_id)

    def fail(self, msg_id: Any) -> None:
        ReplaySpout.STATE["failed"].append(msg_id)
        self.todo.append(msg_id)


def _wordcount(spout: Any, split: type[Bolt] = RoundSplit, counters: int = 1,
               sink: bool = False) -> Any:
    b = TopologyBuilder()
    if isinstance(spout, FeederSpout):
        b.set_spout("feeder", spout)
    else:
        b.set_spout("feeder", ReplaySpout, kwargs={"sentences": spout})
    b.set_bolt("split", split).shuffle_grouping("feeder")
    b.set_bolt("count", ColumnCount, counters, kwargs={"emit": sink}) \
        .fields_grouping("split", ["word"])
    if sink:
        b.set_bolt("sink", ColumnSink, 2).fields_grouping("count", ["word"])
    return b.create_topology()


def _expected(sentences: list[str]) -> Counter[str]:
    return Counter(w for s in sentences for w in s.split())


def _counted() -> Counter[str]:
    total: Counter[str] = Counter()
    for c in WORDS.values():
        total.update(c)
    return total


@pytest.mark.parametrize("split", [RoundSplit, SentenceSplit])
def test_acking_on_every_tree_completes_through_batches_and_stats_count_tuples(
        split: type[Bolt]) -> None:
    feeder = FeederSpout(["sentence"])
    sentences = [f"a b c w{i % 13}" for i in range(120)]
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, _wordcount(feeder, split))
        for i, s in enumerate(sentences):
            feeder.feed([s], msg_id=i)
        cluster.wait_for(lambda: len(feeder.acked) == 120, 10, "120 sentences acked")
        cluster.wait_until_quiet()
        stats = cluster.get_stats("t")
    assert feeder.failed == [] and sorted(feeder.acked) == list(range(120))
    assert _counted() == _expected(sentences)
    words = sum(_expected(sentences).values())
    assert sum(n for _, _, n in SEEN) == words
    assert len(SEEN) < words  # batches, not a tuple per word
    if split is RoundSplit:
        assert max(n for _, _, n in SEEN) > 4  # several sentences' words in one batch
    assert stats["split"]["emitted"] == stats["split"]["transferred"] == words
    assert stats["count"]["executed"] == stats["count"]["acked"] == words
    assert stats["count"]["failed"] == 0


def test_acking_off_batches_are_untracked_and_counted() -> None:
    feeder = FeederSpout(["sentence"])
    sentences = [f"x y z{i % 5}" for i in range(60)]
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {**TIMEOUT, "topology.acker.executors": 0},
                                _wordcount(feeder))
        for i, s in enumerate(sentences):
            feeder.feed([s], msg_id=i)
        cluster.wait_for(lambda: sum(_counted().values()) == 180, 10, "180 words counted")
        cluster.wait_until_quiet()
        stats = cluster.get_stats("t")
    assert _counted() == _expected(sentences)
    assert sorted(feeder.acked) == list(range(60))  # acked at emit without ackers
    assert stats["count"]["executed"] == stats["count"]["acked"] == 180


def test_fields_grouping_partitions_a_batch_across_tasks() -> None:
    feeder = FeederSpout(["sentence"])
    sentences = [" ".join(f"k{(i * 7 + j) % 31}" for j in range(6)) for i in range(80)]
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, _wordcount(feeder, counters=3))
        for i, s in enumerate(sentences):
            feeder.feed([s], msg_id=i)
        cluster.wait_for(lambda: len(feeder.acked) == 80, 10, "80 sentences acked")
    assert _counted() == _expected(sentences)
    tasks = sorted(WORDS)
    assert len(tasks) == 3 and all(WORDS[t] for t in tasks)
    for i, t in enumerate(tasks):  # each word went to one task only
        for u in tasks[i + 1:]:
            assert not set(WORDS[t]) & set(WORDS[u])


def test_a_failed_batch_anchored_to_a_batch_fails_and_replays_every_root_it_belongs_to() -> None:
    """count emits [word, count] anchored to its input batch; the sink fails the batch holding
    "bad" once: every sentence of the split's batch that reached it is failed and replayed, and
    everything is acked in the end (at least once)."""
    sentences = [f"s{i} common" for i in range(30)] + ["bad common"]
    FAIL_ONCE.add("bad")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, _wordcount(sentences, sink=True))
        cluster.wait_for(lambda: len(ReplaySpout.STATE["acked"]) == 31, 10, "31 acked")
        cluster.wait_until_quiet()
        stats = cluster.get_stats("t")
    failed = ReplaySpout.STATE["failed"]
    assert 30 in failed  # the sentence with "bad"
    assert len(failed) == len(set(failed))  # each failed root failed once
    for word, n in _expected(sentences).items():
        assert SINK[word] >= n  # at least once
    assert SINK["bad"] == 1
    assert stats["sink"]["failed"] >= 1 and stats["feeder"]["failed"] == len(failed)


def test_an_unacked_batch_times_out_every_root_in_it() -> None:
    class KeepBatches(Bolt):
        def execute_columns(self, batch: ColumnBatch) -> None:
            if "keep" not in batch.column(0):
                self.ack(batch)

    feeder = FeederSpout(["sentence"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("split", SentenceSplit).shuffle_grouping("feeder")
    b.set_bolt("b", KeepBatches).shuffle_grouping("split")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        for i, s in enumerate(["a b", "c keep", "d"]):
            feeder.feed([s], msg_id=i)
        cluster.wait_for(lambda: sorted(feeder.acked) == [0, 2], 10, "two acked")
        cluster.advance_time(TIMEOUT["topology.message.timeout.secs"] * 2 + 1)
        cluster.wait_for(lambda: feeder.failed == [1], 10, "the unacked batch timed out")


def test_single_tuples_and_ticks_reach_execute_of_a_columnar_bolt() -> None:
    class OneByOne(Bolt):
        outputs = ["word"]

        def execute(self, tup: Tuple) -> None:
            for w in tup.values[0].split():
                self.emit([w], tup)
            self.ack(tup)

    feeder = FeederSpout(["sentence"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("split", OneByOne).shuffle_grouping("feeder")
    b.set_bolt("count", ColumnCount).fields_grouping("split", ["word"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        feeder.feed(["p q p"], msg_id=1)
        cluster.wait_for(lambda: feeder.acked == [1], 10, "acked")
        cluster.advance_time(2)
        cluster.wait_for(lambda: len(TICKS) >= 1, 10, "a tick")
    assert _counted() == Counter({"p": 2, "q": 1}) and SEEN == []


def test_batches_cross_workers_with_fields_grouping_and_acking() -> None:
    feeder = FeederSpout(["sentence"])
    sentences = [f"k{i % 7} k{i % 5} same" for i in range(100)]
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("split", RoundSplit, 2).shuffle_grouping("feeder")
    b.set_bolt("count", ColumnCount, 2, kwargs={"emit": True}).fields_grouping("split", ["word"])
    b.set_bolt("sink", ColumnSink, 2).fields_grouping("count", ["word"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {**TIMEOUT, "topology.acker.executors": 2},
                                b.create_topology(), workers=2)
        for i, s in enumerate(sentences):
            feeder.feed([s], msg_id=i)
        cluster.wait_for(lambda: len(feeder.acked) == 100, 20, "100 sentences acked")
        cluster.wait_until_quiet()
        workers = cluster.workers_of("t")
        rejected = [w.rejected for w in workers]
    assert len(workers) == 2 and rejected == [{}, {}]
    assert feeder.failed == []
    assert _counted() == _expected(sentences)
    assert dict(SINK) == dict(_expected(sentences))
    assert REMOTE and sum(REMOTE) > len(REMOTE)  # whole batches came over the wire


def test_sampled_latencies_count_the_tuples_of_a_batch() -> None:
    feeder = FeederSpout(["sentence"])
    with LocalCluster(simulated_time=True) as cluster:
        worker = cluster.submit_topology(
            "t", {**TIMEOUT, "topology.stats.sample.rate": 1.0}, _wordcount(feeder))
        for i in range(20):
            feeder.feed([f"a b c{i}"], msg_id=i)
        cluster.wait_for(lambda: len(feeder.acked) == 20, 10, "20 acked")
        cluster.wait_until_quiet()
        docs = {d["component"]: d for d in worker.task_stats()}
    count = docs["count"]
    assert count["executed"] == 60
    assert count["execute_latency_count"] == 60  # every tuple of every batch timed
    assert count["process_latency_count"] >= 1
    assert count["receive_queue"] == 0


def test_a_basic_bolt_cannot_take_columns() -> None:
    class Basic(BasicBolt):
        def process(self, tup: Tuple) -> None:
            pass

        def execute_columns(self, batch: ColumnBatch) -> None:
            pass

    feeder = FeederSpout(["w"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("basic", Basic).shuffle_grouping("feeder")
    with LocalCluster(simulated_time=True) as cluster, pytest.raises(TypeError, match="BasicBolt"):
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
