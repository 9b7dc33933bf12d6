"""Groupings turned into routers: for one emitted tuple, which task ids receive it.

Routers are built once per emitting task and called on every emit, so each ``choose`` is a few
operations and returns a list it may share between calls (callers must not mutate it).
Fields hashing is stable across processes (CRC32 of the key, never Python's salted ``hash``), so
every worker sends a key to the same task.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Sequence
from itertools import cycle
from typing import Any

import msgpack

from stormpy.topology import grouping as g
from stormpy.topology.fields import Fields
from stormpy.topology.imports import import_object

Chooser = Callable[[list[Any]], list[int]]
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


class ShuffleRouter:
    """Round robin over a shuffled order of the tasks (even load, Storm's shuffle)."""

    def __init__(self, tasks: Sequence[int]) -> None:
        singles = [[t] for t in tasks]
        random.shuffle(singles)
        next_single = cycle(singles).__next__
        self.choose: Chooser = lambda values: next_single()


class FieldsRouter:
    """The task is chosen by the stable hash of the key fields."""

    def __init__(self, tasks: Sequence[int], source_fields: Fields, key_fields: Sequence[str]) -> None:
        singles = [[t] for t in sorted(tasks)]
        n = len(singles)
        idx = [source_fields.index_of(f) for f in key_fields]
        if len(idx) == 1:
            i = idx[0]
            # str keys only: 1, 1.0 and True are equal dict keys but hash differently here.
            cache: dict[str, list[int]] = {}

            def choose(values: list[Any]) -> list[int]:
                v = values[i]
                if type(v) is not str:
                    return singles[stable_hash(v) % n]
                chosen = cache.get(v)
                if chosen is None:
                    chosen = singles[zlib.crc32(v.encode()) % n]
                    if len(cache) >= KEY_CACHE_SIZE:
                        cache.clear()
                    cache[v] = chosen
                return chosen
        else:
            def choose(values: list[Any]) -> list[int]:
                return singles[stable_hash([values[j] for j in idx]) % n]
        self.choose = choose


class PartialKeyRouter:
    """Two candidate tasks per key (two hash functions); the one this emitter loaded less wins."""

    def __init__(self, tasks: Sequence[int], source_fields: Fields, key_fields: Sequence[str]) -> None:
        ordered = sorted(tasks)
        n = len(ordered)
        idx = [source_fields.index_of(f) for f in key_fields]
        load = dict.fromkeys(ordered, 0)

        def choose(values: list[Any]) -> list[int]:
            key = [values[j] for j in idx]
            h1 = stable_hash(key)
            h2 = zlib.crc32(msgpack.packb(key, default=repr), 0x9E3779B9)
            a, b = ordered[h1 % n], ordered[h2 % n]
            t = a if load[a] <= load[b] else b
            load[t] += 1
            return [t]
        self.choose = choose


class FixedRouter:
    """Always the same task list: ``all`` (every task) or ``global`` (the lowest id)."""

    def __init__(self, tasks: list[int]) -> None:
        self.choose: Chooser = lambda values: tasks


class NoneRouter:
    """No preference: a random task."""

    def __init__(self, tasks: Sequence[int]) -> None:
        singles = [[t] for t in tasks]
        self.choose: Chooser = lambda values: random.choice(singles)


class CustomRouter:
    """A user ``CustomStreamGrouping``; its choices are checked against the target tasks."""

    def __init__(self, grouping: g.Grouping, context: Any, stream: str, tasks: Sequence[int],
                 emitter_task: int, target_component: str) -> None:
        cls = import_object(grouping.custom_class or "")
        impl = cls(**grouping.custom_kwargs)
        impl.prepare(context, stream, list(tasks))
        allowed = frozenset(tasks)

        def choose(values: list[Any]) -> list[int]:
            chosen = list(impl.choose_tasks(emitter_task, values))
            for t in chosen:
                if t not in allowed:
                    raise ValueError(f"custom grouping {grouping.custom_class} chose task {t}, not a "
                                     f"task of {target_component!r} {sorted(allowed)}")
            return chosen
        self.choose = choose


def make_router(grouping: g.Grouping, tasks: list[int], source_fields: Fields, *,
                local_tasks: frozenset[int], context: Any, stream: str, emitter_task: int,
                target_component: str) -> Any:
    """Build the router for one subscription (direct groupings have none: emit_direct chooses)."""
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

    __slots__ = ("stream", "fields", "n_fields", "direct", "direct_tasks", "choose", "emitted")

    def __init__(self, stream: str, fields: Fields, direct: bool, routers: list[Any],
                 direct_tasks: frozenset[int]) -> None:
        self.stream = stream
        self.fields = fields
        self.n_fields = len(fields)
        self.direct = direct
        self.direct_tasks = direct_tasks
        self.emitted = 0
        if not routers:
            empty: list[int] = []
            self.choose: Chooser = lambda values: empty
        elif len(routers) == 1:
            self.choose = routers[0].choose
        else:
            choosers = [r.choose for r in routers]

            def choose(values: list[Any]) -> list[int]:
                out: list[int] = []
                for c in choosers:
                    out.extend(c(values))
                return out
            self.choose = choose
