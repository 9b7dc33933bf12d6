"""The checkpoint executors on their own (a RecordingCollector for the runtime): barrier
alignment over every sending task, superseded checkpoints, a BasicBolt's anchoring and failing
under the forwarder, and the stateful executor's buffering until INITSTATE, deferred acks across
PREPARE/COMMIT, and failing on ROLLBACK or a PREPARE before its state exists."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stormpy.state import CHECKPOINT_STREAM, KeyValueState, MemoryBackend, StatefulBolt, Store
from stormpy.state._bolt import WRAPPED, CheckpointTupleForwarder, StatefulBoltExecutor
from stormpy.testing import RecordingCollector, test_tuple
from stormpy.topology import BasicBolt, Bolt, FailedException, Tuple
from stormpy.topology._context import TopologyContext
from stormpy.topology._grouping import ALL, SHUFFLE, Grouping
from stormpy.topology._imports import class_path
from stormpy.topology._layout import Executor, TaskLayout
from stormpy.topology._spec import BOLT, ComponentSpec, InputSpec, TopologySpec
from stormpy.topology._streams import Stream

TOPOLOGY = "exec-topology"


class Upper(BasicBolt):
    """Emits each word upper-cased (and, for "direct", to task 9 too); fails "bad"."""

    outputs = [Stream(["w"]), Stream(["w"], name="d", direct=True)]
    cleaned: list[str] = []

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        extra = kwargs.get("extra", "other")
        return {"default": Stream(["w"]), "d": Stream(["w"], name="d", direct=True),
                extra: Stream(["w"], name=extra)}

    @classmethod
    def declare_config(cls, kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
        return {"from.user": kwargs}

    def process(self, tup: Tuple) -> None:
        word = tup.values[0]
        if word == "bad":
            raise FailedException(word)
        self.emit([word.upper()])
        if word == "direct":
            self.emit_direct(9, [word], stream="d")
        if word == "explicit":
            self.emit([word], anchors=[])
            self.emit_direct(9, [word], anchors=[], stream="d")
            self.emit([word], stream="other")

    def cleanup(self) -> None:
        Upper.cleaned.append("upper")


class Plain(Bolt):
    """An ordinary bolt: emits unanchored, acks by itself."""

    outputs = [Stream(["w"]), Stream(["w"], name="d", direct=True)]

    def execute(self, tup: Tuple) -> None:
        self.emit([tup.values[0]])
        self.ack(tup)


class Counter(StatefulBolt):
    """Counts words in its state; records the hooks it saw."""

    outputs = ["w", "n"]
    hooks: list[Any] = []

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        Counter.hooks.append(("prepare", conf.get("topology.name"), context.component_id))

    def init_state(self, state: KeyValueState) -> None:
        Counter.hooks.append(("init", dict(state.items())))
        self.state = state

    def execute(self, tup: Tuple) -> None:
        word = tup.values[0]
        self.state.put(word, self.state.get(word, 0) + 1)
        self.ack(tup)

    def pre_prepare(self, txid: int) -> None:
        Counter.hooks.append(("pre_prepare", txid))

    def pre_commit(self, txid: int) -> None:
        Counter.hooks.append(("pre_commit", txid))

    def pre_rollback(self) -> None:
        Counter.hooks.append(("pre_rollback",))

    def cleanup(self) -> None:
        raise RuntimeError("user cleanup failed")


class BasicCounter(StatefulBolt, BasicBolt):
    outputs = ["w"]

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def process(self, tup: Tuple) -> None:
        self.state.put(tup.values[0], True)
        self.emit([tup.values[0]])


def build(wrapper: type[CheckpointTupleForwarder], bolt: type[Bolt], upstream_tasks: int = 2,
          name: str = "t", conf: Mapping[str, Any] | None = None,
          other: bool = False, restart: bool = False) -> tuple[Any, RecordingCollector]:
    """``bolt`` wrapped, as task 10 of component ``me`` reading ``up`` (``upstream_tasks``
    tasks) and its checkpoints, prepared with a memory state store (a fresh one, or with
    ``restart`` the one an earlier build of the same name left)."""
    kwargs = {WRAPPED: class_path(bolt)}
    ex = wrapper(**kwargs)
    col = RecordingCollector()
    col.bind(ex, kwargs=kwargs, component_id="me")
    up_tasks = list(range(1, upstream_tasks + 1))
    me = ComponentSpec("me", BOLT, class_path(wrapper), kwargs=kwargs,
                       streams=wrapper.declare_outputs(kwargs),
                       inputs=[InputSpec("up", "default", Grouping(SHUFFLE)),
                               *([InputSpec("up", "other", Grouping(SHUFFLE))] if other else []),
                               InputSpec("up", CHECKPOINT_STREAM, Grouping(ALL))])
    up = ComponentSpec("up", BOLT, class_path(Plain), tasks=upstream_tasks)
    layout = TaskLayout({"up": up_tasks, "me": [10]}, {**{t: "up" for t in up_tasks}, 10: "me"},
                        [Executor("up", 1, upstream_tasks), Executor("me", 10, 10)])
    if not restart:
        BACKEND.drop(TOPOLOGY)
    context = TopologyContext(TOPOLOGY, TopologySpec({"up": up, "me": me}), layout, 10, [10], {},
                              state=BACKEND)
    ex.prepare({"topology.name": name, **(conf or {})}, context)
    return ex, col


#: The memory the executors' state lives in (a LocalCluster's role); a restarted task finds it.
BACKEND = MemoryBackend()


def task_store() -> Store:
    """The memory provider's store of task 10 (per topology id)."""
    return BACKEND.store("checkpoints", TOPOLOGY).sub("$state", "me-10")


