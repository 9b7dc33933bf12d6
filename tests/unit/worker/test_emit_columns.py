"""``emit_columns``: a bolt emitting tuples given as columns. Towards columnar bolts each target
task gets one ``ColumnBatch`` of its share (fields grouping across tasks and workers, acking and
replay through the batch); towards other bolts, from bolts without a columnar path and with
``topology.debug`` it is ``emit_many`` of the rows; bad columns get a clear error naming the
component and stream, and the worker keeps running."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import BasicBolt, Bolt, Stream, TopologyBuilder, TopologyContext, Tuple
from stormpy.testing import FeederSpout, LocalCluster
from stormpy.topology._columns import ColumnBatch

TIMEOUT = {"topology.message.timeout.secs": 10}
#: per count task: words counted; batches seen as (task, size, from a task of another worker)
COUNTS: dict[int, Counter[str]] = {}
BATCHES: list[tuple[int, int, bool]] = []
SINGLES: list[list[Any]] = []
#: sink: (word, running count) rows received; words whose batch it fails once
SINK: list[tuple[str, int]] = []
FAIL_ONCE: set[str] = set()
ERRORS: list[str] = []
#: what Record's columnar side got: (its name, (the k column, the v column)) per batch
RECORDED: list[tuple[str, tuple[list[Any], list[Any]]]] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    for x in (COUNTS, BATCHES, SINGLES, SINK, FAIL_ONCE, ERRORS, RECORDED):
        x.clear()


class ColumnSplit(Bolt):
    """All the words of a batch (or of a single sentence) as ONE column, anchored to it."""

    outputs = ["word"]

    def execute(self, tup: Tuple) -> None:
        self.emit_columns([tup.values[0].split()], tup)
        self.ack(tup)

    def execute_columns(self, batch: ColumnBatch) -> None:
        self.emit_columns([[w for s in batch.column(0) for w in s.split()]], batch)
        self.ack(batch)


class RowSplit(Bolt):
    """A per-tuple bolt (no columnar form) using emit_columns: emit_many of the rows."""

    outputs = ["word"]

    def execute(self, tup: Tuple) -> None:
        self.emit_columns((tup.values[0].split(),), tup)
        self.ack(tup)


class BasicSplit(BasicBolt):
    outputs = ["word"]

    def process(self, tup: Tuple) -> None:
        self.emit_columns([tup.values[0].split()])


class Count(Bolt):
    """Counts words (batches or single tuples); with ``emit`` emits ``word, count`` columns
    anchored to the input."""

    outputs = ["word", "count"]

    def __init__(self, emit: bool = False) -> None:
        self.emits = emit

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.task = context.task_id
        self.here = set(context.worker_tasks)
        self.counts = COUNTS.setdefault(self.task, Counter())

    def execute(self, tup: Tuple) -> None:
        SINGLES.append(list(tup.values))
        self.counts[tup.values[0]] += 1
        self.ack(tup)

    def execute_columns(self, batch: ColumnBatch) -> None:
        assert batch.fields is not None and batch.fields.to_list()[0] == "word"
        assert batch.component in ("split", "bad") and batch.stream == "default"
        BATCHES.append((self.task, len(batch), batch.task not in self.here))
        words = batch.column("word")
        running = []
        for w in words:
            self.counts[w] += 1
            running.append(self.counts[w])
        if self.emits:
            self.emit_columns([words, running], batch)
        self.ack(batch)


class Sink(Bolt):
    def execute_columns(self, batch: ColumnBatch) -> None:
        words = batch.column(0)
        bad = FAIL_ONCE.intersection(words)
        if bad:
            FAIL_ONCE.difference_update(bad)
            self.fail(batch)
            return
        SINK.extend(zip(words, batch.column("count"), strict=True))
        self.ack(batch)


class PlainCount(Bolt):
    """Not columnar: gets every word as a Tuple."""

    def execute(self, tup: Tuple) -> None:
        SINGLES.append(list(tup.values))
        self.ack(tup)


def topology(feeder: FeederSpout, split: type[Bolt], count: type[Bolt] = Count, counters: int = 1,
             sink: bool = False, split_n: int = 1) -> Any:
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("split", split, split_n).shuffle_grouping("feeder")
    kwargs = {"emit": True} if sink else {}
    b.set_bolt("count", count, counters, kwargs=kwargs).fields_grouping("split", ["word"])
    if sink:
        b.set_bolt("sink", Sink, 2).fields_grouping("count", ["word"])
    return b.create_topology()


def feed(feeder: FeederSpout, sentences: list[str]) -> None:
    for i, s in enumerate(sentences):
        feeder.feed([s], msg_id=i)


def counted() -> Counter[str]:
    total: Counter[str] = Counter()
    for c in COUNTS.values():
        total.update(c)
    return total


SENTENCES = [" ".join(f"k{(i * 7 + j) % 23}" for j in range(5)) for i in range(60)]
EXPECTED = Counter(w for s in SENTENCES for w in s.split())


def test_columns_reach_columnar_bolts_as_one_batch_per_task_and_every_tree_completes() -> None:
    feeder = FeederSpout(["sentence"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, topology(feeder, ColumnSplit, counters=3))
        feed(feeder, SENTENCES)
        cluster.wait_for(lambda: len(feeder.acked) == 60, 10, "60 sentences acked")
        cluster.wait_until_quiet()
        stats = cluster.get_stats("t")
    assert feeder.failed == [] and counted() == EXPECTED and SINGLES == []
    assert len(COUNTS) == 3 and all(COUNTS.values())
    tasks = sorted(COUNTS)
    for i, t in enumerate(tasks):  # fields grouping: each word on one task only
        for u in tasks[i + 1:]:
            assert not set(COUNTS[t]) & set(COUNTS[u])
    words = sum(EXPECTED.values())
    assert sum(n for _, n, _ in BATCHES) == words and len(BATCHES) <= 3 * 60
    assert stats["split"]["emitted"] == stats["split"]["transferred"] == words
    assert stats["count"]["executed"] == stats["count"]["acked"] == words


def test_acking_off_columns_are_counted_untracked() -> None:
    feeder = FeederSpout(["sentence"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {**TIMEOUT, "topology.acker.executors": 0},
                                topology(feeder, ColumnSplit, counters=2))
        feed(feeder, SENTENCES)
        cluster.wait_for(lambda: sum(counted().values()) == sum(EXPECTED.values()), 10, "all counted")
    assert counted() == EXPECTED


def test_a_failed_batch_of_columns_replays_its_roots_and_two_columns_stay_aligned() -> None:
    """count emits ``word, count`` columns anchored to its batch; the sink fails the batch
    holding "k3" once: the sentences behind it are failed and replayed, all acked in the end."""
    FAIL_ONCE.add("k3")
    feeder = FeederSpout(["sentence"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, topology(feeder, ColumnSplit, counters=2, sink=True))
        feed(feeder, SENTENCES)
        cluster.wait_for(lambda: len(feeder.acked) + len(feeder.failed) == 60, 10,
                         "60 sentences acked or failed")
        failed = list(feeder.failed)
        assert failed and len(failed) == len(set(failed))
        assert any("k3" in SENTENCES[i] for i in failed)  # the batch with k3 failed its roots
        for i in failed:  # the spout's replay
            feeder.feed([SENTENCES[i]], msg_id=i)
        cluster.wait_for(lambda: set(feeder.acked) == set(range(60)), 10, "all 60 acked")
        cluster.wait_until_quiet()
    got = Counter(w for w, _ in SINK)
    for w, n in EXPECTED.items():
        assert got[w] >= n  # at least once
    for w in EXPECTED:  # the running counts of each word rise one by one, aligned with it
        runs = [c for x, c in SINK if x == w]
        assert runs == sorted(runs) and runs[0] >= 1


def test_columns_cross_workers() -> None:
    feeder = FeederSpout(["sentence"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {**TIMEOUT, "topology.acker.executors": 2},
                                topology(feeder, ColumnSplit, counters=2, sink=True, split_n=2),
                                workers=2)
        feed(feeder, SENTENCES)
        cluster.wait_for(lambda: len(feeder.acked) == 60, 20, "60 sentences acked")
        cluster.wait_until_quiet()
        rejected = [w.rejected for w in cluster.workers_of("t")]
    assert rejected == [{}, {}] and feeder.failed == []
    assert counted() == EXPECTED
    assert Counter(w for w, _ in SINK) == EXPECTED
    assert any(remote for _, _, remote in BATCHES)  # batches of columns came over the wire


@pytest.mark.parametrize("split", [RowSplit, BasicSplit, ColumnSplit])
def test_towards_a_per_tuple_bolt_columns_are_emitted_as_rows(split: type[Bolt]) -> None:
    feeder = FeederSpout(["sentence"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, topology(feeder, split, PlainCount, counters=2))
        feed(feeder, SENTENCES[:10])
        cluster.wait_for(lambda: len(feeder.acked) == 10, 10, "10 sentences acked")
    assert feeder.failed == []
    assert Counter(v[0] for v in SINGLES) == Counter(w for s in SENTENCES[:10] for w in s.split())


@pytest.mark.parametrize("split", [RowSplit, ColumnSplit])
def test_with_debug_columns_are_emitted_and_logged_as_rows(split: type[Bolt]) -> None:
    feeder = FeederSpout(["sentence"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {**TIMEOUT, "topology.debug": True},
                                topology(feeder, split, counters=2))
        feed(feeder, SENTENCES[:5])
        cluster.wait_for(lambda: len(feeder.acked) == 5, 10, "5 sentences acked")
    assert counted() == Counter(w for s in SENTENCES[:5] for w in s.split())


class BadColumns(Bolt):
    """Emits the columns the sentence names; reports what emit_columns raised and acks."""

    outputs = ["word", "n"]

    def execute(self, tup: Tuple) -> None:
        kind = tup.values[0]
        bad: Any = {
            "lengths": [["a", "b"], [1]],
            "count": [["a"]],
            "text": "a b",
            "column": ["a", "b"],
            "value": [["a"], [object()]],
            "late": [["a", "b"], [1, object()]],  # a bad value after a good one in its column
            "nonstr": [[1], [object()]],  # no str column: the bad value is still checked
            "big": [["a"], [2 ** 64]],
            "small": [["a"], [-2 ** 63 - 1]],
            "none": [],
        }.get(kind, [["ok"], [1]])
        stream = "nowhere" if kind == "stream" else "default"
        try:
            self.emit_columns(bad, tup, stream)
        except Exception as exc:  # noqa: BLE001 - the error's text is the test's subject
            ERRORS.append(f"{type(exc).__name__}: {exc}")
        self.ack(tup)

    def execute_columns(self, batch: ColumnBatch) -> None:
        self.ack(batch)


def test_bad_columns_get_an_error_naming_the_stream_and_the_worker_goes_on() -> None:
    feeder = FeederSpout(["sentence"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("bad", BadColumns).shuffle_grouping("feeder")
    b.set_bolt("count", Count, 2).fields_grouping("bad", ["word"])
    kinds = ["lengths", "count", "text", "column", "value", "late", "nonstr", "big", "small",
             "none", "stream", "good"]
    with LocalCluster(simulated_time=True) as cluster:
        worker = cluster.submit_topology("t", TIMEOUT, b.create_topology())
        feed(feeder, kinds)
        cluster.wait_for(lambda: len(feeder.acked) == len(kinds), 10, "every input acked")
        assert worker.failure is None
    lengths, count, text, column, value, late, nonstr, big, small, none, stream = ERRORS
    assert "stream 'default'" in lengths and "different lengths [2, 1]" in lengths
    assert "component 'bad'" in count and "1 columns for the fields ['word', 'n']" in count
    assert "takes a list of columns" in text and "str" in text
    assert "one of which is a str" in column
    for error in (value, late, nonstr, big, small):
        assert error.startswith("EmitError") and "'bad'" in error and "'default'" in error, error
    assert "object" in value and "object" in late and "object" in nonstr
    assert str(2 ** 64) in big and str(-2 ** 63 - 1) in small
    assert "no columns" in none
    assert "EmitError" in stream and "undeclared stream 'nowhere'" in stream
    assert counted() == Counter({"ok": 1})  # only the good one got through


class Emits(Bolt):
    """Emits the columns given at construction on ``stream``, anchored to its input."""

    outputs = [Stream(["k", "v"]), Stream(["k", "v"], name="side")]

    def __init__(self, columns: list[list[Any]], stream: str = "default") -> None:
        self.columns = columns
        self.stream = stream

    def execute(self, tup: Tuple) -> None:
        self.emit_columns(self.columns, tup, self.stream)
        self.ack(tup)


class Record(Bolt):
    """Columnar: records (component, k column, v column); single tuples: their values; fails
    the tuple whose v is "fail" (per-tuple input only)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def execute(self, tup: Tuple) -> None:
        if tup.values[1] == "fail":
            self.fail(tup)
            return
        SINGLES.append([self.name, *tup.values])
        self.ack(tup)

    def execute_columns(self, batch: ColumnBatch) -> None:
        assert batch.component == "emits"
        RECORDED.append((self.name, (batch.column("k"), batch.column("v"))))
        self.ack(batch)


