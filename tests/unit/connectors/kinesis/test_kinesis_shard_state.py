"""The Kinesis spout task's shard state on simulated time: per-shard metrics, the checkpoint and
refresh intervals to the tick, checkpoints written on close, and closing the getters."""

from __future__ import annotations

import pytest
from test_kinesis_parts import FakeKinesis, MemoryStore, cfg, emit_all, manager

from stormpy.connectors.kinesis import Checkpoint, KinesisStreamError, ShardInfo
from stormpy.connectors.kinesis._state import StateManager


def test_metrics_per_shard_before_and_after_a_checkpoint() -> None:
    client = FakeKinesis({"s0": ["1", "2", "3"], "s1": []})
    store, clock = MemoryStore(), [0.0]
    m = manager(client, store, clock)
    emit_all(m, clock, rounds=6)
    tracker = m.states["s0"].tracker
    assert tracker is not None
    tracker.on_ack("1")
    tracker.on_fail("3")
    again = tracker.record_to_retry()
    assert again is not None
    tracker.on_emit(again, True)  # the replay
    assert m.metrics()["s0"] == {"checkpoint": "1", "stored": None, "in_flight": 2, "retries": 1,
                                 "counted_out": 0, "millis_behind_latest": 0, "buffered": 0,
                                 "finished": False}
    m.flush()
    assert m.metrics()["s0"]["stored"] == "1" and m.metrics()["s0"]["checkpoint"] == "1"
    assert m.metrics()["s1"] == {"checkpoint": None, "stored": None, "in_flight": 0, "retries": 0,
                                 "counted_out": 0, "millis_behind_latest": 0, "buffered": 0,
                                 "finished": False}


def test_metrics_of_a_shard_not_started_yet_show_its_stored_checkpoint() -> None:
    client = FakeKinesis({"a-parent": ["1"], "b-child": ["5"]}, parents={"b-child": ("a-parent",)},
                         closed={"a-parent"})
    store, clock = MemoryStore(), [0.0]
    store.checkpoints["b-child"] = Checkpoint("4")
    m = manager(client, store, clock, task=1, tasks=2)
    emit_all(m, clock, rounds=3)
    assert m.states["b-child"].tracker is None
    assert m.metrics() == {"b-child": {"checkpoint": None, "stored": None, "in_flight": 0,
                                       "retries": 0, "counted_out": 0,
                                       "millis_behind_latest": None, "buffered": 0,
                                       "finished": False}}
    m.states["b-child"].stored = Checkpoint("4")
    assert m.metrics()["b-child"]["checkpoint"] == "4" and m.metrics()["b-child"]["stored"] == "4"


def test_checkpoints_are_written_at_the_interval_to_the_tick() -> None:
    client = FakeKinesis({"s0": ["1", "2"]})
    store, clock = MemoryStore(), [0.0]
    m = manager(client, store, clock, checkpoint_interval_ms=5000, shard_list_refresh_ms=10**9)
    state = m.states["s0"]
    assert state.getter is not None and state.tracker is not None
    r = None
    while r is None:
        r = state.getter.next()
    state.tracker.on_emit(r, False)
    state.tracker.on_ack(r.sequence_number)
    clock[0] = 4.999
    m.tick()
    assert store.writes == []
    clock[0] = 5.0
    m.tick()
    assert store.writes == [("s0", Checkpoint("1"))]
    r2 = None
    while r2 is None:
        r2 = state.getter.next()
    state.tracker.on_emit(r2, False)
    state.tracker.on_ack(r2.sequence_number)
    clock[0] = 9.999  # the next write is due 5 s after the last one
    m.tick()
    assert store.writes == [("s0", Checkpoint("1"))]
    clock[0] = 10.0
    m.tick()
    assert store.writes[-1] == ("s0", Checkpoint("2"))


def test_the_shard_list_is_refreshed_at_its_interval_by_task_zero_only() -> None:
    for task, expect_new in ((0, True), (1, False)):
        client = FakeKinesis({"s0": [], "s1": []})
        store, clock = MemoryStore(), [0.0]
        m = manager(client, store, clock, task=task, tasks=2, shard_list_refresh_ms=30000,
                    checkpoint_interval_ms=10**9)
        client.records["s2"] = []
        clock[0] = 29.999
        m.tick()
        assert [s.shard_id for s in m.shards] == ["s0", "s1"]
        clock[0] = 30.0
        m.tick()
        listed = store.shard_list or []
        assert (ShardInfo("s2") in listed) == expect_new, task
        if expect_new:
            assert [s.shard_id for s in m.shards] == ["s0", "s1", "s2"]
            assert sorted(m.states) == ["s0", "s2"]


