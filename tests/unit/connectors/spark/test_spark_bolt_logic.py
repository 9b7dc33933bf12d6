"""SparkBatchBolt's own logic without a JVM: Spark is replaced by a fake session (``get_spark``,
``batch_dataframe`` and the session helpers of ``bolt.py`` and ``in_spark.py`` are swapped here),
the off-loop seam by a queue the test runs, time by tick tuples and a fake ``perf_counter``. What
is checked is what the bolt promises (``connectors/spark/_bolt.py``'s contract, with
``in_spark.py``): batches close on size, age and idleness (in tick time), ids ``seq * tasks +
task_index``, at most ``max_in_flight`` in Spark with a due batch collecting meanwhile, results
emitted anchored to the batch's tuples before the tuples are acked, failures failing every tuple
with ``abort_batch`` and a report naming the batch, keep-alive resets, the batch timeout with its
cancels and session restart, the unreachable master's pause, result checks, cleanup.
``tests/spark`` runs the same bolt against a real Spark."""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

import pytest

from stormpy._batching import BatchSource
from stormpy.config import SettingError
from stormpy.connectors.spark import _bolt as bolt_module
from stormpy.connectors.spark import _in_spark as in_spark
from stormpy.connectors.spark._bolt import SparkBatchBolt
from stormpy.connectors.spark._errors import SparkBatchTimeout, SparkMasterUnreachable
from stormpy.connectors.spark._settings import SWITCH_INTERVAL_KEY
from stormpy.testing import wait_for
from stormpy.topology import ColumnBatch, Stream, Tuple
from stormpy.topology._fields import Fields

FIELDS = Fields(["word", "n"])


class FakeContext:
    """The parts of the Spark context's session the bolt calls, recorded; ``untag_fails`` and
    ``cancel_fails`` (a count) make those calls raise."""

    def __init__(self, log: list[Any]) -> None:
        self.log = log
        self.untag_fails = False
        self.cancel_fails = 0

    def setInterruptOnCancel(self, flag: bool) -> None:  # noqa: N802 - PySpark's name
        self.log.append(("interrupt", flag))

    def addJobTag(self, tag: str) -> None:  # noqa: N802
        self.log.append(("tag", tag))

    def removeJobTag(self, tag: str) -> None:  # noqa: N802
        self.log.append(("untag", tag))
        if self.untag_fails:
            raise RuntimeError("py4j: connection reset")

    def cancelJobsWithTag(self, tag: str) -> None:  # noqa: N802
        self.log.append(("cancel", tag))
        if self.cancel_fails:
            self.cancel_fails -= 1
            raise RuntimeError("py4j: busy")


class FakeSession:
    def __init__(self) -> None:
        self.log: list[Any] = []
        self.sparkContext = FakeContext(self.log)


class FakeDF:
    """What ``batch_dataframe(session, fields, rows, schema)`` would build; ``building`` runs
    while it is built (the time Arrow and the JVM take)."""

    building: Callable[[], None] | None = None

    def __init__(self, session: Any, fields: tuple[str, ...], rows: list[list[Any]],
                 schema: str | None) -> None:
        self.session, self.fields, self.rows, self.schema = session, fields, rows, schema
        if FakeDF.building is not None:
            FakeDF.building()


class Job:
    def __init__(self, fn: Callable[[], Any], on_done: Callable[[Any, BaseException | None], None]) -> None:
        self.fn, self.on_done = fn, on_done
        self.cancelled = False

    def cancel(self) -> bool:
        self.cancelled = True
        return False


class FakeOffLoop:
    """Jobs queue up; ``run()`` runs them in order on the test's thread and hands back."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.shutdowns: list[float] = []

    def submit(self, fn: Callable[[], Any], on_done: Callable[[Any, BaseException | None], None]) -> Job:
        job = Job(fn, on_done)
        self.jobs.append(job)
        return job

    def run(self, n: int = 1000) -> None:
        for _ in range(n):
            if not self.jobs:
                return
            job = self.jobs.pop(0)
            try:
                result, error = job.fn(), None
            except BaseException as exc:  # noqa: BLE001 - handed back as the seam does
                result, error = None, exc
            job.on_done(result, error)

    def call_soon(self, fn: Callable[[], None]) -> None:
        fn()

    @property
    def pending(self) -> int:
        return len(self.jobs)

    def shutdown(self, timeout: float) -> int:
        self.shutdowns.append(timeout)
        return 0


class Spec:
    def __init__(self, streams: Mapping[str, Stream]) -> None:
        self.components = {"spark": type("C", (), {"streams": dict(streams)})()}


class Context:
    component_id = "spark"
    topology_id = "topo"
    task_id = 9

    def __init__(self, tasks: int = 1, index: int = 0, outputs: Mapping[str, Stream] | None = None) -> None:
        self.off_loop = FakeOffLoop()
        self.spec = Spec(outputs if outputs is not None else {"default": Stream(["word", "count"])})
        self.component_tasks = list(range(tasks))
        self.task_index = index


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Counting(SparkBatchBolt):
    """Records each batch it is handed; returns ``RESULTS`` (or raises ``RAISE``)."""

    outputs = ["word", "count"]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.handed: list[tuple[int, list[list[Any]], tuple[str, ...], str | None, BatchSource]] = []
        self.sessions: list[Any] = []
        self.results: Any = None
        self.raise_: BaseException | None = None
        self.aborted: list[tuple[int, BaseException]] = []
        self.causes: list[BaseException | None] = []
        self.done: list[Any] = []
        self.during: Callable[[], None] | None = None

    def process_stream_batch(self, df: Any, batch_id: int, source: BatchSource) -> Any:
        self.handed.append((batch_id, [list(r) for r in df.rows], df.fields, df.schema, source))
        self.sessions.append(df.session)
        if self.during is not None:
            self.during()
        if self.raise_ is not None:
            raise self.raise_
        return self.results

    def abort_batch(self, batch_id: int, error: BaseException) -> None:
        self.aborted.append((batch_id, error))
        self.causes.append(error.__cause__)  # as abort_batch sees it

    def on_batch_done(self, info: Any) -> None:
        self.done.append(info)


@pytest.fixture(autouse=True)
def _switch_interval(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every bolt prepared here lowers the process's switch interval (few clean up): each test
    starts with no holder and leaves the interval as it found it."""
    before = sys.getswitchinterval()
    monkeypatch.setattr(bolt_module.switching, "_holders", 0)
    monkeypatch.setattr(bolt_module.switching, "_saved", None)
    yield
    sys.setswitchinterval(before)


