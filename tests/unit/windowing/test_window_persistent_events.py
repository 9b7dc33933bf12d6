"""The persisted window's event container (stormpy.windowing._persistent): a window manager over
partitions in a KeyValueState evaluates exactly the windows of the in-memory manager, in
processing and event time, with out-of-order events, while never holding more than
max_events_in_memory events in its partition cache; the partitions and the index written at a
checkpoint give the same container back after a restart; the user's view hides them."""

from __future__ import annotations

import random
from typing import Any

import pytest

from stormpy.state import KeyValueState, MemoryBackend
from stormpy.topology._fields import Fields
from stormpy.topology._state import StateValueError
from stormpy.topology._tuple import Tuple
from stormpy.windowing import Count, Duration, Window, WindowConfig, WindowManager
from stormpy.windowing._persistent import (
    PARTITION_BYTES,
    PARTITION_PREFIX,
    EventCodec,
    EventKeys,
    PartitionedEvents,
    UserState,
    read_chunks,
    write_chunks,
)

FIELDS = Fields(["v", "ts"])


def tup(i: int, ts: int) -> Tuple:
    return Tuple([i, ts], "default", 3, "src", FIELDS)


def codec() -> EventCodec:
    return EventCodec(lambda component, stream: FIELDS)


def summary(w: Window) -> tuple[Any, ...]:
    return (w.start_timestamp, w.end_timestamp, [t.values[0] for t in w],
            [t.values[0] for t in w.get_new()], [t.values[0] for t in w.get_expired()])


def persisted(cfg: WindowConfig, max_events: int, seen: list[Any]
              ) -> tuple[WindowManager, PartitionedEvents, KeyValueState]:
    state = KeyValueState(MemoryBackend().at("w"))
    events = PartitionedEvents(state, codec(), max_events)
    m = WindowManager(cfg, on_window=lambda w: seen.append(summary(w)))
    m.use_events(events, EventKeys(events))
    return m, events, state


CONFIGS = [
    (Count(50), Count(7), False), (Count(40), Count(40), False),
    (Duration(seconds=5), Duration(seconds=1), False), (Count(30), Duration(seconds=1), False),
    (Duration(seconds=3), Count(9), False),
    (Duration(seconds=4), Duration(seconds=1), True), (Count(25), Count(5), True),
    (Duration(seconds=2), Duration(seconds=2), True),
]


@pytest.mark.parametrize(("length", "slide", "event_time"), CONFIGS)
def test_persisted_windows_equal_in_memory_windows_with_bounded_memory(
        length: Any, slide: Any, event_time: bool) -> None:
    cfg = WindowConfig.sliding(length, slide)
    if event_time:
        cfg = cfg.with_(timestamp_field="ts")
    cfg = cfg.validate()
    rnd = random.Random(5)
    want: list[Any] = []
    got: list[Any] = []
    plain = WindowManager(cfg, on_window=lambda w: want.append(summary(w)))
    m, events, _ = persisted(cfg, 12, got)
    now = 0
    most = 0
    for i in range(600):
        if event_time:  # out of order within a second, behind no watermark
            ts = max(now + rnd.randrange(-900, 300), (plain.watermark or 0))
            for mgr in (plain, m):
                if not mgr.is_late(ts):
                    mgr.add(tup(i, ts), ts)
            if i % 13 == 0:
                now += 250
                for mgr in (plain, m):
                    mgr.advance_watermark(now - 1000)
        else:
            for mgr in (plain, m):
                mgr.add(tup(i, now), now)
            if i % 11 == 0:
                now += 1000
                for mgr in (plain, m):
                    mgr.advance_time(now)
        assert events.held <= 12
        most = max(most, events.partitions)
    assert want and got == want
    assert [e.tup.values for e in m.events] == [e.tup.values for e in plain.events]
    assert events.peak_held <= 12 and most > 2 and events.loads > 0


def test_a_window_restored_from_its_checkpoint_goes_on_like_the_original() -> None:
    cfg = WindowConfig.sliding(Count(20), Count(3)).validate()
    got: list[Any] = []
    m, events, state = persisted(cfg, 8, got)
    for i in range(35):
        m.add(tup(i, 0), 0)
    # what the executor writes at PREPARE, then a commit
    events.flush()
    state.put("meta-test", {"events": events.index(), "manager": m.bookkeeping()})
    chunks = write_chunks(state, codec(), m.gone, 0)
    state.prepare_commit(1)
    state.commit(1)
    for i in range(35, 40):  # uncommitted: lost with the task
        m.add(tup(i, 0), 0)
    again = KeyValueState(state.store)
    doc = again.get("meta-test")
    restored_seen: list[Any] = []
    events2 = PartitionedEvents(again, codec(), 8)
    m2 = WindowManager(cfg, on_window=lambda w: restored_seen.append(summary(w)))
    m2.use_events(events2, EventKeys(events2))
    events2.restore(doc["events"])
    m2.restore_bookkeeping(doc["manager"], read_chunks(again, codec(), chunks))
    reference: list[Any] = []
    plain = WindowManager(cfg, on_window=lambda w: reference.append(summary(w)))
    for i in range(35):
        plain.add(tup(i, 0), 0)
    assert [e.tup.values[0] for e in m2.events] == [e.tup.values[0] for e in plain.events]
    reference.clear()
    for i in range(35, 50):
        plain.add(tup(i, 0), 0)
        m2.add(tup(i, 0), 0)
    assert restored_seen == reference and reference


def test_the_user_view_hides_and_refuses_the_window_keys() -> None:
    state = KeyValueState(MemoryBackend().at("u"))
    events = PartitionedEvents(state, codec(), 4)
    for i in range(10):
        events.append(_event(i))
    events.flush()
    state.put("count", 3)
    user = UserState(state)
    assert dict(user.items()) == {"count": 3} and len(user) == 1 and "count" in user
    with pytest.raises(StateValueError, match="persisted window"):
        user.put("\x00window.p.0", b"")
    assert user.get("\x00window.p.0") is None


def _event(i: int) -> Any:
    from stormpy.windowing._manager import Event
    return Event(0, i, tup(i, 0))


def test_partitions_of_large_events_stay_within_the_partition_byte_budget() -> None:
    state = KeyValueState(MemoryBackend().at("big"))
    events = PartitionedEvents(state, codec(), 10_000)
    payload = "x" * 4000
    for i in range(200):
        events.append(_ev(i, payload))
    events.flush()
    blobs = [v for k, v in state.items() if isinstance(k, str) and k.startswith(PARTITION_PREFIX)]
    assert len(blobs) == events.partitions > 1
    assert max(len(b) for b in blobs) <= PARTITION_BYTES + 4100
    assert [e.tup.values[0] for e in events] == list(range(200))
    chunks = write_chunks(state, codec(), list(events), 0)
    assert chunks > 1 and [e.seq for e in read_chunks(state, codec(), chunks)] == list(range(200))
    assert write_chunks(state, codec(), [], chunks) == 0  # the old chunks are deleted
    assert not [k for k, _ in state.items() if isinstance(k, str) and "gone" in k]


def _ev(i: int, payload: str) -> Any:
    from stormpy.windowing._manager import Event
    return Event(0, i, Tuple([i, payload], "default", 3, "src", FIELDS))