def test_close_writes_nothing_itself_and_flush_now_stores_every_moved_checkpoint() -> None:
    client = FakeKinesis({"s0": ["1", "2"], "s1": ["7"]})
    store, clock = MemoryStore(), [0.0]
    m = manager(client, store, clock, checkpoint_interval_ms=10**9)
    emit_all(m, clock, rounds=6)
    for shard, seqs in (("s0", ("1",)), ("s1", ("7",))):
        tracker = m.states[shard].tracker
        assert tracker is not None
        for seq in seqs:
            tracker.on_ack(seq)
    store.checkpoints["s1"] = Checkpoint("9")  # another task got further
    m.flush_now()
    assert store.writes == [("s0", Checkpoint("1"))]
    assert m.states["s0"].stored == Checkpoint("1") and store.checkpoints["s1"] == Checkpoint("9")
    m.flush_now()
    assert store.writes == [("s0", Checkpoint("1"))]  # unchanged: not written again
    store.down = True
    m.states["s0"].tracker.on_ack("2")  # type: ignore[union-attr]
    m.flush_now()
    assert m.checkpoint_failures == 1 and m.states["s0"].stored == Checkpoint("1")
    m.close()
    client.records["s0"].append("3")
    calls = len(client.calls)
    for _ in range(3):
        clock[0] += 10.0
        assert all(s.getter is None or s.getter.next() is None for s in m.states.values())
    assert len(client.calls) == calls  # closed getters ask for nothing more


def test_a_stream_without_shards_is_an_error_naming_it() -> None:
    store, clock = MemoryStore(), [0.0]
    m = StateManager(cfg(), FakeKinesis({}), store, 0, 1, lambda: clock[0])
    with pytest.raises(KinesisStreamError, match="^stream 'events' has no shards$"):
        m.prepare()


def test_only_task_zero_publishes_the_shard_list_and_every_task_watches_it() -> None:
    clock = [0.0]
    for task in (0, 1):
        store = MemoryStore()
        m = StateManager(cfg(), FakeKinesis({"s0": [], "s1": []}), store, task, 2, lambda: clock[0])
        shards = m.prepare()
        assert [s.shard_id for s in shards] == ["s0", "s1"]
        assert (store.shard_list == shards) == (task == 0) and (store.shard_list is None) == (task == 1)
        assert store.watcher is not None
        m.begin(shards)
        assert sorted(m.states) == [f"s{task}"]
        store.watcher([*shards, ShardInfo("s2"), ShardInfo("s3")])  # from the store's thread
        assert sorted(m.states) == [f"s{task}"]  # applied on the loop, at the next tick
        m.tick()
        assert sorted(m.states) == [f"s{task}", f"s{task + 2}"]


def test_a_refresh_that_finds_the_same_list_does_not_write_it_again() -> None:
    client = FakeKinesis({"s0": []})
    store, clock = MemoryStore(), [0.0]
    m = manager(client, store, clock, shard_list_refresh_ms=1000, checkpoint_interval_ms=10**9)
    store.shard_list = None  # would be written again if the refresh thought it changed
    clock[0] = 1.0
    m.tick()
    assert store.shard_list is None


def test_a_shard_no_longer_owned_is_checkpointed_closed_and_dropped() -> None:
    client = FakeKinesis({"s0": ["1", "2"], "s1": ["5"]})
    store, clock = MemoryStore(), [0.0]
    m = manager(client, store, clock, task=0, tasks=1, checkpoint_interval_ms=10**9)
    emit_all(m, clock, rounds=6)
    tracker = m.states["s0"].tracker
    assert tracker is not None
    tracker.on_ack("1")
    getter = m.states["s0"].getter
    assert getter is not None
    m.num_tasks = 2
    m.task_index = 1
    m.apply([ShardInfo("s0"), ShardInfo("s1"), ShardInfo("s2")])  # s0 and s2 now go to task 0
    assert sorted(m.states) == ["s1"]
    assert store.checkpoints["s0"] == Checkpoint("1")
    client.records["s0"].append("3")
    clock[0] += 10.0
    assert getter.next() is None  # closed
    assert m.active_count == 1 and m.next_state() is m.states["s1"]