class Harness:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, conf: Mapping[str, Any] | None = None,
                 context: Context | None = None, bolt_cls: type[Counting] = Counting,
                 **kwargs: Any) -> None:
        self.session = FakeSession()
        self.clock = Clock()
        self.spark_calls = 0
        self.unreachable = False
        self.restart = False
        self.resets: list[Any] = []
        self.retained = [0]
        self.events: list[Any] = []

        self.alive = True
        self.confs: list[Any] = []

        def get_spark(conf: Mapping[str, Any]) -> FakeSession:
            self.spark_calls += 1
            self.confs.append(conf)
            if self.unreachable:
                raise SparkMasterUnreachable("spark://nowhere:7077 does not answer")
            return self.session

        monkeypatch.setattr(bolt_module, "require_spark", lambda: None)
        monkeypatch.setattr(bolt_module, "get_spark", get_spark)
        monkeypatch.setattr(in_spark, "get_spark", get_spark)
        monkeypatch.setattr(bolt_module, "batch_dataframe", FakeDF)
        monkeypatch.setattr(in_spark, "note_job_ok", self.events.append)
        monkeypatch.setattr(in_spark, "is_alive", lambda s: s is self.session and self.alive)
        monkeypatch.setattr(in_spark, "needs_restart", lambda s: s is self.session and self.restart)
        monkeypatch.setattr(FakeDF, "building", None)
        monkeypatch.setattr(in_spark, "reset_spark", self.resets.append)
        def retain(by: int) -> Callable[[], None]:
            return lambda: self.retained.__setitem__(0, self.retained[0] + by)
        monkeypatch.setattr(bolt_module, "retain_spark", retain(1))
        monkeypatch.setattr(bolt_module, "release_spark", retain(-1))
        monkeypatch.setattr(bolt_module, "perf_counter", self.clock)
        monkeypatch.setattr(in_spark, "perf_counter", self.clock)
        monkeypatch.setattr(in_spark, "CANCEL_POLL_SECS", 0.001)
        self.bolt = bolt_cls(**kwargs)
        self.acked: list[Any] = []
        self.failed: list[Any] = []
        self.emitted: list[tuple[list[Any], Any, str]] = []
        self.resets_timeout: list[Any] = []
        self.errors: list[Any] = []
        b: Any = self.bolt
        b.ack_many = lambda ts: self.acked.extend(t.values[0] for t in ts)
        b.fail = lambda t: self.failed.append(t.values[0])
        b.emit = lambda values, anchors=None, stream="default": self.emitted.append(
            (values, [t.values[0] for t in anchors] if anchors is not None else None, stream))
        b.reset_timeout = lambda t: self.resets_timeout.append(t.values[0])
        b.report_error = self.errors.append
        self.context = context or Context()
        full = {"topology.tick.tuple.freq.secs": 0.5, "topology.message.timeout.secs": 30,
                **(conf or {})}
        self.conf = {k: v for k, v in full.items() if v is not None}
        self.bolt.prepare(self.conf, self.context)  # type: ignore[arg-type]

    @property
    def off_loop(self) -> FakeOffLoop:
        return self.context.off_loop

    def send(self, *words: str, component: str = "src", stream: str = "default") -> None:
        for w in words:
            self.bolt.execute(Tuple([w, 1], stream, 1, component, FIELDS))

    def tick(self, seconds: float = 0.5, values: list[Any] | None = None) -> None:
        """A tick tuple after ``seconds``; its values say ``seconds`` unless given."""
        self.clock.now += seconds
        self.bolt.execute(Tuple([seconds] if values is None else values, "__tick", -1, "__system",
                                None))


def words(n: int, prefix: str = "w") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


# -- batching -----------------------------------------------------------------------------------
def test_a_full_batch_goes_to_spark_and_its_tuples_are_acked_after_it_returns(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, batch_size=3, batch_seconds=10)
    h.off_loop.run()  # the warm-up job
    assert h.spark_calls == 1 and h.retained == [1]
    h.send("a", "b")
    assert h.off_loop.jobs == []  # not full yet
    h.send("c")
    assert len(h.off_loop.jobs) == 1 and h.acked == []
    h.off_loop.run()
    (batch_id, rows, fields, schema, source), = h.bolt.handed
    assert (batch_id, rows, fields, schema) == (0, [["a", 1], ["b", 1], ["c", 1]], ("word", "n"), None)
    assert (source.component, source.stream) == ("src", "default")
    assert h.acked == ["a", "b", "c"] and h.failed == [] and h.emitted == []
    (info,) = h.bolt.done
    assert info.ok and info.size == 3 and info.reason == "count" and info.results == 0
    assert h.bolt.batches_ok == 1 and h.bolt.batches_failed == 0
    tag = next(x for x in h.session.log if x[0] == "tag")[1]
    assert tag.startswith("stormpy-batch-0-") and ("untag", tag) in h.session.log
    assert ("interrupt", True) in h.session.log and h.events == [h.session]
    assert h.bolt.sessions == [h.session] and all(c is h.conf for c in h.confs)
    assert info.started_at == info.finished_at == h.clock.now  # the bolt's clock, patched here


def test_batches_close_on_age_and_idleness_in_tick_time(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, batch_size=100, batch_seconds=2.0, idle_seconds=1.0)
    h.off_loop.run()
    h.send("a")
    h.tick(0.5)
    h.send("b")
    h.tick(0.5)
    assert h.off_loop.jobs == []  # "b" idle 0.5 s, the batch 1 s old
    h.tick(0.5)  # "b" idle 1 s: due
    h.off_loop.run()
    assert [r for _, r, *_ in h.bolt.handed] == [[["a", 1], ["b", 1]]]
    assert h.bolt.done[0].reason == "idle"
    h.send("c")
    for _ in range(3):
        h.send("d")
        h.tick(0.5)
    h.tick(0.5)
    h.off_loop.run()
    assert len(h.bolt.handed) == 2 and h.bolt.done[1].reason == "time"


