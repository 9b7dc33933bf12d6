"""The operations of one bolt at run time: a tree of processors fed one tuple at a time and
finished in plan order when the batch is complete (Storm's ``trident.planner.processor``).

A processor's ``execute(values)`` gets the values of its input stream (a list); it calls
``self.emit(values)``, which hands them to each child in the same bolt (a plain call, no tuple
hop) and, when the node's output leaves the bolt, emits them on the node's stream.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from stormpy.trident._operation import (
    Aggregator,
    CombinerAggregator,
    Consumer,
    Filter,
    FlatMapFunction,
    Function,
    MapFunction,
    ReducerAggregator,
    TridentCollector,
    TridentTuple,
)
from stormpy.trident._state import MapState

Emit = Callable[[list[Any]], None]


class Processor:
    """Base: ``execute`` per tuple, ``finish`` once per batch after every tuple."""

    def __init__(self, spec: dict[str, Any], ops: Sequence[Any], in_fields: Sequence[str]) -> None:
        self.spec = spec
        self.ops = ops
        self.in_fields = list(in_fields)
        self.targets: list[Emit] = []

    def emit(self, values: list[Any]) -> None:
        for target in self.targets:
            target(values)

    def execute(self, values: list[Any], side: int = 0) -> None:
        self.emit(values)

    def finish(self) -> None:
        """The batch is complete on this task."""


def _tuple(values: Sequence[Any], idx: Sequence[int], fields: Sequence[str]) -> TridentTuple:
    return TridentTuple([values[i] for i in idx], fields)


class Each(Processor):
    """``each`` with a Function (outputs appended) or a Filter; ``map``; ``flat_map``; ``peek``;
    ``project``."""

    def __init__(self, spec: dict[str, Any], ops: Sequence[Any], in_fields: Sequence[str]) -> None:
        super().__init__(spec, ops, in_fields)
        self.idx: list[int] = spec.get("in", [])
        self.fields: list[str] = spec.get("in_fields", [])
        op: Any = ops[0] if ops else None
        kind = spec["op"]
        self.fn: Callable[[list[Any]], None]
        if kind == "project":
            self.fn = lambda v: self.emit([v[i] for i in self.idx])
        elif kind == "each":
            self.fn = self._function(op) if isinstance(op, Function) else self._callable_each(op)
        elif kind == "filter":
            keep = op.is_keep if isinstance(op, Filter) else op
            self.fn = lambda v: self.emit(v) if keep(_tuple(v, self.idx, self.fields)) else None
        elif kind == "map":
            call = op.execute if isinstance(op, MapFunction) else op
            self.fn = lambda v: self.emit(_values(call(TridentTuple(v, self.in_fields))))
        elif kind == "flat_map":
            flat = op.execute if isinstance(op, FlatMapFunction) else op

            def run(v: list[Any]) -> None:
                for out in flat(TridentTuple(v, self.in_fields)):
                    self.emit(_values(out))
            self.fn = run
        elif kind == "peek":
            accept = op.accept if isinstance(op, Consumer) else op

            def look(v: list[Any]) -> None:
                accept(TridentTuple(v, self.in_fields))
                self.emit(v)
            self.fn = look
        else:
            raise ValueError(f"unknown trident operation {kind!r}")

    def _function(self, op: Function) -> Callable[[list[Any]], None]:
        current: list[Any] = []
        collector = TridentCollector(lambda out: self.emit([*current, *_values(out)]))

        def run(v: list[Any]) -> None:
            current[:] = v
            op.execute(_tuple(v, self.idx, self.fields), collector)
        return run

    def _callable_each(self, fn: Callable[..., Any]) -> Callable[[list[Any]], None]:
        """A plain function in ``each``: returns an iterable of output value lists (or None)."""
        def run(v: list[Any]) -> None:
            for out in fn(_tuple(v, self.idx, self.fields)) or ():
                self.emit([*v, *_values(out)])
        return run

    def execute(self, values: list[Any], side: int = 0) -> None:
        self.fn(values)


def _values(out: Any) -> list[Any]:
    return list(out) if isinstance(out, (list, tuple)) else [out]


class AggRun:
    """One aggregator's state for one group of one batch; ``add(tuple)`` is picked once for the
    aggregator's kind (no per-tuple dispatch)."""

    def __init__(self, op: Any, mode: str, batch_id: Any) -> None:
        self.op = op
        self.out: list[list[Any]] = []
        self.collector = TridentCollector(lambda values: self.out.append(_values(values)))
        self.add: Callable[[TridentTuple], None]
        if mode == "combine":  # partial values of the partitions, combined
            self.state = op.zero()
            combine = op.combine

            def add_partial(tup: TridentTuple) -> None:
                self.state = combine(self.state, tup[0])
            self.add = add_partial
        elif isinstance(op, CombinerAggregator):
            self.state = op.zero()
            combine, init = op.combine, op.init

            def add_combined(tup: TridentTuple) -> None:
                self.state = combine(self.state, init(tup))
            self.add = add_combined
        elif isinstance(op, ReducerAggregator):
            self.state = op.init()
            reduce = op.reduce

            def add_reduced(tup: TridentTuple) -> None:
                self.state = reduce(self.state, tup)
            self.add = add_reduced
        elif isinstance(op, Aggregator):
            self.state = op.init(batch_id, self.collector)
            aggregate, collector = op.aggregate, self.collector
            self.add = lambda tup: aggregate(self.state, tup, collector)
        else:
            raise TypeError(f"{type(op).__qualname__} is not an aggregator")

    def results(self) -> list[list[Any]]:
        if isinstance(self.op, Aggregator):
            self.op.complete(self.state, self.collector)
            return self.out
        return [[self.state]]