def word(w: str) -> Tuple:
    return test_tuple([w], "up", fields=["w"])


def tracked(w: str, root: int) -> Tuple:
    """``w`` as a tuple in spout tuple ``root``'s tree (its spout replays it when it fails)."""
    t = word(w)
    t.root, t.edge = root, root + 1
    return t


def barrier(txid: int, action: str, task: int = 1) -> Tuple:
    return test_tuple([txid, action], "up", CHECKPOINT_STREAM, task=task, fields=["txid", "action"])


def checkpoints(col: RecordingCollector) -> list[tuple[list[Any], list[Tuple]]]:
    return [(e.values, e.anchors) for e in col.emitted if e.stream == CHECKPOINT_STREAM]


# -- the forwarder ------------------------------------------------------------------------------
def test_the_forwarder_declares_the_checkpoint_stream_and_the_users_config() -> None:
    kwargs = {WRAPPED: class_path(Upper), "extra": "more"}
    streams = CheckpointTupleForwarder.declare_outputs(kwargs)
    assert sorted(streams) == [CHECKPOINT_STREAM, "d", "default", "more"]
    assert list(streams[CHECKPOINT_STREAM].fields) == ["txid", "action"]
    assert streams[CHECKPOINT_STREAM].name == CHECKPOINT_STREAM
    assert CheckpointTupleForwarder.declare_config(kwargs) == {"from.user": {"extra": "more"}}


def test_a_checkpoint_is_forwarded_once_every_sending_task_delivered_it() -> None:
    ex, col = build(CheckpointTupleForwarder, Upper, upstream_tasks=3, other=True)
    assert ex.expected == 3  # the sending tasks of the checkpoint stream, not of every input
    first, second, third = barrier(1, "prepare", 1), barrier(1, "prepare", 2), barrier(1, "prepare", 3)
    ex.execute(first)
    ex.execute(second)
    assert checkpoints(col) == [] and col.acked == []
    ex.execute(third)
    assert checkpoints(col) == [([1, "prepare"], [first, second, third])]
    assert col.acked == [first, second, third] and col.failed == []
    col.clear()
    again = [barrier(1, "prepare", t) for t in (1, 2, 3)]  # the same checkpoint replayed
    for t in again:
        ex.execute(t)
    assert checkpoints(col) == [([1, "prepare"], again)]


def test_a_newer_checkpoint_fails_the_unfinished_older_ones() -> None:
    ex, col = build(CheckpointTupleForwarder, Upper, upstream_tasks=2)
    old, same_tx, newer = barrier(1, "prepare", 1), barrier(2, "commit", 1), barrier(3, "prepare", 1)
    for t in (old, same_tx, newer):
        ex.execute(t)
    done = [barrier(2, "prepare", 1), barrier(2, "prepare", 2)]
    for t in done:
        ex.execute(t)
    assert col.failed == [old, same_tx]  # txid 1 and 2 are superseded; 3 still waits
    assert checkpoints(col) == [([2, "prepare"], done)]
    ex.execute(barrier(3, "prepare", 2))
    assert [v for v, _ in checkpoints(col)] == [[2, "prepare"], [3, "prepare"]]