def test_each_input_stream_has_its_own_batch_and_ids_interleave_over_tasks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, context=Context(tasks=3, index=2), batch_size=2, batch_seconds=10)
    h.off_loop.run()
    h.send("a", component="one")
    h.send("b", component="two")
    h.send("c", component="one")
    h.off_loop.run()
    h.send("d", component="two")
    h.off_loop.run()
    assert [(i, s.component, [r[0] for r in rows]) for i, rows, _, _, s in h.bolt.handed] == [
        (2, "one", ["a", "c"]), (5, "two", ["b", "d"])]  # seq * 3 tasks + index 2


class FromSeven(Counting):
    def first_batch_seq(self) -> int:
        return 7


def test_first_batch_seq_starts_the_numbering(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, bolt_cls=FromSeven, context=Context(tasks=2, index=1), batch_size=1)
    h.off_loop.run()
    h.send("a", "b")
    h.off_loop.run()
    assert [i for i, *_ in h.bolt.handed] == [15, 17]


class NoAhead(Counting):
    """Without the DataFrame built ahead: the off-loop jobs are the batches' own."""

    prepare_ahead = False


def test_while_spark_is_busy_full_batches_queue_and_a_due_batch_keeps_collecting(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, bolt_cls=NoAhead, batch_size=2, batch_seconds=1.0, max_in_flight=1)
    h.off_loop.run()
    h.send("a", "b")  # batch 0 goes to Spark
    h.send("c", "d")  # batch 1 full: waits for the slot
    h.send("e")
    h.tick(0.5)
    h.tick(0.5)
    h.tick(0.5)  # "e" is due by age, but the slot is taken: it keeps collecting
    assert len(h.off_loop.jobs) == 1
    h.off_loop.run(1)  # batch 0 returns: batch 1 starts; "e" still waits for a slot
    assert [r[0][0] for _, r, *_ in h.bolt.handed] == ["a"] and len(h.off_loop.jobs) == 1
    assert h.acked == ["a", "b"]
    h.send("f")  # joins the due batch, which is still open
    h.off_loop.run(1)  # batch 1 returns: the due batch with "e" and "f" goes
    h.off_loop.run(1)
    assert [[x[0] for x in r] for _, r, *_ in h.bolt.handed] == [["a", "b"], ["c", "d"], ["e", "f"]]
    assert h.acked == ["a", "b", "c", "d", "e", "f"]


def test_max_in_flight_batches_run_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, bolt_cls=NoAhead, batch_size=1, max_in_flight=2)
    h.off_loop.run()
    h.send("a", "b", "c")
    assert len(h.off_loop.jobs) == 2 and len(h.bolt._ready) == 1  # noqa: SLF001
    h.off_loop.run()
    assert h.acked == ["a", "b", "c"]


def built_dataframes(monkeypatch: pytest.MonkeyPatch, fail_first: int = 0) -> list[int]:
    """Count FakeDF builds (the first ``fail_first`` of those after the call raise)."""
    builds: list[int] = []

    def building() -> None:
        builds.append(1)
        if len(builds) <= fail_first:
            raise ValueError("arrow: cannot convert")
    monkeypatch.setattr(FakeDF, "building", staticmethod(building))
    return builds


def test_the_next_batch_s_dataframe_is_built_ahead_while_the_previous_one_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, batch_size=2)
    h.off_loop.run()
    builds = built_dataframes(monkeypatch)
    h.send("a", "b")  # batch 0 goes to Spark
    h.send("c", "d")  # batch 1 waits for the slot: its DataFrame is built meanwhile
    assert len(h.off_loop.jobs) == 2
    h.off_loop.run(2)  # batch 0's job, then batch 1's DataFrame
    assert builds == [1, 1] and len(h.bolt.handed) == 1
    h.off_loop.run()  # batch 1's job takes the DataFrame built ahead: no third build
    assert builds == [1, 1]
    assert [[x[0] for x in r] for _, r, *_ in h.bolt.handed] == [["a", "b"], ["c", "d"]]
    assert h.acked == ["a", "b", "c", "d"] and h.bolt._ahead == {}  # noqa: SLF001


def test_a_batch_whose_dataframe_was_not_started_ahead_builds_it_itself(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, batch_size=2)
    h.off_loop.run()
    builds = built_dataframes(monkeypatch)
    h.send("a", "b", "c", "d")
    run0, ahead1 = h.off_loop.jobs
    h.off_loop.jobs = [run0]
    h.off_loop.run()  # batch 0 returns; batch 1 starts before its build ahead ran
    assert [[x[0] for x in r] for _, r, *_ in h.bolt.handed] == [["a", "b"], ["c", "d"]]
    assert builds == [1, 1]
    h.off_loop.jobs = [ahead1]
    h.off_loop.run()  # the late build ahead does nothing
    assert builds == [1, 1] and h.acked == ["a", "b", "c", "d"]


@pytest.mark.parametrize("why", ["the build failed", "the session was restarted"])
def test_a_dataframe_built_ahead_is_not_used_when_it_failed_or_its_session_is_gone(
        monkeypatch: pytest.MonkeyPatch, why: str) -> None:
    h = Harness(monkeypatch, batch_size=2)
    h.off_loop.run()
    builds = built_dataframes(monkeypatch)
    h.send("a", "b", "c", "d")
    h.off_loop.run(1)  # batch 0's job
    if why == "the build failed":
        builds_before = len(builds)
        monkeypatch.setattr(FakeDF, "building", staticmethod(
            lambda: (_ for _ in ()).throw(ValueError("arrow: cannot convert"))))
        h.off_loop.run(1)  # the build ahead fails quietly
        assert len(builds) == builds_before and h.errors == []
        monkeypatch.setattr(FakeDF, "building", None)
    else:
        h.off_loop.run(1)  # built on the first session
        h.session = FakeSession()  # restarted before batch 1's job
    h.off_loop.run()
    assert [[x[0] for x in r] for _, r, *_ in h.bolt.handed] == [["a", "b"], ["c", "d"]]
    assert h.bolt.sessions[-1] is h.session and h.acked == ["a", "b", "c", "d"]
    assert h.bolt.batches_failed == 0