class Aggregate(Processor):
    """``partition_aggregate`` / ``aggregate`` / grouped and chained aggregates: outputs
    ``[*group, *agg1 outputs, *agg2 outputs...]`` (the cross product of each aggregator's
    results) at the end of the batch; without grouping exactly one set per batch."""

    def __init__(self, spec: dict[str, Any], ops: Sequence[Any], in_fields: Sequence[str],
                 batch_id: Any) -> None:
        super().__init__(spec, ops, in_fields)
        self.group: list[int] | None = spec.get("group")
        self.aggs: list[tuple[list[int], list[str]]] = [(a["in"], a["in_fields"])
                                                        for a in spec["aggs"]]
        self.modes: list[str] = [a.get("mode", "full") for a in spec["aggs"]]
        self.batch_id = batch_id
        self.groups: dict[Any, tuple[list[Any], list[AggRun]]] = {}
        if self.group is None:
            self._runs((), [])

    def _runs(self, hk: Any, key: list[Any]) -> list[AggRun]:
        entry = self.groups.get(hk)
        if entry is None:
            entry = self.groups[hk] = (key, [AggRun(op, mode, self.batch_id)
                                             for op, mode in zip(self.ops, self.modes,
                                                                 strict=True)])
        return entry[1]

    def execute(self, values: list[Any], side: int = 0) -> None:
        group = self.group
        if group is None:
            hk: Any = ()
            key: list[Any] = []
        else:
            key = [values[i] for i in group]
            hk = key[0] if len(key) == 1 else key
            if isinstance(hk, (list, tuple, dict)):
                hk = _hashable(hk)
        entry = self.groups.get(hk)
        runs = entry[1] if entry is not None else self._runs(hk, key)
        for run, (idx, fields) in zip(runs, self.aggs, strict=True):
            run.add(TridentTuple([values[i] for i in idx], fields))

    def finish(self) -> None:
        for key, runs in self.groups.values():
            rows: list[list[Any]] = [list(key)]
            for run in runs:
                rows = [row + out for row in rows for out in run.results()]
            for row in rows:
                self.emit(row)