def test_a_checkpoint_sent_again_completes_with_one_copy_of_it_from_every_sender() -> None:
    """The spout resends a timed-out checkpoint with the same (txid, action): a copy of the
    earlier attempt still held (the other sender's copy died with its worker) is replaced by the
    same sender's newer copy, and the checkpoint completes only when every sender's copy of the
    current attempt arrived."""
    ex, col = build(CheckpointTupleForwarder, Upper, upstream_tasks=2)
    first = barrier(9, "commit", 1)  # attempt 1: task 2's copy was lost
    ex.execute(first)
    again = barrier(9, "commit", 1)  # attempt 2
    ex.execute(again)
    assert checkpoints(col) == [] and col.failed == [first]
    other = barrier(9, "commit", 2)
    ex.execute(other)
    assert checkpoints(col) == [([9, "commit"], [again, other])]
    assert col.acked == [again, other] and ex._seen == {}


def test_a_basic_bolt_under_the_forwarder_anchors_acks_and_fails_as_usual() -> None:
    ex, col = build(CheckpointTupleForwarder, Upper)
    assert ex.basic
    a, d, bad, e = word("a"), word("direct"), word("bad"), word("explicit")
    for t in (a, d, bad, e):
        ex.execute(t)
    assert [(x.values, x.stream, x.anchors, x.task) for x in col.emitted] == [
        (["A"], "default", [a], None), (["DIRECT"], "default", [d], None),
        (["direct"], "d", [d], 9), (["EXPLICIT"], "default", [e], None),
        (["explicit"], "default", [], None), (["explicit"], "d", [], 9),
        (["explicit"], "other", [e], None)]
    assert col.acked == [a, d, e] and col.failed == [bad]
    ex.bolt.emit(["late"])  # outside process: no current input
    assert col.emitted[-1].anchors == []
    Upper.cleaned.clear()
    ex.cleanup()
    assert Upper.cleaned == ["upper"]


def test_an_ordinary_bolt_under_the_forwarder_emits_and_acks_itself() -> None:
    ex, col = build(CheckpointTupleForwarder, Plain)
    assert not ex.basic
    a = word("a")
    ex.execute(a)
    assert [(x.values, x.anchors) for x in col.emitted] == [(["a"], [])] and col.acked == [a]
    bolt = ex.bolt
    bolt.fail(a)
    bolt.reset_timeout(a)
    bolt.report_error("e")
    bolt.call_soon_threadsafe(lambda: bolt.report_error("soon"))
    bolt.run_in_background(lambda: 1, lambda r, exc: bolt.report_error(r))
    bolt.emit_direct(3, ["x"], stream="d")
    assert (col.emitted[-1].task, col.emitted[-1].anchors) == (3, [])
    assert col.failed == [a] and col.timeouts_reset == [a] and col.errors == ["e", "soon", 1]


# -- the stateful executor ----------------------------------------------------------------------
def init(ex: Any, txid: int = 0) -> None:
    ex.execute(barrier(txid, "initstate", 1))
    ex.execute(barrier(txid, "initstate", 2))


def test_tuples_wait_for_the_state_and_acks_wait_for_the_commit() -> None:
    Counter.hooks.clear()
    ex, col = build(StatefulBoltExecutor, Counter, name="wait")
    a, b = word("a"), word("b")
    ex.execute(a)
    ex.execute(b)
    assert ex.buffered == [a, b] and Counter.hooks == [("prepare", "wait", "me")]
    init(ex)
    assert Counter.hooks[1:] == [("init", {})] and ex.buffered == [] and ex.initialized
    assert dict(ex.state.items()) == {"a": 1, "b": 1} and col.acked[2:] == []
    assert Counter.hooks[0] == ("prepare", "wait", "me")
    assert [v for v, _ in checkpoints(col)] == [[0, "initstate"]]
    col.clear()
    ex.execute(barrier(1, "prepare", 1))
    ex.execute(barrier(1, "prepare", 2))
    assert Counter.hooks[2:] == [("pre_prepare", 1)] and ex.prepared == [a, b]
    store = task_store()
    assert "p.1" in store.names()
    c = word("a")
    ex.execute(c)  # after the prepare: acked at the next commit
    assert [t for t in col.acked if t.stream != CHECKPOINT_STREAM] == []
    ex.execute(barrier(1, "commit", 1))
    ex.execute(barrier(1, "commit", 2))
    assert Counter.hooks[3:] == [("pre_commit", 1)]
    assert [t for t in col.acked if t.stream != CHECKPOINT_STREAM] == [a, b]
    assert ex.pending == [c] and ex.prepared == []
    assert dict(KeyValueState(store).items()) == {"a": 1, "b": 1}  # c is not committed yet
    assert dict(ex.state.items()) == {"a": 2, "b": 1}