def test_a_batch_given_up_while_its_dataframe_is_built_ahead_stops_waiting_for_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, conf={"spark.stormpy.batch.timeout.secs": 5}, batch_size=2)
    h.off_loop.run()
    h.send("a", "b", "c", "d")
    run0, ahead1 = h.off_loop.jobs
    h.off_loop.jobs = [run0]
    h.off_loop.run(1)  # batch 0 done; batch 1's job is queued, its build ahead not started
    (run1,) = h.off_loop.jobs
    building, release = threading.Event(), threading.Event()
    monkeypatch.setattr(FakeDF, "building", staticmethod(lambda: building.set() or release.wait(120)))
    builder = threading.Thread(target=ahead1.fn)
    builder.start()  # the build ahead is under way (and stays so)
    assert building.wait(60)
    monkeypatch.setattr(FakeDF, "building", None)
    timeout = threading.Timer(0.3, lambda: (setattr(h.clock, "now", h.clock.now + 6), h.tick(0.1)))
    safety = threading.Timer(60, release.set)  # a batch that never gave up would wait this long
    timeout.start()
    safety.start()
    try:
        h.off_loop.run(1)  # batch 1 waits for the build ahead until the loop gives up on it
        assert builder.is_alive() and not release.is_set()
    finally:
        release.set()
        safety.cancel()
        builder.join(60)
        timeout.join(60)
    assert h.failed == ["c", "d"] and [r[0][0] for _, r, *_ in h.bolt.handed] == ["a"]
    (batch_id, error), = h.bolt.aborted
    assert batch_id == 1 and str(error) == "batch 1 timed out before process_batch began"
    assert all(c is h.conf for c in h.confs)  # the build ahead used the topology's config


def test_a_tuple_added_while_a_batch_is_in_spark_gives_the_gil_up_every_so_often(
        monkeypatch: pytest.MonkeyPatch) -> None:
    yields: list[int] = []
    monkeypatch.setattr(bolt_module, "_release_gil", lambda: yields.append(1))
    h = Harness(monkeypatch, batch_size=1000)
    h.off_loop.run()
    h.send(*words(bolt_module._YIELD_EVERY * 2))  # noqa: SLF001
    assert yields == []  # nothing in Spark yet
    h.bolt._close(h.bolt._collector.drain()[0])  # noqa: SLF001 - put one batch in Spark
    h.send(*words(bolt_module._YIELD_EVERY * 2 - 1, "x"))  # noqa: SLF001
    assert len(yields) == 1
    h.send("y")
    assert len(yields) == 2


# -- results and failures ---------------------------------------------------------------------
def test_results_are_emitted_anchored_to_every_tuple_of_the_batch_before_the_ack(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, batch_size=2)
    h.off_loop.run()
    h.bolt.results = [["a", 2], ("b", 1)]
    h.send("a", "b")
    h.off_loop.run()
    assert h.emitted == [(["a", 2], ["a", "b"], "default"), (["b", 1], ["a", "b"], "default")]
    assert h.acked == ["a", "b"] and h.bolt.done[0].results == 2


def test_a_column_batch_joins_the_micro_batch_whole_and_is_acked_or_failed_as_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, batch_size=4)
    h.off_loop.run()
    units: list[Any] = []
    failed: list[Any] = []
    b: Any = h.bolt
    b.ack_many = units.extend
    b.fail = failed.append
    h.send("a")
    cb = ColumnBatch([["b", 1], ["c", 1], ["d", 1], ["e", 1]], "default", 1, "src", FIELDS)
    h.bolt.execute_columns(cb)  # 5 tuples: closes the batch without splitting the column batch
    h.off_loop.run()
    ((batch_id, rows, _, _, _),) = h.bolt.handed
    assert rows == [["a", 1], ["b", 1], ["c", 1], ["d", 1], ["e", 1]]
    assert [u.values[0] if isinstance(u, Tuple) else u for u in units] == ["a", cb]
    assert h.bolt.done[0].size == 5
    h.bolt.raise_ = RuntimeError("job aborted")
    cb2 = ColumnBatch([["f", 1], ["g", 1], ["h", 1], ["i", 1]], "default", 1, "src", FIELDS)
    h.bolt.execute_columns(cb2)
    h.off_loop.run()
    assert failed == [cb2] and h.bolt.batches_failed == 1


class Unanchored(Counting):
    anchor_results = False
    result_stream = "side"


def test_results_on_another_stream_unanchored(monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = Context(outputs={"side": Stream(["word"])})
    h = Harness(monkeypatch, bolt_cls=Unanchored, context=ctx, batch_size=1)
    h.off_loop.run()
    h.bolt.results = [["x"]]
    h.send("a")
    h.off_loop.run()
    assert h.emitted == [(["x"], None, "side")]


@pytest.mark.parametrize("results, words_in_error", [
    ([["a"]], ["process_batch returned a row of 1 values for stream 'default' with 2 fields"]),
    ([["a", object()]], ["not plain data"]),
    (5, ["must return None, a DataFrame or an iterable of rows"]),
])
def test_results_that_do_not_fit_fail_the_batch_with_abort_and_a_report(
        monkeypatch: pytest.MonkeyPatch, results: Any, words_in_error: list[str]) -> None:
    h = Harness(monkeypatch, batch_size=2)
    h.off_loop.run()
    h.bolt.results = results
    h.send("a", "b")
    h.off_loop.run()
    assert h.failed == ["a", "b"] and h.acked == [] and h.emitted == []
    assert [i for i, _ in h.bolt.aborted] == [0]
    (report,) = h.errors
    assert report.startswith("batch 0 (2 tuples from src/default) failed; its tuples were failed "
                             "for replay:")
    for w in words_in_error:
        assert w in report
    assert h.bolt.batches_failed == 1 and not h.bolt.done[0].ok


def test_rows_without_a_declared_result_stream_fail_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, context=Context(outputs={}), batch_size=1)
    h.off_loop.run()
    h.bolt.results = [["a", 1]]
    h.send("a")
    h.off_loop.run()
    assert h.failed == ["a"]
    assert "returned rows, but stream 'default' is not declared in Counting.outputs" in h.errors[0]


class Quiet(Counting):
    report_batch_errors = False