def _hashable(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


class Join(Processor):
    """An inner join within the batch: output ``[*keys, *rest of side 0, *rest of side 1...]``
    for every combination of tuples of all sides with equal keys (at the end of the batch)."""

    def __init__(self, spec: dict[str, Any], ops: Sequence[Any], in_fields: Sequence[str]) -> None:
        super().__init__(spec, ops, in_fields)
        self.sides: list[dict[str, Any]] = spec["sides"]
        self.rows: list[dict[Any, tuple[list[Any], list[list[Any]]]]] = [{} for _ in self.sides]

    def execute(self, values: list[Any], side: int = 0) -> None:
        spec = self.sides[side]
        key = [values[i] for i in spec["keys"]]
        entry = self.rows[side].setdefault(_hashable(key), (key, []))
        entry[1].append([values[i] for i in spec["rest"]])

    def finish(self) -> None:
        for hk, (key, first) in self.rows[0].items():
            combos = [list(key) + r for r in first]
            for other in self.rows[1:]:
                found = other.get(hk)
                if found is None:
                    combos = []
                    break
                combos = [c + r for c in combos for r in found[1]]
            for row in combos:
                self.emit(row)


class Persist(Processor):
    """The committer end of ``persistent_aggregate`` and ``partition_persist``: gathers the
    batch, then (in the commit phase) updates the map state once and emits the new values.

    A state with ``commit_later(txid)`` (one whose commit blocks on a remote system, such as the
    Kafka transactional sink) is not committed here: ``finish`` leaves the callable it returns in
    ``background`` and the bolt runs it off the executor loop before the batch completes."""

    def __init__(self, spec: dict[str, Any], ops: Sequence[Any], in_fields: Sequence[str],
                 state: MapState, txid: int) -> None:
        super().__init__(spec, ops, in_fields)
        self.state = state
        self.txid = txid
        self.idx: list[int] = spec["in"]
        self.fields: list[str] = spec["in_fields"]
        self.group: list[int] = spec.get("group") or []
        self.tuples: list[TridentTuple] = []
        self.keyed: dict[Any, tuple[list[Any], list[TridentTuple]]] = {}
        #: the state's blocking commit, left by ``finish`` for the bolt to run off the loop
        self.background: Callable[[], None] | None = None

    def execute(self, values: list[Any], side: int = 0) -> None:
        tup = _tuple(values, self.idx, self.fields)
        if self.spec["op"] == "persist_updater":
            self.tuples.append(tup)
            return
        key = [values[i] for i in self.group]
        self.keyed.setdefault(_hashable(key), (key, []))[1].append(tup)

    def finish(self) -> None:
        op = self.ops[0]
        self.state.begin_commit(self.txid)
        if self.spec["op"] == "persist_updater":
            op.update_state(self.state, self.tuples, TridentCollector(
                lambda values: self.emit(_values(values))))
        else:
            keys = [key for key, _ in self.keyed.values()]
            fns = [self._updater(op, tuples) for _, tuples in self.keyed.values()]
            if not keys and not self.group:
                keys, fns = [[]], [self._updater(op, [])]
            for key, value in zip(keys, self.state.multi_update(keys, fns), strict=True):
                self.emit([*key, value])
        commit_later = getattr(self.state, "commit_later", None)
        if commit_later is not None:
            self.background = commit_later(self.txid)
        else:
            self.state.commit(self.txid)

    def _updater(self, op: Any, tuples: list[TridentTuple]) -> Callable[[Any], Any]:
        if isinstance(op, CombinerAggregator):
            batch = op.zero()
            for t in tuples:  # partial values of the partitions, combined
                batch = op.combine(batch, t[0])

            def combine(stored: Any) -> Any:
                return batch if stored is None else op.combine(stored, batch)
            return combine

        def reduce(stored: Any) -> Any:
            value = op.init() if stored is None else stored
            for t in tuples:
                value = op.reduce(value, t)
            return value
        return reduce


class Query(Processor):
    """``state_query``: the batch's tuples retrieved from the state at once at the end of the
    batch; outputs the input values with the query function's fields appended."""

    def __init__(self, spec: dict[str, Any], ops: Sequence[Any], in_fields: Sequence[str],
                 state: MapState) -> None:
        super().__init__(spec, ops, in_fields)
        self.state = state
        self.idx: list[int] = spec["in"]
        self.fields: list[str] = spec["in_fields"]
        self.rows: list[list[Any]] = []

    def execute(self, values: list[Any], side: int = 0) -> None:
        self.rows.append(values)

    def finish(self) -> None:
        op = self.ops[0]
        tuples = [_tuple(v, self.idx, self.fields) for v in self.rows]
        results = op.batch_retrieve(self.state, tuples) if tuples else []
        for values, tup, result in zip(self.rows, tuples, results, strict=True):
            op.execute(tup, result, TridentCollector(self._appender(values)))

    def _appender(self, values: list[Any]) -> Callable[[Sequence[Any]], None]:
        return lambda out: self.emit([*values, *_values(out)])