def test_a_rollback_fails_every_uncommitted_input_and_restores_the_state() -> None:
    Counter.hooks.clear()
    ex, col = build(StatefulBoltExecutor, Counter, name="rollback")
    init(ex)
    a, b = word("a"), word("b")
    ex.execute(a)
    ex.execute(barrier(1, "prepare", 1))
    ex.execute(barrier(1, "prepare", 2))
    ex.execute(b)
    ex.execute(barrier(1, "rollback", 1))
    ex.execute(barrier(1, "rollback", 2))
    assert Counter.hooks[-1] == ("pre_rollback",)
    assert col.failed == [a, b] and ex.prepared == [] and ex.pending == []
    assert dict(ex.state.items()) == {}
    assert [v for v, _ in checkpoints(col)][-1] == [1, "rollback"]


def test_initstate_again_fails_what_was_uncommitted_without_initialising_twice() -> None:
    Counter.hooks.clear()
    ex, col = build(StatefulBoltExecutor, Counter, name="again")
    init(ex)
    a = word("a")
    ex.execute(a)
    init(ex)
    assert col.failed == [a] and dict(ex.state.items()) == {}
    assert [h for h in Counter.hooks if h[0] == "init"] == [("init", {})]
    b = word("b")
    ex.execute(b)  # runs at once: the state is there
    assert dict(ex.state.items()) == {"b": 1}


def test_a_prepare_before_the_state_exists_fails_the_checkpoint() -> None:
    ex, col = build(StatefulBoltExecutor, Counter, name="early")
    first, second = barrier(1, "prepare", 1), barrier(1, "prepare", 2)
    ex.execute(first)
    ex.execute(second)
    assert checkpoints(col) == [] and col.failed == [first, second] and col.acked == []


def test_a_stateful_basic_bolt_is_buffered_then_anchored_and_acked_at_commit() -> None:
    ex, col = build(StatefulBoltExecutor, BasicCounter, name="basic")
    a = word("a")
    ex.execute(a)
    assert ex.buffered == [a] and col.emitted == []
    ex.run_user(word("b"))  # the forwarder's path buffers too
    assert len(ex.buffered) == 2
    init(ex)
    assert [(x.values, x.anchors) for x in col.emitted if x.stream == "default"] == [
        (["a"], [a]), (["b"], [ex.pending[1]])]
    c = word("c")
    ex.execute(c)
    assert ex.pending[-1] is c and dict(ex.state.items()) == {"a": True, "b": True, "c": True}
    for action in ("prepare", "commit"):
        ex.execute(barrier(1, action, 1))
        ex.execute(barrier(1, action, 2))
    assert [t.values for t in col.acked if t.stream == "default"] == [["a"], ["b"], ["c"]]


def test_the_state_store_is_per_task_and_closed_even_when_the_user_cleanup_fails() -> None:
    ex, _ = build(StatefulBoltExecutor, Counter, name="named")
    assert ex.state.store.location == f"memory:checkpoints/{TOPOLOGY}/$state/me-10"
    closed: list[bool] = []
    ex.state.store.close = lambda: closed.append(True)
    with pytest.raises(RuntimeError, match="user cleanup failed"):
        ex.cleanup()
    assert closed == [True]
    unnamed, _ = build(StatefulBoltExecutor, Counter, name="")
    assert unnamed.state.store.location == f"memory:checkpoints/{TOPOLOGY}/$state/me-10"


class Direct(BasicBolt):
    """A BasicBolt whose default stream is direct."""

    outputs = [Stream(["w"], direct=True)]

    def process(self, tup: Tuple) -> None:
        self.emit_direct(3, [tup.values[0]])


