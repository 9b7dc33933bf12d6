"""The coordinated bolt on its own (a RecordingCollector for the runtime): a batch finishes once
every upstream task reported and every reported tuple arrived, then reports its own counts per
downstream task anchored to what it held; failures fail the batch and name step and attempt;
finish_in_background; a committer waits for its commit tuple; batches nobody finishes are dropped
after the message timeout; a BasicBolt's emits are counted per batch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stormpy.state import MemoryBackend
from stormpy.testing import RecordingCollector, test_tuple
from stormpy.topology import BasicBolt, FailedException, Tuple
from stormpy.topology._context import TopologyContext
from stormpy.topology._fields import Fields
from stormpy.topology._grouping import DIRECT, SHUFFLE, Grouping
from stormpy.topology._imports import class_path
from stormpy.topology._layout import Executor, TaskLayout
from stormpy.topology._spec import BOLT, ComponentSpec, InputSpec, TopologySpec
from stormpy.topology._state import TRANSACTIONAL, StateUnavailableError
from stormpy.topology._streams import Stream
from stormpy.topology._tuple import SYSTEM_COMPONENT, TICK_STREAM
from stormpy.transactional import BatchBolt, TransactionAttempt
from stormpy.transactional._coordinated import CoordinatedBolt
from stormpy.transactional._coordinator import CURRENT_KEY
from stormpy.transactional._store import OWNER
from stormpy.transactional._streams import COMMIT_STREAM, COORD_STREAM, TICK_SECS

EVENTS: list[Any] = []


class Sum(BatchBolt):
    """Sums the batch's values; ``finish_batch`` emits the sum to task 9 (direct) and, per the
    class attributes, raises or hands work to the background."""

    outputs = [Stream(["id", "sum"], name="sums", direct=True)]
    raise_in_execute: BaseException | None = None
    raise_in_finish: BaseException | None = None
    background: str | None = None  # None, "ok", "no-then", "twice", "then-raises", "work-raises"

    def __init__(self, scale: int = 1) -> None:
        self.scale = scale
        self.total = 0

    @classmethod
    def prepare_task(cls, conf: Mapping[str, Any], context: TopologyContext) -> None:
        EVENTS.append(("prepare_task", context.component_id, conf.get("k")))

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        name = kwargs.get("stream", "sums")
        return {name: Stream(["id", "sum"], name=name, direct=True),
                "grand": Stream(["id", "total"], name="grand")}

    @classmethod
    def declare_config(cls, kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
        return {"user.scale": kwargs.get("scale", "unset")}

    @classmethod
    def cleanup_task(cls, conf: Mapping[str, Any], context: TopologyContext) -> None:
        EVENTS.append(("cleanup_task", context.component_id, conf.get("k")))

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: Any, id: Any) -> None:  # noqa: A002
        super().prepare(conf, context, collector, id)
        EVENTS.append(("prepare", id.key, conf.get("k")))
        self.report_error(f"batch {id.transaction_id} prepared")
        collector.report_error("via the collector")
        self.call_soon_threadsafe(lambda: self.report_error("soon"))
        self.run_in_background(lambda: 2, lambda result, error: self.report_error(result))

    def execute(self, tup: Tuple) -> None:
        if Sum.raise_in_execute is not None:
            raise Sum.raise_in_execute
        EVENTS.append(("execute", tup.stream, tup.task, tup.component, tup["v"]))
        self.total += tup.values[1] * self.scale

    def finish_batch(self) -> None:
        if Sum.raise_in_finish is not None:
            raise Sum.raise_in_finish
        mode = Sum.background
        if mode is None:
            self.emit_direct(9, [self.id, self.total], "sums")
            self.emit([self.id, self.total], "grand")
            return
        if mode == "no-then":
            self.collector.finish_in_background(lambda: None)
            return

        def work() -> int:
            if mode == "work-raises":
                raise ValueError("work failed")
            return self.total * 10

        def then(result: int) -> None:
            if mode == "then-raises":
                raise ValueError("then failed")
            self.emit_direct(9, [self.id, result], "sums")

        self.collector.finish_in_background(work, then)
        if mode == "twice":
            self.collector.finish_in_background(work, then)


class Upper(BasicBolt):
    outputs = [Stream(["id", "w"], name="words", direct=True), Stream(["id", "w"], name="plain")]
    cleaned: list[bool] = []

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        EVENTS.append(("basic prepare", conf.get("k"), context.component_id))

    def process(self, tup: Tuple) -> None:
        if tup.values[1] == "fail":
            raise FailedException("no")
        if tup.values[1] == "plain":
            self.emit([tup.values[0], "plain"], stream="plain")
            return
        if tup.values[1] == "runtime":
            self.report_error("reported")
            self.call_soon_threadsafe(lambda: self.report_error("soon"))
            self.run_in_background(lambda: 3, lambda result, error: self.report_error(result))
        self.emit_direct(8, [tup.values[0], tup.values[1].upper()], stream="words")

    def cleanup(self) -> None:
        Upper.cleaned.append(True)


@pytest.fixture(autouse=True)
def _reset() -> Any:
    Sum.raise_in_execute = Sum.raise_in_finish = None
    Sum.background = None
    EVENTS.clear()
    yield


def build(role: str = "batch", target: type = Sum, committer: bool = False,
          conf: Mapping[str, Any] | None = None) -> tuple[CoordinatedBolt, RecordingCollector]:
    """Component ``me`` (task 5) reading ``up`` (tasks 1, 2) and its counts; ``down`` (tasks 8,
    9) reads ``me``'s counts."""
    kwargs: dict[str, Any] = {"role": role, "target": class_path(target), "target_kwargs": {"scale": 1}
              if target is Sum else {}, "transactional_id": "tx-unit", "committer": committer}
    bolt = CoordinatedBolt(**kwargs)
    col = RecordingCollector()
    col.bind(bolt, kwargs=kwargs, component_id="me")
    me = ComponentSpec("me", BOLT, class_path(CoordinatedBolt), kwargs=kwargs,
                       streams=CoordinatedBolt.declare_outputs(kwargs),
                       inputs=[InputSpec("up", "default", Grouping(SHUFFLE)),
                               InputSpec("up", COORD_STREAM, Grouping(DIRECT))])
    down = ComponentSpec("down", BOLT, class_path(CoordinatedBolt),
                         inputs=[InputSpec("me", COORD_STREAM, Grouping(DIRECT))])
    up = ComponentSpec("up", BOLT, class_path(CoordinatedBolt))
    layout = TaskLayout({"up": [1, 2], "me": [5], "down": [8, 9]},
                        {1: "up", 2: "up", 5: "me", 8: "down", 9: "down"},
                        [Executor("up", 1, 2), Executor("me", 5, 5), Executor("down", 8, 9)])
    context = TopologyContext("t-1", TopologySpec({"up": up, "me": me, "down": down}), layout, 5,
                              [5], {}, state=MemoryBackend())
    bolt.prepare({"k": "v", **(conf or {})}, context)
    return bolt, col


