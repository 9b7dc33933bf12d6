"""Groupings turned into routers: for one emitted tuple, which task ids receive it.

Routers are built once per emitting task and called on every emit, so each ``choose`` is a few
operations and returns a list it may share between calls (callers must not mutate it). They are
classes with a ``choose`` method (not closures) so that, compiled, an emit calls them natively.
Fields hashing is stable across processes (CRC32 of the key, never Python's salted ``hash``), so
every worker sends a key to the same task.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Sequence
from typing import Any, cast

import msgpack

from stormpy.topology import _grouping as g
from stormpy.topology._fields import Fields
from stormpy.topology._imports import import_object

#: Most distinct keys a fields router remembers before it starts over.
KEY_CACHE_SIZE = 100_000


def stable_hash(key: Any) -> int:
    """A process-independent hash of a grouping key."""
    t = type(key)
    if t is str:
        return zlib.crc32(key.encode())
    if t is int:
        return key & 0x7FFFFFFFFFFFFFFF
    if t is bytes:
        return zlib.crc32(key)
    return zlib.crc32(msgpack.packb(key, default=repr))


class Router:
    """One subscription's choice of target tasks for an emitted tuple."""

    def choose(self, values: Any) -> list[int]:
        """The target tasks of ``values`` (a list the router may share: do not mutate it)."""
        raise NotImplementedError

    def choose_many(self, values_list: list[Any]) -> list[list[int]]:
        """``choose`` of each values, in order (the lists may be shared: do not mutate them)."""
        return [self.choose(values) for values in values_list]

    def partition_columns(self, cols: list[list[Any]], n: int) -> list[tuple[int, list[list[Any]], int]]:
        """The ``n`` tuples given as columns ``cols`` split by target task: (task, its columns,
        its tuple count) per task that gets any, each tuple going where ``choose`` sends its
        row, in order within a task. ``cols`` holds at least one column. Columns may be shared
        with ``cols``: do not mutate them."""
        width = len(cols)
        parts: dict[int, list[list[Any]]] = {}
        for i in range(n):
            row = [c[i] for c in cols]
            for t in self.choose(row):
                part = parts.get(t)
                if part is None:
                    part = [[] for _ in range(width)]
                    parts[t] = part
                for j in range(width):
                    part[j].append(row[j])
        return [(t, part, len(part[0])) for t, part in parts.items()]


