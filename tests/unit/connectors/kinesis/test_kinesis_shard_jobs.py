"""The Kinesis state manager's background jobs, run by hand (a deferred pool): one shard-start
job at a time with a start asked for meanwhile run after it, results for shards no longer owned
or already started, failed jobs reported and retried, the shard-list refresh and its write,
the end-of-shard checkpoint that lets children start, and round-robin over active shards."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from test_kinesis_parts import DeferredPool, FakeKinesis, MemoryStore, cfg

from stormpy.connectors.kinesis import Checkpoint, ShardInfo
from stormpy.connectors.kinesis._state import StateManager


def deferred(client: FakeKinesis, store: MemoryStore, clock: list[float], task: int = 0,
             tasks: int = 1, errors: list[BaseException] | None = None, **kw: Any
             ) -> tuple[StateManager, DeferredPool]:
    pool = DeferredPool()
    m = StateManager(cfg(records_per_get=10, **kw), client, store, task, tasks, lambda: clock[0],
                     pool.submit, None if errors is None else errors.append)
    m.begin(m.prepare())
    return m, pool


def run_all(pool: DeferredPool) -> None:
    while pool.jobs:
        pool.run_one()


def started(m: StateManager) -> list[str]:
    return sorted(s for s, st in m.states.items() if st.tracker is not None)


def test_a_start_asked_for_while_one_runs_follows_it() -> None:
    client = FakeKinesis({"s0": ["1"]})
    store, clock = MemoryStore(), [0.0]
    m, pool = deferred(client, store, clock)
    assert len(pool.jobs) == 1 and started(m) == []
    client.records["s1"] = ["5"]
    m.apply([ShardInfo("s0"), ShardInfo("s1")])  # s1 owned while the first start job is queued
    assert len(pool.jobs) == 1  # not a second job at once
    pool.run_one()
    assert started(m) == ["s0"] and len(pool.jobs) == 1  # the start asked for meanwhile
    pool.run_one()
    assert started(m) == ["s0", "s1"] and pool.jobs == [] and m.active_count == 2


def test_start_results_for_shards_dropped_or_started_meanwhile_are_ignored() -> None:
    client = FakeKinesis({"s0": ["1"], "s1": ["2"]})
    store, clock = MemoryStore(), [0.0]
    m, pool = deferred(client, store, clock)
    m.num_tasks, m.task_index = 2, 1
    m.apply([ShardInfo("s0"), ShardInfo("s1"), ShardInfo("s2")])  # s0 is no longer ours
    client.records["s2"] = []
    while pool.jobs:
        pool.run_one()
    assert sorted(m.states) == ["s1"] and started(m) == ["s1"]
    getter = m.states["s1"].getter
    m._ready([("s1", Checkpoint("1"))], [])  # a late duplicate result: s1 is already reading
    assert m.states["s1"].getter is getter and m.states["s1"].stored is None


def test_a_failed_start_job_is_reported_and_the_shards_start_at_the_next_flush() -> None:
    client = FakeKinesis({"s0": ["1"]})
    store, clock, errors = MemoryStore(), [0.0], []  # type: ignore[var-annotated]
    failing: list[bool] = [True]

    def submit(fn: Any, on_done: Any) -> None:
        if failing[0]:
            on_done(None, RuntimeError("pool is gone"))
        else:
            on_done(fn(), None)

    m = StateManager(cfg(records_per_get=10), client, store, 0, 1, lambda: clock[0], submit,
                     errors.append)
    m.begin(m.prepare())
    assert [str(e) for e in errors] == ["pool is gone"] and started(m) == []
    failing[0] = False
    m.flush()
    assert started(m) == ["s0"] and m.active_count == 1


def test_an_unreachable_store_delays_a_start_without_an_error() -> None:
    client = FakeKinesis({"s0": ["1"]})
    store, clock, errors = MemoryStore(), [0.0], []  # type: ignore[var-annotated]
    store.down = True
    m = StateManager(cfg(records_per_get=10), client, store, 1, 2, lambda: clock[0],
                     on_error=errors.append)
    m.begin([ShardInfo("s0"), ShardInfo("s1")])
    assert started(m) == [] and errors == []
    store.down = False
    m.flush()
    assert started(m) == ["s1"]


def test_background_errors_without_a_handler_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    client = FakeKinesis({"s0": ["1"]})
    store, clock = MemoryStore(), [0.0]
    store.read = lambda shard_id: (_ for _ in ()).throw(ValueError(f"bad node {shard_id}"))  # type: ignore[method-assign]
    m = StateManager(cfg(), client, store, 0, 1, lambda: clock[0])
    with caplog.at_level(logging.ERROR, logger="stormpy.connectors.kinesis._state"):
        m.start()
    assert [r.getMessage() for r in caplog.records] == ["stream events: bad node s0"]


def test_a_failed_refresh_keeps_the_list_and_the_next_interval_tries_again() -> None:
    client = FakeKinesis({"s0": []})
    store, clock, errors = MemoryStore(), [0.0], []  # type: ignore[var-annotated]
    m, pool = deferred(client, store, clock, errors=errors, shard_list_refresh_ms=1000,
                       checkpoint_interval_ms=10**9)
    pool.run_one()  # the start
    client.errors = []
    client.list_shards = lambda **kw: (_ for _ in ()).throw(RuntimeError("ListShards down"))  # type: ignore[method-assign]
    clock[0] = 1.0
    m.tick()
    assert len(pool.jobs) == 1
    clock[0] = 2.0
    m.tick()
    assert len(pool.jobs) == 1  # one refresh in flight at a time
    pool.run_one()
    assert len(errors) == 1 and str(errors[0]).endswith("RuntimeError: ListShards down")
    assert [s.shard_id for s in m.shards] == ["s0"]
    del client.list_shards  # type: ignore[attr-defined]
    client.records["s1"] = []
    clock[0] = 3.0
    m.tick()
    run_all(pool)
    assert [s.shard_id for s in m.shards] == ["s0", "s1"] and store.shard_list == m.shards


def test_a_list_that_could_not_be_stored_is_written_at_the_next_refresh() -> None:
    client = FakeKinesis({"s0": []})
    store, clock = MemoryStore(), [0.0]
    m, pool = deferred(client, store, clock, shard_list_refresh_ms=1000, checkpoint_interval_ms=10**9)
    pool.run_one()
    client.records["s1"] = []
    store.down = True
    clock[0] = 1.0
    m.tick()
    pool.run_one()
    assert [s.shard_id for s in m.shards] == ["s0", "s1"]  # adopted locally all the same
    assert [s.shard_id for s in store.shard_list or []] == ["s0"]
    store.down = False
    run_all(pool)  # the start of s1
    clock[0] = 2.0
    m.tick()
    run_all(pool)
    assert [s.shard_id for s in store.shard_list or []] == ["s0", "s1"]
    store.shard_list = None
    clock[0] = 3.0
    m.tick()
    run_all(pool)
    assert store.shard_list is None  # published and unchanged: not written again


def test_an_empty_list_from_a_refresh_or_the_watch_changes_nothing() -> None:
    client = FakeKinesis({"s0": []})
    store, clock = MemoryStore(), [0.0]
    m, pool = deferred(client, store, clock, shard_list_refresh_ms=1000, checkpoint_interval_ms=10**9)
    pool.run_one()
    m._refreshed(([], True), None)
    m.on_shard_list([])
    m.on_shard_list(None)
    m.tick()
    assert [s.shard_id for s in m.shards] == ["s0"] and started(m) == ["s0"]


def test_the_end_checkpoint_of_a_parent_starts_its_child() -> None:
    client = FakeKinesis({"p": ["1"], "c": ["5"]}, parents={"c": ("p",)}, closed={"p"})
    store, clock = MemoryStore(), [0.0]
    m, pool = deferred(client, store, clock, checkpoint_interval_ms=10**9)
    pool.run_one()
    assert started(m) == ["p"]
    parent = m.states["p"]
    assert parent.getter is not None and parent.tracker is not None
    assert parent.current() == Checkpoint(None, False)
    parent.getter.next()
    pool.run_one()  # GetRecords: the last batch of a closed shard
    record = parent.getter.next()
    assert record is not None and parent.getter.finished
    parent.tracker.on_emit(record, False)
    assert parent.current() == Checkpoint(None, False)  # a record in flight: not the end yet
    parent.tracker.on_fail("1")
    assert parent.current() == Checkpoint(None, False)  # to be retried: not the end either
    again = parent.tracker.record_to_retry()
    assert again is not None
    parent.tracker.on_emit(again, True)
    parent.tracker.on_ack("1")
    assert parent.current() == Checkpoint("1", True)
    m.shard_finished(parent)
    assert not parent.done and parent.writing
    pool.run_one()  # the write
    assert parent.done and store.checkpoints["p"] == Checkpoint("1", True)
    assert m.active_count == 0 and len(pool.jobs) == 1  # the child's start
    pool.run_one()
    assert started(m) == ["c", "p"] and m.active_count == 1 and m.next_state() is m.states["c"]
    m._stored(parent, Checkpoint("1", True))  # a duplicate answer changes nothing
    assert len(pool.jobs) == 0


def test_a_failed_checkpoint_write_is_reported_unless_the_store_is_just_down() -> None:
    client = FakeKinesis({"s0": ["1", "2"]})
    store, clock, errors = MemoryStore(), [0.0], []  # type: ignore[var-annotated]
    m, pool = deferred(client, store, clock, errors=errors, checkpoint_interval_ms=10**9)
    pool.run_one()
    state = m.states["s0"]
    assert state.getter is not None and state.tracker is not None
    state.getter.next()
    pool.run_one()
    for _ in range(2):
        r = state.getter.next()
        assert r is not None
        state.tracker.on_emit(r, False)
    state.tracker.on_ack("1")
    run_all(pool)
    store.down = True
    m.flush()
    run_all(pool)
    assert m.checkpoint_failures == 1 and errors == [] and not state.writing
    store.down = False
    store.write = lambda shard_id, cp: (_ for _ in ()).throw(ValueError("bad write"))  # type: ignore[method-assign]
    m.flush()
    run_all(pool)
    assert m.checkpoint_failures == 2 and [str(e) for e in errors] == ["bad write"]
    assert state.stored is None and not state.writing


def test_a_stored_checkpoint_never_moves_back() -> None:
    client = FakeKinesis({"s0": ["1"]})
    store, clock = MemoryStore(), [0.0]
    m, pool = deferred(client, store, clock)
    pool.run_one()
    state = m.states["s0"]
    m._stored(state, Checkpoint("9"))
    m._stored(state, Checkpoint("4"))
    assert state.stored == Checkpoint("9") and not state.done


def test_active_shards_are_handed_out_in_turn() -> None:
    client = FakeKinesis({"s0": [], "s1": [], "s2": []})
    store, clock = MemoryStore(), [0.0]
    m, pool = deferred(client, store, clock)
    assert m.next_state() is None
    pool.run_one()
    order = [m.next_state().shard_id for _ in range(6)]  # type: ignore[union-attr]
    assert sorted(order[:3]) == ["s0", "s1", "s2"] and order[3:] == order[:3]


def test_a_shard_stored_as_ended_is_never_opened() -> None:
    client = FakeKinesis({"s0": ["1"], "s1": ["2"]})
    store, clock = MemoryStore(), [0.0]
    store.checkpoints["s0"] = Checkpoint("1", shard_end=True)
    m, pool = deferred(client, store, clock)
    pool.run_one()
    assert m.states["s0"].done and m.states["s0"].getter is None and started(m) == ["s1"]
    assert m.active_count == 1
    m.flush()
    assert pool.jobs == []  # nothing waits to start


def test_a_parent_gone_from_the_list_does_not_hold_its_child() -> None:
    client = FakeKinesis({"c": ["5"]}, parents={"c": ("gone",)})
    store, clock = MemoryStore(), [0.0]
    m, pool = deferred(client, store, clock, initial_position="LATEST")
    pool.run_one()
    assert started(m) == ["c"]
    getter = m.states["c"].getter
    assert getter is not None and getter.getter.start.kind == "LATEST"  # not TRIM_HORIZON


def test_a_parent_read_by_this_task_but_not_finished_holds_its_child() -> None:
    client = FakeKinesis({"p": ["1"], "c": ["5"]}, parents={"c": ("p",)})
    store, clock = MemoryStore(), [0.0]
    store.checkpoints["p"] = Checkpoint("1", shard_end=True)  # stored, but this task reads p
    m, pool = deferred(client, store, clock)
    pool.run_one()
    # p was not known to be done when the job looked: c waits, although p's stored end is found
    assert m.states["p"].done and started(m) == []
    m.flush()
    pool.run_one()
    assert started(m) == ["c"]
    m2, pool2 = deferred(FakeKinesis({"p": ["1"], "c": ["5"]}, parents={"c": ("p",)}),
                         MemoryStore(), clock)
    pool2.run_one()
    assert started(m2) == ["p"]  # c waits for p


class CountingStore(MemoryStore):
    """Counts every write and read call; ``fail_for`` makes writes of those shards fail."""

    def __init__(self) -> None:
        super().__init__()
        self.write_calls: list[str] = []
        self.read_calls: list[str] = []
        self.fail_for: set[str] = set()

    def read(self, shard_id: str) -> Checkpoint | None:
        self.read_calls.append(shard_id)
        return super().read(shard_id)

    def write(self, shard_id: str, checkpoint: Checkpoint) -> bool:
        self.write_calls.append(shard_id)
        if shard_id in self.fail_for:
            raise RuntimeError(f"cannot write {shard_id}")
        return super().write(shard_id, checkpoint)


def inline(client: FakeKinesis, store: MemoryStore, clock: list[float], task: int = 0,
           tasks: int = 1, errors: list[BaseException] | None = None, **kw: Any) -> StateManager:
    m = StateManager(cfg(records_per_get=10, **kw), client, store, task, tasks, lambda: clock[0],
                     on_error=None if errors is None else errors.append)
    m.start()
    return m


def take(m: StateManager, shard: str) -> Any:
    state = m.states[shard]
    assert state.getter is not None and state.tracker is not None
    r = state.getter.next()
    assert r is not None
    state.tracker.on_emit(r, False)
    return r


def test_before_begin_no_shard_is_active() -> None:
    m = StateManager(cfg(), FakeKinesis({"s0": []}), MemoryStore(), 0, 1, lambda: 0.0)
    assert m.active_count == 0 and m.next_state() is None


def test_a_shard_resumes_from_its_stored_checkpoint_and_does_not_write_it_again() -> None:
    client = FakeKinesis({"s0": ["1", "2", "3"]})
    store, clock = CountingStore(), [0.0]
    store.checkpoints["s0"] = Checkpoint("2")
    m = inline(client, store, clock, checkpoint_interval_ms=10**9)
    state = m.states["s0"]
    assert state.stored == Checkpoint("2") and state.tracker is not None
    assert state.tracker.shard_id == "s0" and state.tracker.checkpoint == "2"
    assert m.metrics()["s0"]["checkpoint"] == "2" and m.metrics()["s0"]["stored"] == "2"
    m.flush()
    m.flush_now()
    assert store.write_calls == []  # nothing moved
    r = take(m, "s0")
    assert r.sequence_number == "3"
    m.flush()
    assert store.write_calls == []  # "3" is not acked yet
    state.tracker.on_ack("3")
    m.flush()
    m.flush()
    assert store.write_calls == ["s0"] and store.checkpoints["s0"] == Checkpoint("3")


def test_shard_finished_stores_only_the_end_of_a_shard() -> None:
    client = FakeKinesis({"s0": ["1", "2"]})
    store, clock = CountingStore(), [0.0]
    m = inline(client, store, clock, checkpoint_interval_ms=10**9)
    take(m, "s0")
    m.states["s0"].tracker.on_ack("1")  # type: ignore[union-attr]
    m.shard_finished(m.states["s0"])
    assert store.write_calls == []  # not at its end: the interval writes it


def test_getrecords_errors_of_a_started_shard_reach_on_error() -> None:
    client = FakeKinesis({"s0": ["1"]})
    store, clock, errors = MemoryStore(), [0.0], []  # type: ignore[var-annotated]
    m = inline(client, store, clock, errors=errors)
    client.errors.append("AccessDeniedException")
    assert m.states["s0"].getter.next() is None  # type: ignore[union-attr]
    assert len(errors) == 1 and "GetRecords on shard s0" in str(errors[0])


def test_an_empty_batch_pauses_the_shard_for_the_configured_time() -> None:
    client = FakeKinesis({"s0": []})
    store, clock = MemoryStore(), [10.0]
    m = inline(client, store, clock, empty_record_sleep_ms=1000)
    getter = m.states["s0"].getter
    assert getter is not None and getter.next() is None
    gets = sum(1 for c in client.calls if c[0] == "get")
    clock[0] = 10.9995
    getter.next()
    assert sum(1 for c in client.calls if c[0] == "get") == gets
    clock[0] = 11.0
    getter.next()
    assert sum(1 for c in client.calls if c[0] == "get") == gets + 1


def test_the_shard_list_refresh_waits_a_whole_interval_each_time() -> None:
    client = FakeKinesis({"s0": []})
    store, clock = MemoryStore(), [0.0]
    m = inline(client, store, clock, shard_list_refresh_ms=30_000, checkpoint_interval_ms=10**9)
    calls = [0]
    original = client.list_shards

    def counted(**kw: Any) -> dict[str, Any]:
        calls[0] += 1
        return original(**kw)

    client.list_shards = counted  # type: ignore[method-assign]
    for t, expected in ((29.999, 0), (30.0, 1), (30.001, 1), (59.98, 1), (60.0, 2)):
        clock[0] = t
        m.tick()
        assert calls[0] == expected, t


def test_a_child_waits_for_every_listed_parent() -> None:
    for parents, stored in ((("gone", "p2"), {}), (("p1", "p2"), {"p1": Checkpoint("1", True)})):
        client = FakeKinesis({"p1": ["1"], "p2": ["2"], "zc": ["5"]}, parents={"zc": parents},
                             closed={"p1", "p2"})
        if "gone" in parents:
            del client.records["p1"]
        store, clock = MemoryStore(), [0.0]
        store.checkpoints.update(stored)
        m = inline(client, store, clock)
        m.flush()  # a second look, once p1 is known here to be done
        # p1 is gone or done; p2 is listed, read here and not finished: the child waits
        assert m.states["zc"].tracker is None, parents
        if "p1" in m.states:
            assert m.states["p1"].done


def test_a_parent_stored_without_its_end_holds_a_child_of_another_task() -> None:
    client = FakeKinesis({"a-parent": ["1", "2"], "b-child": ["5"]},
                         parents={"b-child": ("a-parent",)}, closed={"a-parent"})
    store, clock, errors = MemoryStore(), [0.0], []  # type: ignore[var-annotated]
    store.checkpoints["a-parent"] = Checkpoint("1")  # read part of the way by task 0
    m = inline(client, store, clock, task=1, tasks=2, errors=errors)
    assert m.states["b-child"].tracker is None and errors == []


def test_started_shards_checkpoints_are_not_read_again() -> None:
    client = FakeKinesis({"p": ["1"], "c": ["5"], "s": ["7"]}, parents={"c": ("p",)})
    store, clock = CountingStore(), [0.0]
    m = inline(client, store, clock, checkpoint_interval_ms=10**9)
    assert sorted(store.read_calls) == ["p", "s"]
    store.read_calls.clear()
    m.flush()  # c still waits for p: only what c needs is read
    assert store.read_calls == []  # p is read by this task: its local state decides


def test_a_start_asked_for_meanwhile_runs_once_even_when_a_shard_keeps_waiting() -> None:
    client = FakeKinesis({"p": ["1"], "c": ["5"]}, parents={"c": ("p",)}, closed={"p"})
    store, clock = MemoryStore(), [0.0]
    m, pool = deferred(client, store, clock)
    client.records["s2"] = []
    m.apply([ShardInfo("c", ("p",)), ShardInfo("p"), ShardInfo("s2")])
    pool.run_one()
    assert len(pool.jobs) == 1  # the start asked for meanwhile
    pool.run_one()
    assert started(m) == ["p", "s2"] and pool.jobs == []  # c waits; no endless restarts


def test_flush_now_goes_on_past_unchanged_and_failing_shards() -> None:
    client = FakeKinesis({"s0": ["1"], "s1": ["2"], "s2": ["3"]})
    store, clock = CountingStore(), [0.0]
    m = inline(client, store, clock, checkpoint_interval_ms=10**9)
    for shard, seq in (("s1", "2"), ("s2", "3")):
        take(m, shard)
        m.states[shard].tracker.on_ack(seq)  # type: ignore[union-attr]
    store.fail_for = {"s1"}
    m.flush_now()  # s0 unchanged, s1 fails: s2 is still written
    assert store.write_calls == ["s1", "s2"] and store.checkpoints["s2"] == Checkpoint("3")
    m.flush_now()
    assert m.checkpoint_failures == 2


def test_metrics_count_buffered_and_counted_out_records() -> None:
    client = FakeKinesis({"s0": ["1", "2", "3"]})
    store, clock = MemoryStore(), [0.0]
    m = inline(client, store, clock, max_retries=0)
    r = take(m, "s0")
    m.states["s0"].tracker.on_fail(r.sequence_number)  # type: ignore[union-attr]
    metrics = m.metrics()["s0"]
    assert (metrics["buffered"], metrics["counted_out"], metrics["checkpoint"]) == (2, 1, "1")