def test_a_failing_process_batch_fails_every_tuple_once_and_the_next_batch_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, bolt_cls=Quiet, batch_size=2)
    h.off_loop.run()
    h.bolt.raise_ = RuntimeError("job aborted")
    h.send("a", "b")
    h.off_loop.run()
    h.bolt.raise_ = None
    h.send("c", "d")
    h.off_loop.run()
    assert h.failed == ["a", "b"] and h.acked == ["c", "d"] and h.errors == []
    assert isinstance(h.bolt.aborted[0][1], RuntimeError) and h.bolt.done[0].error is not None


class AbortFails(Counting):
    def abort_batch(self, batch_id: int, error: BaseException) -> None:
        raise OSError("cleanup failed")


def test_an_abort_that_fails_is_noted_on_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, bolt_cls=AbortFails, batch_size=1)
    h.off_loop.run()
    h.bolt.raise_ = RuntimeError("boom")
    h.send("a")
    h.off_loop.run()
    assert h.failed == ["a"] and "abort_batch(0) also failed: OSError('cleanup failed')" in h.errors[0]


class BadHook(Counting):
    def on_batch_done(self, info: Any) -> None:
        raise ValueError("hook broke")


def test_a_failing_on_batch_done_is_reported_and_the_tuples_stay_acked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, bolt_cls=BadHook, batch_size=1)
    h.off_loop.run()
    h.send("a")
    h.off_loop.run()
    assert h.acked == ["a"] and isinstance(h.errors[0], ValueError)


def test_an_emit_that_raises_fails_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, batch_size=1)
    h.off_loop.run()
    h.bolt.results = [["a", 1]]

    def refuse(values: Any, anchors: Any = None, stream: str = "default") -> None:
        raise RuntimeError("emit refused")
    h.bolt.emit = refuse  # type: ignore[method-assign]
    h.send("a")
    h.off_loop.run()
    assert h.failed == ["a"] and "emit refused" in h.errors[0]


# -- keep-alive, timeouts, the master ---------------------------------------------------------
def test_tuples_waiting_longer_than_half_the_message_timeout_are_kept_alive(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, conf={"topology.message.timeout.secs": 4}, batch_size=2,
                batch_seconds=100)
    h.off_loop.run()
    h.send("a", "b")  # in Spark (the job not run yet)
    h.send("c", "d")  # full, waiting for the slot
    h.send("e")       # collecting
    for _ in range(3):
        h.tick(0.5)
    assert h.resets_timeout == []  # 1.5 s < 2 s
    h.tick(0.5)
    assert sorted(h.resets_timeout) == ["a", "b", "c", "d", "e"]
    h.tick(0.5)
    assert len(h.resets_timeout) == 5  # touched again only after another 2 s
    for _ in range(3):
        h.tick(0.5)
    assert len(h.resets_timeout) == 10


def test_without_a_message_timeout_setting_keep_alive_works_from_storm_s_30_s(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, conf={"topology.message.timeout.secs": None}, batch_size=2)
    h.off_loop.run()
    h.send("a")
    for _ in range(29):
        h.tick(0.5)
    assert h.resets_timeout == []  # 14.5 s
    h.tick(0.5)
    assert h.resets_timeout == ["a"]  # 15 s: half of 30


@pytest.mark.parametrize("conf, kwargs", [
    ({"topology.acker.executors": 0}, {}),
    ({"topology.enable.message.timeouts": False}, {}),
    ({}, {"keep_alive": False}),
])
def test_no_keep_alive_without_tracking_or_when_off(monkeypatch: pytest.MonkeyPatch,
                                                   conf: dict[str, Any], kwargs: dict[str, Any]) -> None:
    h = Harness(monkeypatch, conf={"topology.message.timeout.secs": 2, **conf}, batch_size=1,
                **kwargs)
    h.off_loop.run()
    h.send("a")
    for _ in range(10):
        h.tick(0.5)
    assert h.resets_timeout == []


def test_a_batch_running_past_the_batch_timeout_is_failed_and_its_jobs_cancelled(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, conf={"spark.stormpy.batch.timeout.secs": 5}, batch_size=1)
    h.off_loop.run()
    h.restart = True
    started: list[int] = []

    h.session.sparkContext.cancel_fails = 1  # a failing cancel is retried

    def slow() -> None:  # the job is in Spark: the loop ticks past the timeout meanwhile
        started.append(1)
        h.clock.now += 4.9
        h.tick(0.1)
        assert h.failed == []  # not yet: 5 s exactly is not past
        h.clock.now += 0.1
        h.tick(0.1)
        # the job keeps running: its jobs are cancelled again and again
        wait_for(lambda: sum(1 for x in h.session.log if x[0] == "cancel") >= 3, 60,
                 "three cancels of the running job")
    h.bolt.during = slow
    h.send("a")
    job = h.off_loop.jobs[0]
    h.off_loop.run()
    assert started == [1] and h.failed == ["a"] and h.acked == [] and job.cancelled
    assert sum(1 for x in h.session.log if x[0] == "cancel") >= 3
    (report,) = h.errors
    assert "SparkBatchTimeout" in report and "still running after 5 s" in report
    (batch_id, error), = h.bolt.aborted
    assert isinstance(error, SparkBatchTimeout)
    assert str(error) == "batch 0 finished after its timeout; its tuples were already failed"
    tag = next(x for x in h.session.log if x[0] == "tag")[1]
    wait_for(lambda: h.resets, 60, "the cancel thread's reset")
    assert ("cancel", tag) in h.session.log and h.resets == [h.session]
    assert h.bolt._in_flight == {}  # noqa: SLF001
    assert len(h.bolt.done) == 1  # the late outcome changed nothing


def test_no_batch_timeout_when_it_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, conf={"spark.stormpy.batch.timeout.secs": 0}, batch_size=1)
    h.off_loop.run()

    def slow() -> None:
        h.clock.now += 10_000
        h.tick(0.5)
    h.bolt.during = slow
    h.send("a")
    h.off_loop.run()
    assert h.acked == ["a"] and h.failed == []


