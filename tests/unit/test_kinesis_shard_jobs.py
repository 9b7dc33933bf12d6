"""The Kinesis state manager's background jobs, run by hand (a deferred pool): one shard-start
job at a time with a start asked for meanwhile run after it, results for shards no longer owned
or already started, failed jobs reported and retried, the shard-list refresh and its write,
the end-of-shard checkpoint that lets children start, and round-robin over active shards."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from test_kinesis_parts import DeferredPool, FakeKinesis, MemoryStore, cfg

from stormpy.connectors.kinesis import Checkpoint, ShardInfo, StateManager


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
    with caplog.at_level(logging.ERROR, logger="stormpy.connectors.kinesis.state"):
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