class PlainRecord(Bolt):
    def execute(self, tup: Tuple) -> None:
        Record.execute(self, tup)  # type: ignore[arg-type]

    name = "plain"


def emits_topology(feeder: FeederSpout, columns: list[list[Any]], subscribers: list[type[Bolt]],
                   stream: str = "default") -> Any:
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("emits", Emits, kwargs={"columns": columns, "stream": stream}) \
        .shuffle_grouping("feeder")
    for i, cls in enumerate(subscribers):
        kwargs = {"name": f"r{i}"} if cls is Record else {}
        b.set_bolt(f"r{i}", cls, 2, kwargs=kwargs).fields_grouping("emits", ["k"], stream)
    return b.create_topology()


EDGES: list[list[Any]] = [["a", "b", "c", "d", "e", "f", "g"],
         [b"raw", 1.5, None, -2 ** 63, 2 ** 64 - 1, {"map": [1, 2]}, [3, "x"]]]


def test_every_plain_value_and_msgpack_container_passes_and_is_counted() -> None:
    feeder = FeederSpout(["sentence"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, emits_topology(feeder, EDGES, [Record]))
        feeder.feed(["go"], msg_id=1)
        feeder.feed(["again"], msg_id=2)
        cluster.wait_for(lambda: sorted(feeder.acked) == [1, 2], 10, "both inputs acked")
        stats = cluster.get_stats("t")
    got = sorted((k, repr(v)) for _, (ks, vs) in RECORDED for k, v in zip(ks, vs, strict=True))
    assert got == sorted(2 * [(k, repr(v)) for k, v in zip(*EDGES, strict=True)])
    assert stats["emits"]["emitted"] == 14 == stats["emits"]["transferred"]  # both emits counted


def test_a_stream_with_two_columnar_subscribers_gets_the_rows_in_batches_to_both() -> None:
    feeder = FeederSpout(["sentence"])
    cols: list[list[Any]] = [["a", "b", "c"], [1, 2, 3]]
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, emits_topology(feeder, cols, [Record, Record]))
        feeder.feed(["go"], msg_id=1)
        cluster.wait_for(lambda: feeder.acked == [1], 10, "the input acked")
    for name in ("r0", "r1"):
        rows = sorted((k, v) for n, (ks, vs) in RECORDED if n == name for k, v in zip(ks, vs, strict=True))
        assert rows == [("a", 1), ("b", 2), ("c", 3)]


def test_rows_to_per_tuple_bolts_keep_their_stream_and_anchors() -> None:
    """Two columns on the "side" stream to a per-tuple bolt: rows with both values, on that
    stream; failing one fails the input behind it."""
    feeder = FeederSpout(["sentence"])
    cols: list[list[Any]] = [["a", "b", "c"], [1, "fail", 3]]
    # a columnar subscriber of "default" gives the emitting bolt a columnar path; "side" has a
    # per-tuple subscriber only
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("emits", Emits, kwargs={"columns": cols, "stream": "side"}).shuffle_grouping("feeder")
    b.set_bolt("r0", PlainRecord, 2).fields_grouping("emits", ["k"], "side")
    b.set_bolt("cols", Record, kwargs={"name": "cols"}).shuffle_grouping("emits")
    topology = b.create_topology()
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, topology)
        feeder.feed(["go"], msg_id=1)
        cluster.wait_for(lambda: feeder.failed == [1], 10, "the input failed")
        cluster.wait_until_quiet()
    assert sorted(SINGLES) == [["plain", "a", 1], ["plain", "c", 3]] and feeder.acked == []