def test_an_unreachable_master_fails_the_batch_after_the_probe_pause(
        monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(bolt_module.time, "sleep", slept.append)
    h = Harness(monkeypatch, conf={"spark.stormpy.master.probe.secs": 3}, batch_size=1)
    h.off_loop.run()
    h.unreachable = True
    h.send("a")
    h.off_loop.run()
    assert slept == [3.0] and h.failed == ["a"] and "does not answer" in h.errors[0]
    h.unreachable = False
    h.send("a")
    h.off_loop.run()
    assert h.acked == ["a"]


def test_a_warm_up_failure_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, batch_size=1)
    h.unreachable = True
    monkeypatch.setattr(bolt_module.time, "sleep", lambda s: None)
    h.off_loop.run()
    assert isinstance(h.errors[0], SparkMasterUnreachable)


class Cold(Counting):
    warm_up = False


def test_without_warm_up_no_session_is_started_at_prepare(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, bolt_cls=Cold)
    assert h.off_loop.jobs == [] and h.spark_calls == 0


# -- settings, cleanup --------------------------------------------------------------------------
@pytest.mark.parametrize("tick", [0, None, -1, "often"])
def test_prepare_requires_ticks(monkeypatch: pytest.MonkeyPatch, tick: Any) -> None:
    with pytest.raises(SettingError, match=r"^topology.tick.tuple.freq.secs: Counting \(spark\) "
                                           r"closes batches on tick tuples: set ") as err:
        Harness(monkeypatch, conf={"topology.tick.tuple.freq.secs": tick})
    assert str(err.value).endswith(f"in its config, got {tick!r}")  # the value it was given


def test_a_tick_longer_than_batch_seconds_is_warned_about(monkeypatch: pytest.MonkeyPatch,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="stormpy.connectors.spark"):
        Harness(monkeypatch, conf={"topology.tick.tuple.freq.secs": 2}, batch_seconds=2)
        assert caplog.text == ""  # equal is fine
        Harness(monkeypatch, conf={"topology.tick.tuple.freq.secs": 3}, batch_seconds=2)
    assert "tick period 3s is longer than batch_seconds 2s" in caplog.text


class SlowTicks(Counting):
    component_config = {"topology.tick.tuple.freq.secs": 1.0}


class NoTicks(Counting):
    component_config: ClassVar[Mapping[str, Any]] = {}


def test_declare_config_ticks_often_enough_for_the_limits() -> None:
    tick = "topology.tick.tuple.freq.secs"
    assert SlowTicks.declare_config({})[tick] == 0.5  # a quarter of the default 2 s
    assert SlowTicks.declare_config({"batch_seconds": 8})[tick] == 1.0  # the class's own
    assert NoTicks.declare_config({"batch_seconds": 8})[tick] == 0.5  # no default: 0.5 s
    assert Counting.declare_config({})[tick] == 0.5
    assert Counting.declare_config({"batch_seconds": 1.0})[tick] == 0.25
    assert Counting.declare_config({"batch_seconds": 8, "idle_seconds": 0.4})[tick] == 0.2
    assert Counting.declare_config({"batch_seconds": 0.01})[tick] == 0.05


@pytest.mark.parametrize(("kwargs", "setting", "problem"), [
    ({"max_in_flight": 0}, "max_in_flight", "must be an integer >= 1, got 0"),
    ({"batch_size": 0}, "batch_size", "must be an integer >= 1, got 0"),
    ({"batch_size": 2.5}, "batch_size", "must be an integer >= 1, got 2.5"),
    ({"batch_seconds": 0}, "batch_seconds", "must be positive, got 0"),
    ({"batch_seconds": "2"}, "batch_seconds", "must be a number of seconds, got '2'"),
    ({"idle_seconds": 0}, "idle_seconds", "must be positive or None, got 0"),
    ({"idle_seconds": "1"}, "idle_seconds", "must be a number of seconds, got '1'"),
    ({"schema": 3}, "schema", "must be a Spark DDL string or None, got 3"),
])
def test_bad_constructor_arguments_name_the_setting(kwargs: dict[str, Any], setting: str,
                                                    problem: str) -> None:
    with pytest.raises(SettingError) as err:
        Counting(**kwargs)
    assert (err.value.setting, err.value.problem) == (f"Counting.{setting}", problem)


def test_constructor_defaults_are_storm_like() -> None:
    b = Counting()
    assert (b.batch_size, b.batch_seconds, b.idle_seconds, b.max_in_flight, b.keep_alive) == (
        1000, 2.0, None, 1, True)


def test_the_schema_reaches_the_dataframe(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, batch_size=1, schema="word string, n long")
    h.off_loop.run()
    h.send("a")
    h.off_loop.run()
    assert h.bolt.handed[0][3] == "word string, n long"


def test_cleanup_shuts_the_seam_down_drops_unsent_batches_and_releases_the_session(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    h = Harness(monkeypatch, batch_size=2, max_in_flight=1)
    h.off_loop.run()
    h.send("a", "b", "c", "d", "e")  # one in Spark, one ready, "e" collecting
    with caplog.at_level(logging.INFO, logger="stormpy.connectors.spark"):
        h.bolt.cleanup()
    assert h.off_loop.shutdowns == [SparkBatchBolt.cleanup_wait_secs] and h.retained == [0]
    assert "3 tuples in unprocessed batches at shutdown" in caplog.text
    h.off_loop.run()  # the job that was in Spark hands back after cleanup: nothing happens
    assert h.acked == [] and h.failed == []
    h.tick(10)  # nothing closes or starts any more
    assert h.off_loop.jobs == []


def test_a_process_batch_that_is_not_implemented_fails_its_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    class Bare(SparkBatchBolt):
        outputs = ["word", "count"]

    session = FakeSession()
    monkeypatch.setattr(bolt_module, "require_spark", lambda: None)
    monkeypatch.setattr(bolt_module, "get_spark", lambda conf: session)
    monkeypatch.setattr(in_spark, "get_spark", lambda conf: session)
    monkeypatch.setattr(bolt_module, "batch_dataframe", FakeDF)
    monkeypatch.setattr(bolt_module, "retain_spark", lambda: None)
    bolt: Any = Bare(batch_size=1)
    failed: list[Any] = []
    errors: list[Any] = []
    bolt.fail, bolt.report_error, bolt.ack_many = failed.append, errors.append, lambda ts: None
    ctx = Context()
    bolt.prepare({"topology.tick.tuple.freq.secs": 0.5}, ctx)
    bolt.execute(Tuple(["a", 1], "default", 1, "src", FIELDS))
    ctx.off_loop.run()
    assert len(failed) == 1 and "Bare must implement process_batch(df, batch_id)" in errors[-1]


def test_a_batch_given_up_while_its_dataframe_was_built_never_reaches_process_batch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, conf={"spark.stormpy.batch.timeout.secs": 5}, batch_size=1)
    h.off_loop.run()

    def building() -> None:
        h.clock.now += 6
        h.tick(0.1)
    monkeypatch.setattr(FakeDF, "building", building)
    h.send("a")
    h.off_loop.run()
    assert h.bolt.handed == [] and h.failed == ["a"]
    (_, error), = h.bolt.aborted
    assert isinstance(error, SparkBatchTimeout)
    assert str(error) == "batch 0 timed out before process_batch began"


