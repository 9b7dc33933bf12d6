"""A persistent window's events, kept in a task's :class:`~stormpy.state._kv.KeyValueState` in
partitions of bounded size, with at most ``max_events`` of them in memory (Storm's
``WindowState`` behind ``PersistentWindowedBoltExecutor``).

Contract:

* :class:`PartitionedEvents` is the list-like event container the
  :class:`~stormpy.windowing._manager.WindowManager` works on (``use_events``): events in key order
  (``(ts, seq)``), split into partitions of at most ``partition_size`` events. In memory it keeps
  the partition index (id, count, first and last key of each) and an LRU cache of loaded
  partitions whose events never exceed ``max_events`` (:attr:`held`); a partition dropped from the
  cache is written to the state first if it changed. Reading an event loads its partition;
  :class:`EventKeys` answers a partition's first and last key from the index, so searching by key
  loads only the partitions the search lands in. Dropping the head (``del events[:n]``) deletes
  whole partitions from the state without reading them.
* In the state each partition is one value under its own key (``PARTITION_PREFIX`` + id: a
  msgpack blob ``[sources, rows]``, each source ``[task, component, stream]`` once, each event a
  row ``[ts, seq, source index, values]``); :meth:`flush` writes every
  changed partition, and :meth:`index` / :meth:`restore` give and take the partition index, which
  the executor writes with the rest of the window's bookkeeping at each checkpoint's PREPARE, so
  the window and the user's map are committed together. After a rollback the container is
  rebuilt from the committed index (:meth:`restore`): nothing of the cache survives.
* Keys starting with ``RESERVED_PREFIX`` belong to the window; :class:`UserState` is the user's
  view of the same map without them.

Tuples read back from the state are rebuilt with the fields of their stream and no message ids
(they were acked when the checkpoint holding them committed).
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import msgpack

from stormpy.state._kv import KeyValueState
from stormpy.topology._fields import Fields
from stormpy.topology._state import CorruptStateError, StateValueError
from stormpy.topology._tuple import Tuple
from stormpy.windowing._manager import Event

__all__ = ["DEFAULT_PARTITION_EVENTS", "EventCodec", "EventKeys", "GONE_KEY", "META_KEY",
           "PARTITION_BYTES", "PARTITION_PREFIX", "PartitionedEvents", "RESERVED_PREFIX",
           "UserState", "read_chunks", "write_chunks"]

#: Keys of the window in the task's state (a NUL first character: no user key looks like that).
RESERVED_PREFIX = "\x00window."
META_KEY = RESERVED_PREFIX + "meta"
GONE_KEY = RESERVED_PREFIX + "gone"
PARTITION_PREFIX = RESERVED_PREFIX + "p."
#: Events per partition (Storm's ``WindowState.MAX_PARTITION_EVENTS``), smaller when the memory
#: bound asks for it (a partition is at most half of ``max_events``) or its events are large (a
#: partition aims at PARTITION_BYTES, judged from its first event, well below the state layer's
#: 512 KiB value limit).
DEFAULT_PARTITION_EVENTS = 1000
PARTITION_BYTES = 128 * 1024


class EventCodec:
    """Events to and from the msgpack blobs stored in the state; ``fields(component, stream)``
    gives the declared fields of a source stream (cached)."""

    def __init__(self, fields: Callable[[str, str], Fields | None]) -> None:
        self._fields_of = fields
        self._fields: dict[tuple[str, str], Fields | None] = {}

    def pack(self, events: Iterable[Event]) -> bytes:
        """``[sources, rows]``: each distinct ``[task, component, stream]`` once, each event as
        ``[ts, seq, source index, values]``."""
        sources: dict[tuple[int, str, str], int] = {}
        rows = []
        for e in events:
            t = e.tup
            src = (t.task, t.component, t.stream)
            idx = sources.get(src)
            if idx is None:
                idx = sources[src] = len(sources)
            rows.append([e.ts, e.seq, idx, list(t.values)])
        return msgpack.packb([[list(s) for s in sources], rows], use_bin_type=True)

    def unpack(self, where: str, blob: Any) -> list[Event]:
        try:
            sources, rows = msgpack.unpackb(blob, raw=False, strict_map_key=False)
            made = []
            for task, component, stream in sources:
                fields = self._fields.get((component, stream), _UNKNOWN)
                if fields is _UNKNOWN:
                    fields = self._fields[(component, stream)] = self._fields_of(component, stream)
                made.append((task, component, stream, fields))
            out = []
            for ts, seq, idx, values in rows:
                task, component, stream, fields = made[idx]
                out.append(Event(ts, seq, Tuple(values, stream, task, component, fields)))
            return out
        except (TypeError, ValueError, IndexError, msgpack.UnpackException) as exc:
            raise CorruptStateError(where, f"not a window partition ({exc})") from None


_UNKNOWN: Any = object()


class _Part:
    """One partition in the index; ``cap``: how many events it takes (set from the size of its
    first event, so that a partition stays within PARTITION_BYTES)."""

    __slots__ = ("pid", "count", "first", "last", "cap")

    def __init__(self, pid: int, count: int, first: tuple[int, int] | None,
                 last: tuple[int, int] | None, cap: int) -> None:
        self.pid = pid
        self.count = count
        self.first = first
        self.last = last
        self.cap = cap


class PartitionedEvents:
    """See the module contract. ``state`` holds the partitions; ``codec`` packs them."""

    def __init__(self, state: KeyValueState, codec: EventCodec, max_events: int,
                 partition_size: int | None = None) -> None:
        if max_events < 1:
            raise ValueError(f"max events in memory must be positive, got {max_events}")
        self.state = state
        self.codec = codec
        self.max_events = max_events
        self.partition_size = partition_size or max(1, min(DEFAULT_PARTITION_EVENTS,
                                                           max_events // 2))
        self._parts: list[_Part] = []
        self._starts: list[int] = []  # index of each partition's first event
        self._cache: OrderedDict[int, list[Event]] = OrderedDict()
        self._dirty: set[int] = set()
        self._next_pid = 0
        self._total = 0
        #: Events in the loaded partitions (never above ``max_events``).
        self.held = 0
        #: The most ever held, and how many partitions were read from the state.
        self.peak_held = 0
        self.loads = 0

    # -- index -----------------------------------------------------------------------------------
    def index(self) -> dict[str, Any]:
        """The partition index, as plain data (see :meth:`restore`)."""
        return {"next_pid": self._next_pid,
                "parts": [[p.pid, p.count, p.first, p.last] for p in self._parts]}

    def restore(self, doc: dict[str, Any] | None) -> None:
        """Start over from an index written by :meth:`index` (None: empty); nothing loaded."""
        self._cache.clear()
        self._dirty.clear()
        self.held = 0
        self._parts, self._starts, self._total = [], [], 0
        if not doc:
            self._next_pid = 0
            return
        try:
            self._next_pid = int(doc["next_pid"])
            for pid, count, first, last in doc["parts"]:
                self._starts.append(self._total)
                # a restored partition takes no more events: appends start a new one
                self._parts.append(_Part(int(pid), int(count), _key(first), _key(last),
                                         int(count)))
                self._total += int(count)
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptStateError(f"{self.state.store.location} key {META_KEY!r}",
                                    f"not a window partition index ({exc})") from None

    def flush(self) -> int:
        """Write every partition changed since it was last written; returns how many."""
        written = 0
        for pid in sorted(self._dirty):
            events = self._cache.get(pid)
            if events is not None:
                self.state.put(PARTITION_PREFIX + str(pid), self.codec.pack(events))
                written += 1
        self._dirty.clear()
        return written

    @property
    def partitions(self) -> int:
        return len(self._parts)

    # -- the cache -------------------------------------------------------------------------------
    def _load(self, k: int) -> list[Event]:
        part = self._parts[k]
        events = self._cache.get(part.pid)
        if events is not None:
            self._cache.move_to_end(part.pid)
            return events
        self._make_room(part.count, None)
        key = PARTITION_PREFIX + str(part.pid)
        blob = self.state.get(key)
        if blob is None:
            raise CorruptStateError(f"{self.state.store.location} key {key!r}",
                                    "a window partition listed in the index is missing")
        events = self.codec.unpack(f"{self.state.store.location} key {key!r}", blob)
        if len(events) != part.count:
            raise CorruptStateError(f"{self.state.store.location} key {key!r}",
                                    f"holds {len(events)} events, the index says {part.count}")
        self.loads += 1
        self._cache[part.pid] = events
        self._hold(len(events))
        return events

    def _hold(self, n: int) -> None:
        self.held += n
        if self.held > self.peak_held:
            self.peak_held = self.held

    def _make_room(self, n: int, keep: int | None) -> None:
        """Drop least recently used partitions (written first if changed) until ``n`` more
        events fit; never ``keep``."""
        while self.held + n > self.max_events:
            victim = next((pid for pid in self._cache if pid != keep), None)
            if victim is None:
                return
            events = self._cache.pop(victim)
            if victim in self._dirty:
                self.state.put(PARTITION_PREFIX + str(victim), self.codec.pack(events))
                self._dirty.discard(victim)
            self.held -= len(events)

    def _locate(self, i: int) -> int:
        return bisect.bisect_right(self._starts, i) - 1

    def _index(self, i: int) -> int:
        if i < 0:
            i += self._total
        if not 0 <= i < self._total:
            raise IndexError("window event index out of range")
        return i

    # -- the list protocol the window manager uses -----------------------------------------------
    def __len__(self) -> int:
        return self._total

    def __bool__(self) -> bool:
        return self._total > 0

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            start, stop, step = i.indices(self._total)
            if step != 1:
                raise ValueError("window events are sliced with step 1 only")
            return self._range(start, stop)
        i = self._index(i)
        k = self._locate(i)
        return self._load(k)[i - self._starts[k]]

    def _range(self, start: int, stop: int) -> list[Event]:
        out: list[Event] = []
        if start >= stop:
            return out
        k = self._locate(start)
        while k < len(self._parts) and self._starts[k] < stop:
            base = self._starts[k]
            events = self._load(k)
            out += events[max(0, start - base):stop - base]
            k += 1
        return out

    def __iter__(self) -> Iterator[Event]:
        for k in range(len(self._parts)):
            yield from list(self._load(k))

    def key_at(self, i: int) -> tuple[int, int]:
        """The key of event ``i``, from the index when it starts or ends its partition."""
        i = self._index(i)
        k = self._locate(i)
        part, base = self._parts[k], self._starts[k]
        if i == base and part.first is not None:
            return part.first
        if i == base + part.count - 1 and part.last is not None:
            return part.last
        return self._load(k)[i - base].key()

    def append(self, ev: Event) -> None:
        if not self._parts or self._parts[-1].count >= self._parts[-1].cap:
            self._new_part(len(self._parts), self._total, [])
        k = len(self._parts) - 1
        part = self._parts[k]
        if not part.count:
            part.cap = self._cap(ev)
        events = self._load(k)
        self._make_room(1, part.pid)
        events.append(ev)
        self._grew(part, events)

    def insert(self, i: int, ev: Event) -> None:
        if i >= self._total:
            self.append(ev)
            return
        k = self._locate(max(i, 0))
        part = self._parts[k]
        events = self._load(k)
        self._make_room(1, part.pid)
        events.insert(max(i, 0) - self._starts[k], ev)
        for j in range(k + 1, len(self._starts)):
            self._starts[j] += 1
        self._grew(part, events)
        if part.count > max(part.cap, 1) and part.count > 1:  # split in two
            half = part.count // 2
            tail = events[half:]
            del events[half:]
            part.count, part.last = len(events), events[-1].key()
            self._new_part(k + 1, self._starts[k] + part.count, tail)

    def _cap(self, ev: Event) -> int:
        size = len(self.codec.pack([ev]))
        return max(1, min(self.partition_size, PARTITION_BYTES // max(size, 1)))

    def _grew(self, part: _Part, events: list[Event]) -> None:
        part.count = len(events)
        part.first, part.last = events[0].key(), events[-1].key()
        self._total += 1
        self._hold(1)
        self._dirty.add(part.pid)

    def _new_part(self, k: int, start: int, events: list[Event]) -> None:
        pid = self._next_pid
        self._next_pid += 1
        self._parts.insert(k, _Part(pid, len(events), events[0].key() if events else None,
                                    events[-1].key() if events else None,
                                    self._cap(events[0]) if events else self.partition_size))
        self._starts.insert(k, start)
        self._cache[pid] = events  # its events were held already (a split) or are none yet
        self._dirty.add(pid)

    def __delitem__(self, i: Any) -> None:
        """Drop the oldest events: ``del events[:n]`` only (what window eviction does)."""
        if not (isinstance(i, slice) and i.start in (None, 0) and i.step in (None, 1)):
            raise ValueError("window events are dropped from the head only (del events[:n])")
        n = min(self._total if i.stop is None else i.stop, self._total)
        removed = 0
        while n > 0 and self._parts:
            part = self._parts[0]
            if part.count <= n:
                self._drop_part(part)
                n -= part.count
                removed += part.count
                continue
            events = self._load(0)
            del events[:n]
            part.count, part.first = len(events), events[0].key()
            self.held -= n
            self._dirty.add(part.pid)
            removed += n
            n = 0
        self._total -= removed
        if removed:  # a head partition trimmed in place still starts at 0
            self._starts = [0] + [s - removed for s in self._starts[1:]] if self._starts else []

    def _drop_part(self, part: _Part) -> None:
        self._parts.pop(0)
        self._starts.pop(0)
        events = self._cache.pop(part.pid, None)
        if events is not None:
            self.held -= len(events)
        self._dirty.discard(part.pid)
        self.state.delete(PARTITION_PREFIX + str(part.pid))

    def clear(self) -> None:
        while self._parts:
            self._drop_part(self._parts[0])
        self._total = 0


class EventKeys:
    """The manager's sorted key list over a :class:`PartitionedEvents` (read-only: the
    container keeps the keys, so the manager's own appends, inserts and deletes are no-ops)."""

    def __init__(self, events: PartitionedEvents) -> None:
        self._events = events

    def __len__(self) -> int:
        return len(self._events)

    def __bool__(self) -> bool:
        return len(self._events) > 0

    def __getitem__(self, i: int) -> tuple[int, int]:
        return self._events.key_at(i)

    def append(self, key: Any) -> None:
        pass

    def insert(self, i: int, key: Any) -> None:
        pass

    def __delitem__(self, i: Any) -> None:
        pass

    def clear(self) -> None:
        pass