class ShuffleRouter(Router):
    """Round robin over a shuffled order of the tasks (even load, Storm's shuffle)."""

    def __init__(self, tasks: Sequence[int]) -> None:
        singles = [[t] for t in tasks]
        random.shuffle(singles)
        self.singles = singles
        self.n = len(singles)
        self.next = 0

    def choose(self, values: Any) -> list[int]:
        i = self.next
        self.next = i + 1 if i + 1 < self.n else 0
        return self.singles[i]

    def partition_columns(self, cols: list[list[Any]], n: int) -> list[tuple[int, list[list[Any]], int]]:
        """Contiguous slices of about ``n / tasks`` tuples, dealt round robin from where the
        rotation stands (the same even load as one tuple at a time)."""
        m = self.n
        if m == 1 or n <= 0:
            return [(self.singles[0][0], cols, n)] if n > 0 else []
        chunks = min(m, n)
        size = -(-n // chunks)
        out: list[tuple[int, list[list[Any]], int]] = []
        i = self.next
        for start in range(0, n, size):
            end = min(start + size, n)
            out.append((self.singles[i][0], [c[start:end] for c in cols], end - start))
            i = i + 1 if i + 1 < m else 0
        self.next = i
        return out


class FieldsRouter(Router):
    """The task is chosen by the stable hash of the key fields."""

    def __init__(self, tasks: Sequence[int], source_fields: Fields, key_fields: Sequence[str]) -> None:
        self.singles = [[t] for t in sorted(tasks)]
        self.n = len(self.singles)
        self.idx = [source_fields.index_of(f) for f in key_fields]
        #: the index of the one key field, or -1 when the key has several fields
        self.single = self.idx[0] if len(self.idx) == 1 else -1
        # str keys only: 1, 1.0 and True are equal dict keys but hash differently here.
        self.cache: dict[str, list[int]] = {}

    def choose(self, values: Any) -> list[int]:
        i = self.single
        if i < 0:
            return self.singles[stable_hash([values[j] for j in self.idx]) % self.n]
        v = cast(list[Any], values)[i] if type(values) is list else values[i]
        if type(v) is not str:
            return self.singles[stable_hash(v) % self.n]
        chosen = self.cache.get(v)
        if chosen is None:
            chosen = self.singles[zlib.crc32(v.encode()) % self.n]
            if len(self.cache) >= KEY_CACHE_SIZE:
                self.cache.clear()
            self.cache[v] = chosen
        return chosen

    def partition_columns(self, cols: list[list[Any]], n: int) -> list[tuple[int, list[list[Any]], int]]:
        """One pass over the key column (the key cache inline); one task: the columns whole."""
        if self.n == 1:
            return [(self.singles[0][0], cols, n)] if n > 0 else []
        k = self.single
        if k < 0:
            return Router.partition_columns(self, cols, n)
        keys = cols[k]
        cache = self.cache
        width = len(cols)
        parts: dict[int, list[list[Any]]] = {}
        for i in range(n):
            v = keys[i]
            chosen = cache.get(v) if type(v) is str else None
            if chosen is None:
                chosen = self.choose([c[i] for c in cols])
            t = chosen[0]
            part = parts.get(t)
            if part is None:
                part = [[] for _ in range(width)]
                parts[t] = part
            if width == 1:
                part[0].append(v)
            else:
                for j in range(width):
                    part[j].append(cols[j][i])
        return [(t, part, len(part[0])) for t, part in parts.items()]

    def choose_many(self, values_list: list[Any]) -> list[list[int]]:
        i = self.single
        if i < 0:
            return [self.choose(values) for values in values_list]
        cache = self.cache
        out: list[list[int]] = []
        for values in values_list:  # one pass: the key cache inline, misses by choose
            v = values[i] if type(values) is not list else cast(list[Any], values)[i]
            chosen = cache.get(v) if type(v) is str else None
            out.append(chosen if chosen is not None else self.choose(values))
        return out


class PartialKeyRouter(Router):
    """Two candidate tasks per key (two hash functions); the one this emitter loaded less wins."""

    def __init__(self, tasks: Sequence[int], source_fields: Fields, key_fields: Sequence[str]) -> None:
        self.ordered = sorted(tasks)
        self.idx = [source_fields.index_of(f) for f in key_fields]
        self.load = dict.fromkeys(self.ordered, 0)

    def choose(self, values: Any) -> list[int]:
        key = [values[j] for j in self.idx]
        n = len(self.ordered)
        h1 = stable_hash(key)
        h2 = zlib.crc32(msgpack.packb(key, default=repr), 0x9E3779B9)
        a, b = self.ordered[h1 % n], self.ordered[h2 % n]
        t = a if self.load[a] <= self.load[b] else b
        self.load[t] += 1
        return [t]


class FixedRouter(Router):
    """Always the same task list: ``all`` (every task) or ``global`` (the lowest id)."""

    def __init__(self, tasks: list[int]) -> None:
        self.tasks = tasks

    def choose(self, values: Any) -> list[int]:
        return self.tasks

    def partition_columns(self, cols: list[list[Any]], n: int) -> list[tuple[int, list[list[Any]], int]]:
        """Every task gets the columns whole (shared)."""
        return [(t, cols, n) for t in self.tasks] if n > 0 else []


class NoneRouter(Router):
    """No preference: a random task."""

    def __init__(self, tasks: Sequence[int]) -> None:
        self.singles = [[t] for t in tasks]

    def choose(self, values: Any) -> list[int]:
        return random.choice(self.singles)


class CustomRouter(Router):
    """A user ``CustomStreamGrouping``; its choices are checked against the target tasks."""

    def __init__(self, grouping: g.Grouping, context: Any, stream: str, tasks: Sequence[int],
                 emitter_task: int, target_component: str) -> None:
        cls = import_object(grouping.custom_class or "")
        self.impl: Any = cls(**grouping.custom_kwargs)
        self.impl.prepare(context, stream, list(tasks))
        self.allowed = frozenset(tasks)
        self.emitter_task = emitter_task
        self.class_path = grouping.custom_class
        self.target_component = target_component

    def choose(self, values: Any) -> list[int]:
        chosen = list(self.impl.choose_tasks(self.emitter_task, values))
        for t in chosen:
            if t not in self.allowed:
                raise ValueError(f"custom grouping {self.class_path} chose task {t}, not a task "
                                 f"of {self.target_component!r} {sorted(self.allowed)}")
        return chosen


def make_router(grouping: g.Grouping, tasks: list[int], source_fields: Fields, *,
                local_tasks: frozenset[int], context: Any, stream: str, emitter_task: int,
                target_component: str) -> Router:
    """Build the router for one subscription (direct groupings have none: emit_direct chooses).

    A target component with one task gets that task for every tuple whatever the grouping (a
    custom grouping is still asked: its choice is checked), so the built-in groupings become a
    ``FixedRouter`` of it once their settings are checked: no hashing or rotation per tuple."""
    router = _grouping_router(grouping, tasks, source_fields, local_tasks=local_tasks,
                              context=context, stream=stream, emitter_task=emitter_task,
                              target_component=target_component)
    if len(tasks) == 1 and grouping.type != g.CUSTOM:
        return FixedRouter(list(tasks))
    return router


def _grouping_router(grouping: g.Grouping, tasks: list[int], source_fields: Fields, *,
                     local_tasks: frozenset[int], context: Any, stream: str, emitter_task: int,
                     target_component: str) -> Router:
    """The router of ``grouping`` over ``tasks`` (checks the grouping's key fields)."""
    t = grouping.type
    if t == g.SHUFFLE:
        return ShuffleRouter(tasks)
    if t == g.LOCAL_OR_SHUFFLE:
        local = [x for x in tasks if x in local_tasks]
        return ShuffleRouter(local or tasks)
    if t == g.FIELDS:
        return FieldsRouter(tasks, source_fields, grouping.fields)
    if t == g.PARTIAL_KEY:
        return PartialKeyRouter(tasks, source_fields, grouping.fields)
    if t == g.ALL:
        return FixedRouter(sorted(tasks))
    if t == g.GLOBAL:
        return FixedRouter([min(tasks)])
    if t == g.NONE:
        return NoneRouter(tasks)
    if t == g.CUSTOM:
        return CustomRouter(grouping, context, stream, tasks, emitter_task, target_component)
    raise ValueError(f"no router for grouping {t!r}")


class StreamRouter:
    """Everything an emit on one (component, stream) needs: fields, directness, and ``choose``
    returning the target tasks over all subscribers."""

    def __init__(self, stream: str, fields: Fields, direct: bool, routers: list[Router],
                 direct_tasks: frozenset[int]) -> None:
        self.stream = stream
        self.fields = fields
        self.n_fields = len(fields)
        self.direct = direct
        self.direct_tasks = direct_tasks
        self.emitted = 0
        self.routers = routers
        #: the router when the stream has exactly one subscriber (the common case)
        self.only: Router | None = routers[0] if len(routers) == 1 else None
        self.none: list[int] = []
        #: every subscriber is a columnar bolt (``execute_columns``): emit_many builds one
        #: ``ColumnBatch`` per target task (set by the task factory; ``column_path.py``)
        self.columns = False

    def choose(self, values: Any) -> list[int]:
        """The target tasks of ``values`` over every subscriber (shared list: do not mutate)."""
        only = self.only
        if only is not None:
            return only.choose(values)
        if not self.routers:
            return self.none
        out: list[int] = []
        for r in self.routers:
            out.extend(r.choose(values))
        return out

    def choose_many(self, values_list: list[Any]) -> list[list[int]]:
        """``choose`` of each values, in order (shared lists: do not mutate them)."""
        only = self.only
        if only is not None:
            return only.choose_many(values_list)
        return [self.choose(values) for values in values_list]