def test_a_spark_error_after_the_timeout_is_reported_as_the_timeout_with_its_cause(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, conf={"spark.stormpy.batch.timeout.secs": 5}, batch_size=1)
    h.off_loop.run()
    echo = RuntimeError("Job 3 cancelled")

    def cancelled() -> None:
        h.clock.now += 6
        h.tick(0.1)
        raise echo
    h.bolt.during = cancelled
    h.send("a")
    h.off_loop.run()
    (_, error), = h.bolt.aborted
    assert isinstance(error, SparkBatchTimeout) and h.bolt.causes == [echo]
    assert str(error) == "batch 0 timed out; its Spark jobs were cancelled (RuntimeError)"
    assert h.failed == ["a"] and len(h.errors) == 1


def test_the_batch_timeout_defaults_to_300_s(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, batch_size=1)
    h.off_loop.run()

    def slow() -> None:
        h.clock.now += 299.9
        h.tick(0.1)
        assert h.failed == []
        h.clock.now += 0.4
        h.tick(0.1)
    h.bolt.during = slow
    h.send("a")
    h.off_loop.run()
    assert h.failed == ["a"] and "still running after 300 s" in h.errors[0]


def run_until_given_up(h: Harness, word: str, longest: float = 100.0) -> float | None:
    """Hand ``h``'s bolt a batch of ``word`` whose Spark work lasts until the loop gives up on it
    (ticks of 0.5 s, at most ``longest`` s); the seconds it ran then (None: it never was, and
    returned after ``longest`` s)."""
    ran = [0.0]

    def slow() -> None:
        while word not in h.failed and ran[0] < longest:
            ran[0] += 0.5
            h.tick(0.5)
    h.bolt.during = slow
    h.send(word)
    h.off_loop.run()
    h.bolt.during = None
    return ran[0] if word in h.failed else None


def test_consecutive_timeouts_double_the_batch_timeout_up_to_the_cap_until_a_batch_succeeds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, conf={"spark.stormpy.batch.timeout.secs": 5,
                                   "spark.stormpy.batch.timeout.max.secs": 15}, batch_size=1)
    h.off_loop.run()
    # a cold executor: each batch slower than the limit in force, which doubles (capped at 15 s)
    assert run_until_given_up(h, "a") == 5.5
    assert run_until_given_up(h, "b") == 10.5
    assert run_until_given_up(h, "c") == 15.5
    assert run_until_given_up(h, "d") == 15.5
    assert h.failed == ["a", "b", "c", "d"] and h.acked == []
    assert "still running after 5 s (spark.stormpy.batch.timeout.secs);" in h.errors[0]
    assert "; the next batches may run 10 s" in h.errors[0]
    assert ("still running after 10 s (spark.stormpy.batch.timeout.secs, grown from 5 s after "
            "1 consecutive timeout);" in h.errors[1])
    assert "after 2 consecutive timeouts" in h.errors[2] and "next batches" not in h.errors[2]
    # warm now: a batch of 12 s gets through under the grown limit ...
    assert run_until_given_up(h, "e", longest=12) is None
    assert h.acked == ["e"]
    # ... and the limit is the configured one again
    assert run_until_given_up(h, "f") == 5.5
    assert all(isinstance(error, SparkBatchTimeout) for _, error in h.bolt.aborted)
    assert [batch_id for batch_id, _ in h.bolt.aborted] == [0, 1, 2, 3, 5]


def test_a_failure_other_than_a_timeout_keeps_the_grown_batch_timeout(
        monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(bolt_module.time, "sleep", slept.append)
    h = Harness(monkeypatch, conf={"spark.stormpy.batch.timeout.secs": 5}, batch_size=1)
    h.off_loop.run()
    assert run_until_given_up(h, "a") == 5.5
    h.unreachable = True  # the outage: batches fail on the master, not on the timeout
    h.send("b")
    h.off_loop.run()
    h.unreachable = False
    h.bolt.raise_ = RuntimeError("a task failed 4 times")
    h.send("c")
    h.off_loop.run()
    h.bolt.raise_ = None
    assert h.failed == ["a", "b", "c"] and slept.count(5.0) == 1  # the probe pause
    assert run_until_given_up(h, "d") == 10.5  # still grown: no batch succeeded meanwhile


@pytest.mark.parametrize(("cap", "limits"), [
    (None, [5.5, 10.5, 20.5, 20.5]),  # unset: 4 x the timeout
    (0, [5.5, 5.5, 5.5]),  # no growth
    (5, [5.5, 5.5]),
    (7.5, [5.5, 8.0, 8.0]),
])
def test_the_grown_batch_timeout_is_capped_by_its_setting(
        monkeypatch: pytest.MonkeyPatch, cap: float | None, limits: list[float]) -> None:
    h = Harness(monkeypatch, conf={"spark.stormpy.batch.timeout.secs": 5,
                                   "spark.stormpy.batch.timeout.max.secs": cap}, batch_size=1)
    h.off_loop.run()
    assert [run_until_given_up(h, f"w{i}") for i in range(len(limits))] == limits


def test_a_cap_below_the_batch_timeout_names_both_settings(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SettingError, match=r"^spark\.stormpy\.batch\.timeout\.max\.secs: must be 0 "
                                           r"\(no growth\) or at least "
                                           r"spark\.stormpy\.batch\.timeout\.secs \(20\), got 10"):
        Harness(monkeypatch, conf={"spark.stormpy.batch.timeout.secs": 20,
                                   "spark.stormpy.batch.timeout.max.secs": 10})


def test_a_failing_untag_does_not_fail_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, batch_size=1)
    h.off_loop.run()
    h.session.sparkContext.untag_fails = True
    h.send("a")
    h.off_loop.run()
    assert h.acked == ["a"] and h.errors == []