def data(txid: int, value: Any, attempt: int = 0, task: int = 1) -> Tuple:
    return test_tuple([[txid, attempt], value], "up", task=task, fields=["id", "v"])


def report(txid: int, count: int, task: int, attempt: int = 0) -> Tuple:
    return test_tuple([[txid, attempt], count], "up", COORD_STREAM, task=task,
                      fields=["id", "count"])


def commit(txid: int, attempt: int = 0) -> Tuple:
    return test_tuple([[txid, attempt]], "coordinator", COMMIT_STREAM, fields=["id"])


def tick() -> Tuple:
    return Tuple([TICK_SECS], TICK_STREAM, -1, SYSTEM_COMPONENT, Fields(["rate"]))


def counts(col: RecordingCollector) -> list[tuple[int | None, list[Any], list[Tuple]]]:
    return [(e.task, e.values, e.anchors) for e in col.emitted if e.stream == COORD_STREAM]


def test_a_batch_finishes_once_every_report_and_tuple_arrived() -> None:
    bolt, col = build()
    assert EVENTS == [("prepare_task", "me", "v")]
    assert (bolt.num_reports, bolt.out_tasks, bolt.max_age) == (2, [8, 9], int(30 // TICK_SECS) + 2)
    a, b = data(1, 3), data(1, 4, task=2)
    r1, r2 = report(1, 1, 1), report(1, 1, 2)
    for t in (a, r1, r2):
        bolt.execute(t)
    assert counts(col) == [] and col.acked == [a]  # task 2's tuple is missing
    bolt.execute(b)
    assert col.emitted_values("sums") == [[[1, 0], 7]] and col.emitted_values("grand") == [[[1, 0], 7]]
    # one bolt per batch, given the conf; it sees each tuple as received, with the attempt
    assert EVENTS[1:] == [("prepare", (1, 0), "v"), ("execute", "default", 1, "up", 3),
                          ("execute", "default", 2, "up", 4)]
    assert col.errors == ["batch 1 prepared", "via the collector", "soon", 2]  # the task's runtime
    assert counts(col) == [(8, [[1, 0], 0], [r1, r2]), (9, [[1, 0], 1], [r1, r2])]
    assert col.acked == [a, b, r1, r2] and col.failed == [] and bolt.tracked == {}


def test_a_batch_with_no_tuple_for_this_task_finishes_on_the_reports_alone() -> None:
    bolt, col = build()
    bolt.execute(report(2, 0, 1))
    assert counts(col) == []
    bolt.execute(report(2, 0, 2))
    assert col.emitted_values("sums") == [[[2, 0], 0]]
    assert [c[1] for c in counts(col)] == [[[2, 0], 0], [[2, 0], 1]]  # the sum went to task 9


@pytest.mark.parametrize(("error", "reported"), [
    (KeyError("x"), "component 'me' execute failed for transaction 1 attempt 3: KeyError: 'x'"),
    (FailedException("quiet"), None)])
def test_an_error_in_execute_fails_the_batch_and_its_later_tuples(error: BaseException,
                                                                   reported: str | None) -> None:
    bolt, col = build()
    held = report(1, 2, 1, attempt=3)
    bolt.execute(held)
    Sum.raise_in_execute = error
    first = data(1, 1, attempt=3)
    bolt.execute(first)
    assert col.failed == [held, first] and [str(e) for e in col.errors[4:]] == (
        [reported] if reported else [])
    Sum.raise_in_execute = None
    later, other = data(1, 2, attempt=3), data(1, 2, attempt=4)
    bolt.execute(later)
    bolt.execute(other)  # the replay's attempt is a batch of its own
    assert col.failed == [held, first, later] and col.acked == [other]


def test_an_error_in_finish_batch_fails_the_held_reports() -> None:
    bolt, col = build()
    Sum.raise_in_finish = RuntimeError("disk full")
    r1, r2 = report(1, 0, 1), report(1, 0, 2)
    bolt.execute(r1)
    bolt.execute(r2)
    assert col.failed == [r1, r2] and counts(col) == []
    assert [str(e) for e in col.errors[4:]] == [
        "component 'me' finish_batch failed for transaction 1 attempt 0: RuntimeError: disk full"]


def test_finish_in_background_completes_the_batch_after_then() -> None:
    Sum.background = "ok"
    bolt, col = build()
    bolt.execute(data(1, 2))
    bolt.execute(report(1, 1, 1))
    bolt.execute(report(1, 0, 2))
    assert col.emitted_values("sums") == [[[1, 0], 20]] and len(counts(col)) == 2
    assert bolt.tracked == {}


@pytest.mark.parametrize(("mode", "message"), [
    ("then-raises", "ValueError: then failed"), ("work-raises", "ValueError: work failed"),
    ("twice", "RuntimeError: finish_in_background was already called for this batch")])
def test_background_failures_fail_the_batch(mode: str, message: str) -> None:
    Sum.background = mode
    bolt, col = build()
    r1, r2 = report(1, 0, 1), report(1, 0, 2)
    bolt.execute(r1)
    bolt.execute(r2)
    assert col.failed == [r1, r2] and counts(col) == [] and col.emitted_values("sums") == []
    assert [str(e) for e in col.errors[4:]] == [
        f"component 'me' finish_batch failed for transaction 1 attempt 0: {message}"]


def test_finish_in_background_without_then_completes_the_batch() -> None:
    Sum.background = "no-then"
    bolt, col = build()
    r1, r2 = report(1, 0, 1), report(1, 0, 2)
    bolt.execute(r1)
    bolt.execute(r2)
    assert col.acked == [r1, r2] and col.failed == [] and len(counts(col)) == 2


def test_a_background_result_for_an_expired_batch_is_dropped() -> None:
    Sum.background = "ok"
    bolt, col = build(conf={"topology.message.timeout.secs": 10})
    later: list[Any] = []
    bolt.run_in_background = lambda fn, on_done: later.append((fn, on_done))  # type: ignore[method-assign]
    r1, r2 = report(1, 0, 1), report(1, 0, 2)
    bolt.execute(r1)
    bolt.execute(r2)
    for _ in range(bolt.max_age + 1):
        bolt.execute(tick())
    assert col.failed == [r1, r2] and bolt.tracked == {}
    fn, on_done = later[-1]  # the finish job (the first is the one prepare started)
    on_done(fn(), None)
    assert counts(col) == [] and col.emitted_values("sums") == []


def test_batches_nobody_finishes_are_dropped_after_the_message_timeout() -> None:
    bolt, col = build(conf={"topology.message.timeout.secs": 10})
    assert bolt.max_age == 4
    held = report(1, 5, 1)
    bolt.execute(held)
    for _ in range(4):
        bolt.execute(tick())
    assert col.failed == [] and (1, 0) in bolt.tracked
    bolt.execute(tick())
    assert col.failed == [held] and bolt.tracked == {}
    default, _ = build(conf={"topology.message.timeout.secs": None})
    assert default.max_age == 8


def test_a_committer_waits_for_its_commit_tuple_and_holds_it_instead_of_the_reports() -> None:
    bolt, col = build(committer=True)
    r1, r2 = report(1, 0, 1), report(1, 0, 2)
    bolt.execute(r1)
    bolt.execute(r2)
    assert col.acked == [r1, r2] and counts(col) == []
    c = commit(1)
    bolt.execute(c)
    assert [anchors for _t, _v, anchors in counts(col)] == [[c], [c]] and col.acked[-1] == c


def test_a_committer_skips_a_commit_the_store_has_committed_past() -> None:
    """A stale coordinator's commit tuple (its host was cut off while the topology committed on
    elsewhere) completes without the wrapped committer: applying it again would count its batch
    twice. A commit at the store's next txid is applied."""
    bolt, col = build(committer=True)
    # 1 and 2 committed, in the store the coordinator of the same transactional id writes
    bolt.context.state_backend.named_store(TRANSACTIONAL, OWNER, "tx-unit").put(CURRENT_KEY, 3)
    for txid in (2, 3):
        for task in (1, 2):
            bolt.execute(report(txid, 1 if task == 1 else 0, task))
        bolt.execute(data(txid, 10 * txid))
        c = commit(txid)
        bolt.execute(c)
        assert col.acked[-1] == c
    assert [e.values for e in col.emitted if e.stream == "grand"] == [[[3, 0], 30]]  # not 2
    assert len(counts(col)) == 4  # both commits report their counts (their trees complete)


def test_a_committer_fails_a_commit_while_the_store_cannot_be_read() -> None:
    bolt, col = build(committer=True)
    store = bolt.store()

    def unreachable(key: str, default: Any = None) -> Any:
        raise StateUnavailableError(store.where(key), "ZooKeeper unreachable")
    store.get = unreachable  # type: ignore[method-assign]
    bolt.execute(report(1, 0, 1))
    bolt.execute(report(1, 0, 2))
    c = commit(1)
    bolt.execute(c)
    assert col.failed == [c] and c not in col.acked
    assert [e for e in col.emitted if e.stream == "grand"] == []
    assert col.errors == []  # a store that cannot be read fails the commit; it is no error


def test_a_basic_bolt_counts_its_emits_per_batch_and_emits_only_while_processing() -> None:
    Upper.cleaned.clear()
    bolt, col = build("basic", Upper)
    assert EVENTS == [("basic prepare", "v", "me")]
    with pytest.raises(RuntimeError, match="emits only while it processes a tuple"):
        bolt.basic.emit([[1, 0], "x"])  # type: ignore[union-attr]
    bolt.execute(data(3, "runtime"))
    assert col.errors == ["reported", "soon", 3]
    col.clear()
    bolt.execute(data(1, "a"))
    bolt.execute(report(1, 1, 1))
    bolt.execute(report(1, 0, 2))
    assert col.emitted_values("words") == [[[1, 0], "A"]]
    bolt.execute(data(4, "plain"))
    assert col.emitted_values("plain") == [[[4, 0], "plain"]]
    assert [c[1] for c in counts(col)] == [[[1, 0], 1], [[1, 0], 0]]  # one tuple sent to task 8
    basic: Any = bolt.basic
    for call in (lambda: basic.emit([[1, 0], "x"]), lambda: basic.emit_direct(8, [[1, 0], "x"])):
        with pytest.raises(RuntimeError) as err:
            call()
        assert str(err.value) == ("a BasicBolt in a transactional topology emits only while it "
                                  "processes a tuple")
    failing = data(2, "fail")
    bolt.execute(failing)
    assert col.failed == [failing] and col.errors == []
    bolt.cleanup()
    assert Upper.cleaned == [True]


class Reserved(BatchBolt):
    outputs = [Stream(["id"], name="$mine")]


def test_declarations_and_roles() -> None:
    kwargs = {"role": "batch", "target": class_path(Sum), "target_kwargs": {"stream": "totals",
                                                                           "scale": 3}}
    streams = CoordinatedBolt.declare_outputs(kwargs)
    assert sorted(streams) == [COORD_STREAM, "grand", "totals"] and streams[COORD_STREAM].direct
    assert list(streams[COORD_STREAM].fields) == ["id", "count"]
    assert streams[COORD_STREAM].name == COORD_STREAM
    assert CoordinatedBolt.declare_config(kwargs) == {"user.scale": 3,
                                                      "topology.tick.tuple.freq.secs": TICK_SECS}
    bare = {"role": "batch", "target": class_path(Sum)}
    assert sorted(CoordinatedBolt.declare_outputs(bare)) == [COORD_STREAM, "grand", "sums"]
    assert CoordinatedBolt.declare_config(bare) == {"user.scale": "unset",
                                                    "topology.tick.tuple.freq.secs": TICK_SECS}
    with pytest.raises(ValueError) as reserved:
        CoordinatedBolt.declare_outputs({"role": "batch", "target": class_path(Reserved)})
    assert str(reserved.value) == ("Reserved: stream names starting with '$' are reserved in "
                                   "transactional topologies ('$mine')")
    from stormpy.transactional._coordinator import CoordinatorSpout
    from stormpy.transactional._streams import BATCH_STREAM
    spout_streams = CoordinatorSpout.declare_outputs({})
    assert [(k, v.name, list(v.fields)) for k, v in spout_streams.items()] == [
        (BATCH_STREAM, BATCH_STREAM, ["id", "meta", "committed"]),
        (COMMIT_STREAM, COMMIT_STREAM, ["id"])]
    with pytest.raises(ValueError) as err:
        CoordinatedBolt("spout", class_path(Sum), {}, "tx")
    assert str(err.value) == "unknown coordinated role 'spout'"
    bolt, _ = build()
    bolt.cleanup()
    assert EVENTS[-1] == ("cleanup_task", "me", "v")


def test_tuples_carrying_the_attempt_itself_belong_to_one_batch() -> None:
    bolt, col = build()
    attempt = TransactionAttempt(1, 0)
    parts = [test_tuple([attempt, 5], "up", task=1, fields=["id", "v"]),
             test_tuple([attempt, 1], "up", COORD_STREAM, task=1, fields=["id", "count"]),
             test_tuple([attempt, 0], "up", COORD_STREAM, task=2, fields=["id", "count"])]
    for t in parts:
        bolt.execute(t)
    assert col.emitted_values("sums") == [[[1, 0], 5]] and bolt.tracked == {}