def test_a_basic_bolts_direct_emit_goes_to_the_default_stream_anchored() -> None:
    ex, col = build(CheckpointTupleForwarder, Direct)
    a = word("a")
    ex.execute(a)
    assert [(e.values, e.stream, e.anchors, e.task) for e in col.emitted] == [
        (["a"], "default", [a], 3)]


def test_a_repeated_prepare_keeps_every_ack_for_the_commit() -> None:
    ex, col = build(StatefulBoltExecutor, Counter, name="twice")
    init(ex)
    a, b = word("a"), word("b")
    ex.execute(a)
    for t in (barrier(1, "prepare", 1), barrier(1, "prepare", 2)):
        ex.execute(t)
    ex.execute(b)
    for t in (barrier(1, "prepare", 1), barrier(1, "prepare", 2)):  # the same checkpoint again
        ex.execute(t)
    for t in (barrier(1, "commit", 1), barrier(1, "commit", 2)):
        ex.execute(t)
    assert [t for t in col.acked if t.stream != CHECKPOINT_STREAM] == [a, b]
    assert dict(KeyValueState(task_store()).items()) == {"a": 1, "b": 1}


def test_a_task_restarted_after_its_prepare_commits_nothing_and_the_replays_count_once() -> None:
    Counter.hooks.clear()
    ex, col = build(StatefulBoltExecutor, Counter, name="restart")
    init(ex)
    a, b = word("a"), word("b")
    ex.execute(a)
    ex.execute(b)
    ex.execute(barrier(1, "prepare", 1))
    ex.execute(barrier(1, "prepare", 2))
    assert ex.prepared == [a, b]
    # the worker dies here: a and b were never acked, so their spout tuples time out and replay
    Counter.hooks.clear()
    again, col2 = build(StatefulBoltExecutor, Counter, name="restart", restart=True)
    store = task_store()
    assert "p.1" not in store.names()  # the effect of inputs that will be replayed is dropped
    again.execute(barrier(1, "commit", 1))
    again.execute(barrier(1, "commit", 2))
    assert [v for v, _ in checkpoints(col2)] == [[1, "commit"]]  # the protocol goes on
    assert ("pre_commit", 1) not in Counter.hooks  # no user state yet: no user hook
    assert KeyValueState(store).committed_txid == 0
    init(again)
    again.execute(word("a"))  # the replays
    again.execute(word("b"))
    again.execute(barrier(2, "prepare", 1))
    again.execute(barrier(2, "prepare", 2))
    again.execute(barrier(2, "commit", 1))
    again.execute(barrier(2, "commit", 2))
    assert dict(KeyValueState(store).items()) == {"a": 1, "b": 1}


def test_a_replay_buffered_beside_its_timed_out_copy_counts_once() -> None:
    """A restarted task buffers inputs until INITSTATE, through a recovery that can outlast the
    message timeout: a replay of an input whose spout tuple timed out in the buffer is buffered
    beside it. Every tracked input buffered is failed at INITSTATE (replayed once more, and run
    then); the untracked ones (never replayed) run."""
    ex, col = build(StatefulBoltExecutor, Counter, name="buffered-replay")
    first, replay = tracked("a", 100), tracked("a", 200)  # the same spout tuple, emitted twice
    loose = word("b")
    for t in (first, replay, loose):
        ex.execute(t)
    init(ex)
    assert col.failed == [first, replay]
    assert dict(ex.state.items()) == {"b": 1} and ex.pending == [loose]
    last = tracked("a", 300)  # the spout's replay after the fails: runs at once
    ex.execute(last)
    for action in ("prepare", "commit"):
        ex.execute(barrier(1, action, 1))
        ex.execute(barrier(1, action, 2))
    assert [t for t in col.acked if t.stream != CHECKPOINT_STREAM] == [loose, last]
    assert dict(KeyValueState(task_store()).items()) == {"a": 1, "b": 1}


class Windowed(StatefulBolt):
    """A stateful bolt that keeps more than the user's map (a persisted window, say): it is told
    each time the state goes back to the last commit."""

    outputs = ["w"]
    told: list[str] = []

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, tup: Tuple) -> None:
        self.state.put(tup.values[0], True)
        self.ack(tup)

    def state_rolled_back(self) -> None:
        Windowed.told.append("rolled back")