def test_counters_of_batches_add_up(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, bolt_cls=Quiet, batch_size=1)
    h.off_loop.run()
    for fail in (False, True, False, True, True):
        h.bolt.raise_ = RuntimeError("x") if fail else None
        h.send("a")
        h.off_loop.run()
    assert (h.bolt.batches_ok, h.bolt.batches_failed) == (2, 3)


@pytest.mark.parametrize("values, advanced", [([2.0], 2.0), ([], 0.5), (["x"], 0.5), ([1], 1.0)])
def test_a_tick_advances_batch_time_by_its_own_period_or_the_configured_one(
        monkeypatch: pytest.MonkeyPatch, values: list[Any], advanced: float) -> None:
    h = Harness(monkeypatch, batch_size=10, batch_seconds=5)
    h.off_loop.run()
    h.send("a")
    h.tick(0, values=values)
    assert h.bolt._collector.now == advanced  # noqa: SLF001


def test_the_real_gil_release_runs_while_a_batch_is_in_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, batch_size=1000)
    h.off_loop.run()
    h.send("a")
    h.bolt._close(h.bolt._collector.drain()[0])  # noqa: SLF001
    h.send(*words(bolt_module._YIELD_EVERY))  # noqa: SLF001 - the last one yields, for real
    assert len(h.bolt._collector.open) == 1  # noqa: SLF001


class ProcessBatchOnly(SparkBatchBolt):
    outputs = ["word", "count"]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seen: list[tuple[Any, int]] = []

    def process_batch(self, df: Any, batch_id: int) -> Any:
        self.seen.append((df, batch_id))
        return None


def test_process_stream_batch_hands_the_dataframe_and_id_to_process_batch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, bolt_cls=ProcessBatchOnly, batch_size=1)  # type: ignore[arg-type]
    h.off_loop.run()
    h.send("a", "b")
    h.off_loop.run()
    seen = h.bolt.seen  # type: ignore[attr-defined]
    assert [(df.rows, i) for df, i in seen] == [([["a", 1]], 0), ([["b", 1]], 1)]


def test_the_master_probe_pause_defaults_to_5_s(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(bolt_module.time, "sleep", slept.append)
    h = Harness(monkeypatch, batch_size=1)
    h.unreachable = True
    h.off_loop.run()  # the warm-up fails (no pause: it is not a batch)
    h.send("a")
    h.off_loop.run()
    assert slept == [5.0] and h.failed == ["a"]


def test_a_failure_report_holds_the_whole_traceback_and_ends_with_the_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, batch_size=1)
    h.off_loop.run()
    h.bolt.raise_ = RuntimeError("job aborted")
    h.send("a")
    h.off_loop.run()
    (report,) = h.errors
    assert "Traceback (most recent call last):\n  File " in report
    assert report.endswith("RuntimeError: job aborted")


def test_a_cancel_stops_at_once_when_the_session_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, conf={"spark.stormpy.batch.timeout.secs": 5}, batch_size=1)
    h.off_loop.run()
    h.alive = False
    h.restart = False

    def slow() -> None:
        h.clock.now += 6
        h.tick(0.1)
        for _ in range(50):
            time.sleep(0.01)
    h.bolt.during = slow
    h.send("a")
    h.off_loop.run()
    assert sum(1 for x in h.session.log if x[0] == "cancel") == 1 and h.resets == []


# -- the process's switch interval ------------------------------------------------------------

def test_a_spark_bolt_holds_the_switch_interval_low_until_the_last_one_cleans_up(
        monkeypatch: pytest.MonkeyPatch) -> None:
    before = sys.getswitchinterval()  # the autouse fixture puts it back after the test
    first = Harness(monkeypatch)
    assert sys.getswitchinterval() == pytest.approx(0.0005)
    second = Harness(monkeypatch, conf={SWITCH_INTERVAL_KEY: 0.002})  # not lower: kept
    assert sys.getswitchinterval() == pytest.approx(0.0005)
    first.bolt.cleanup()
    assert sys.getswitchinterval() == pytest.approx(0.0005)
    first.bolt.cleanup()  # a second cleanup drops nothing more
    assert sys.getswitchinterval() == pytest.approx(0.0005)
    second.bolt.cleanup()
    assert sys.getswitchinterval() == pytest.approx(before)


def test_a_switch_interval_of_none_or_zero_leaves_the_process_s_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    before = sys.getswitchinterval()
    for value in (0, 0.0):
        h = Harness(monkeypatch, conf={SWITCH_INTERVAL_KEY: value})
        assert sys.getswitchinterval() == before
        h.bolt.cleanup()
        assert sys.getswitchinterval() == before
    assert bolt_module.switching.configured({SWITCH_INTERVAL_KEY: None}, "spark") is None
    assert bolt_module.switching.lower(None) is False
    assert sys.getswitchinterval() == before


@pytest.mark.parametrize("value", [-0.001, "fast", True])
def test_a_bad_switch_interval_names_the_setting_and_the_component(
        monkeypatch: pytest.MonkeyPatch, value: Any) -> None:
    with pytest.raises(SettingError, match=rf"^{SWITCH_INTERVAL_KEY}: must be a number of "
                                           r"seconds >= 0 or None, got .* \(component 'spark'\)"):
        Harness(monkeypatch, conf={SWITCH_INTERVAL_KEY: value})


@pytest.mark.parametrize(("key", "value"), [
    ("spark.stormpy.batch.timeout.secs", -1), ("spark.stormpy.batch.timeout.secs", "long"),
    ("spark.stormpy.master.probe.secs", -2), ("spark.stormpy.master.probe.secs", [5]),
    ("spark.stormpy.batch.timeout.max.secs", -1), ("spark.stormpy.batch.timeout.max.secs", "x"),
])
def test_bad_spark_settings_are_named_at_prepare(monkeypatch: pytest.MonkeyPatch, key: str,
                                                 value: Any) -> None:
    with pytest.raises(SettingError) as err:
        Harness(monkeypatch, conf={key: value})
    assert err.value.setting == key