def write_chunks(state: KeyValueState, codec: EventCodec, events: list[Event],
                 old_chunks: int) -> int:
    """Write ``events`` (the last window's departed ones) as chunks ``GONE_KEY.<i>`` of at most
    DEFAULT_PARTITION_EVENTS events and about PARTITION_BYTES each, deleting chunks of an
    earlier list beyond them; returns how many chunks were written."""
    step = max(1, min(DEFAULT_PARTITION_EVENTS,
                      PARTITION_BYTES // max(1, len(codec.pack(events[:1]))))) if events else 1
    chunks = 0
    for i in range(0, len(events), step):
        state.put(f"{GONE_KEY}.{chunks}", codec.pack(events[i:i + step]))
        chunks += 1
    for i in range(chunks, old_chunks):
        state.delete(f"{GONE_KEY}.{i}")
    return chunks


def read_chunks(state: KeyValueState, codec: EventCodec, chunks: int) -> list[Event]:
    """The events written by :func:`write_chunks` in ``chunks`` chunks."""
    out: list[Event] = []
    for i in range(chunks):
        key = f"{GONE_KEY}.{i}"
        blob = state.get(key)
        if blob is None:
            raise CorruptStateError(f"{state.store.location} key {key!r}",
                                    "a chunk of the last window's departed events is missing")
        out += codec.unpack(f"{state.store.location} key {key!r}", blob)
    return out


def _key(v: Any) -> tuple[int, int] | None:
    return None if v is None else (int(v[0]), int(v[1]))


def _check_user_key(state: KeyValueState, key: Any) -> None:
    if isinstance(key, str) and key.startswith(RESERVED_PREFIX):
        raise StateValueError(f"{state.store.location} key {key!r}",
                              f"keys starting with {RESERVED_PREFIX!r} hold the persisted window")


class UserState(KeyValueState):
    """What a stateful windowed bolt's ``init_state`` receives: the task's map without the
    window's keys (``RESERVED_PREFIX``), which it may not write either."""

    def __init__(self, inner: KeyValueState) -> None:  # no load: a view of ``inner``
        self._inner = inner
        self.store = inner.store

    @property
    def committed_txid(self) -> int:  # type: ignore[override]
        return self._inner.committed_txid

    def put(self, key: Any, value: Any) -> None:
        _check_user_key(self._inner, key)
        self._inner.put(key, value)

    def get(self, key: Any, default: Any = None) -> Any:
        if isinstance(key, str) and key.startswith(RESERVED_PREFIX):
            return default
        return self._inner.get(key, default)

    def delete(self, key: Any) -> Any:
        _check_user_key(self._inner, key)
        return self._inner.delete(key)

    def __contains__(self, key: Any) -> bool:
        return not (isinstance(key, str) and key.startswith(RESERVED_PREFIX)) and key in self._inner

    def items(self) -> Iterator[tuple[Any, Any]]:
        return ((k, v) for k, v in self._inner.items()
                if not (isinstance(k, str) and k.startswith(RESERVED_PREFIX)))

    def load(self) -> None:
        raise RuntimeError("the executor drives the state of a stateful windowed bolt")

    prepare_commit = commit = rollback = load  # type: ignore[assignment]