def test_a_bolt_keeping_more_state_is_told_of_each_rollback_and_of_initstate_again() -> None:
    Windowed.told = []
    ex, _col = build(StatefulBoltExecutor, Windowed, name="windowed")
    init(ex)
    assert Windowed.told == []  # the first INITSTATE loads the state: nothing went back
    ex.execute(word("a"))
    ex.execute(barrier(1, "rollback", 1))
    ex.execute(barrier(1, "rollback", 2))
    assert Windowed.told == ["rolled back"]
    init(ex, 1)
    assert Windowed.told == ["rolled back", "rolled back"]


def test_the_forwarders_path_runs_the_user_bolt_once_the_state_is_there() -> None:
    ex, col = build(StatefulBoltExecutor, BasicCounter, name="basic-path")
    init(ex)
    c = word("c")
    ex.run_user(c)
    assert dict(ex.state.items()) == {"c": True}
    assert [(e.values, e.anchors) for e in col.emitted if e.stream == "default"] == [(["c"], [c])]
    assert ex.pending == [c]


def failing_reads(ex: Any) -> None:
    """The task's store refuses every read from now on (the service went away)."""
    from stormpy.topology._state import StateUnavailableError

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise StateUnavailableError(ex.state.store.location, "unreachable")

    ex.state.store.get = refuse


def test_a_store_failure_fails_the_input_and_is_logged_and_reported_first_and_every_1000th(
        caplog: pytest.LogCaptureFixture) -> None:
    ex, col = build(StatefulBoltExecutor, Counter, name="failing")
    init(ex)
    failing_reads(ex)
    inputs = [word(f"w{i}") for i in range(1001)]
    with caplog.at_level("ERROR", logger="stormpy.state"):
        for t in inputs:
            ex.execute(t)
    assert col.failed == inputs and ex.store_failures == 1001
    lines = [r.getMessage() for r in caplog.records if "failed on its state store" in r.getMessage()]
    assert len(lines) == 2 and len(col.errors) == 2  # the 1st and the 1000th
    assert lines[0].startswith("component me-10: a tuple from up failed on its state store "
                               "(1 failures so far;")
    assert "(1000 failures so far;" in lines[1]
    assert all("unreachable" in str(e) for e in col.errors)


def test_a_checkpoint_meeting_a_store_failure_is_failed_and_reported(
        caplog: pytest.LogCaptureFixture) -> None:
    from stormpy.topology._state import StateUnavailableError

    ex, col = build(StatefulBoltExecutor, Counter, name="failing-prepare")
    init(ex)
    ex.execute(word("a"))

    def refuse(*_args: Any, **_kwargs: Any) -> None:
        raise StateUnavailableError(ex.state.store.location, "unreachable")

    ex.state.store.put_many = refuse
    first, second = barrier(1, "prepare", 1), barrier(1, "prepare", 2)
    with caplog.at_level("ERROR", logger="stormpy.state"):
        ex.execute(first)
        ex.execute(second)
    assert [v for v, _ in checkpoints(col)] == [[0, "initstate"]]  # PREPARE 1 not forwarded
    assert first in col.failed and second in col.failed
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith("component me-10: checkpoint PREPARE 1 failed on its state store "
                           "(1 failures so far;")
    assert [str(e) for e in col.errors] == [f"state {ex.state.store.location}: unreachable"]
    assert ex.store_failures == 1


def test_the_inputs_are_acked_at_the_commit_point_before_the_fold() -> None:
    ex, col = build(StatefulBoltExecutor, Counter, name="ack-before-fold")
    init(ex)
    a = word("a")
    ex.execute(a)
    for t in (barrier(1, "prepare", 1), barrier(1, "prepare", 2)):
        ex.execute(t)
    acked_at_fold: list[list[Tuple]] = []
    write = ex.state.store.write_encoded

    def recording(*args: Any, **kwargs: Any) -> None:
        acked_at_fold.append([t for t in col.acked if t.stream != CHECKPOINT_STREAM])
        write(*args, **kwargs)

    ex.state.store.write_encoded = recording
    for t in (barrier(1, "commit", 1), barrier(1, "commit", 2)):
        ex.execute(t)
    assert acked_at_fold and acked_at_fold[0] == [a]
    assert dict(KeyValueState(task_store()).items()) == {"a": 1}


def test_the_state_keeps_the_configured_number_of_committed_values_in_memory() -> None:
    ex, _col = build(StatefulBoltExecutor, Counter, name="cache", conf={"topology.state.cache.max.keys": 7})
    assert ex.state.cache_max_keys == 7
