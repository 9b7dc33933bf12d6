"""What users subclass or pass to stream operations (Storm's ``org.apache.storm.trident.operation``).

Operations travel in the topology as data: a class by its import path with the arguments it was
constructed with (captured by :class:`Operation`), or a module-level function by its path. Never
pickled, so define them at module level and construct them from msgpack-serialisable arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from stormpy.topology._errors import InvalidTopologyError
from stormpy.topology._imports import class_path, import_object

__all__ = ["Aggregator", "CombinerAggregator", "Consumer", "Filter", "FlatMapFunction", "Function",
           "MapFunction", "Operation", "ReducerAggregator", "TridentCollector", "TridentTuple",
           "op_doc", "op_from_doc"]


class TridentTuple(tuple):  # noqa: SLOT001 - a tuple with its field names
    """The values an operation sees (its projected input fields), with access by field name:
    ``t[0]``, ``t["word"]``, ``t.get("word")``."""

    fields: Sequence[str] = ()

    def __new__(cls, values: Iterable[Any], fields: Sequence[str]) -> TridentTuple:
        obj = super().__new__(cls, values)
        obj.fields = fields
        return obj

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            try:
                return tuple.__getitem__(self, list(self.fields).index(key))
            except ValueError:
                raise KeyError(f"no field {key!r} (fields: {list(self.fields)})") from None
        return tuple.__getitem__(self, key)

    def get(self, field: str, default: Any = None) -> Any:
        return self[field] if field in self.fields else default

    @property
    def values(self) -> list[Any]:
        return list(self)


class TridentCollector:
    """Where a function or aggregator emits: ``emit(values)`` appends its output fields (a
    sequence of as many values as the operation declared output fields)."""

    def __init__(self, sink: Callable[[Sequence[Any]], None]) -> None:
        self.emit = sink

    def report_error(self, error: BaseException) -> None:
        raise error


class Operation:
    """Base of user operations: remembers its constructor arguments, so the topology can carry it
    as ``(import path, args, kwargs)``. ``prepare(conf, context)`` runs once per task before
    use, ``cleanup()`` at shutdown."""

    _init_args: tuple[tuple[Any, ...], dict[str, Any]] = ((), {})

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        obj = super().__new__(cls)
        obj._init_args = (args, kwargs)
        return obj

    def prepare(self, conf: Any, context: Any) -> None:
        """Once per task (and batch bolt instance set) before the first tuple."""

    def cleanup(self) -> None:
        """At shutdown."""


class Function(Operation):
    """``each``: ``execute(tuple, collector)`` emits zero or more value lists, appended to the
    input tuple (Storm's ``Function``)."""

    def execute(self, tuple_: TridentTuple, collector: TridentCollector) -> None:
        raise NotImplementedError


class Filter(Operation):
    """``filter``/``each`` with a filter: ``is_keep(tuple)`` keeps the tuple when true."""

    def is_keep(self, tuple_: TridentTuple) -> bool:
        raise NotImplementedError


class MapFunction(Operation):
    """``map``: ``execute(tuple)`` returns the new values (one tuple in, one out)."""

    def execute(self, tuple_: TridentTuple) -> Sequence[Any]:
        raise NotImplementedError


class FlatMapFunction(Operation):
    """``flat_map``: ``execute(tuple)`` returns an iterable of new value lists."""

    def execute(self, tuple_: TridentTuple) -> Iterable[Sequence[Any]]:
        raise NotImplementedError


class Consumer(Operation):
    """``peek``: ``accept(tuple)`` sees every tuple, which passes on unchanged."""

    def accept(self, tuple_: TridentTuple) -> None:
        raise NotImplementedError


class CombinerAggregator(Operation):
    """``init(tuple)`` → value per tuple, ``combine(a, b)``, ``zero()`` for no tuple. Combined
    partially before repartitioning (Storm's ``CombinerAggregator``)."""

    def init(self, tuple_: TridentTuple) -> Any:
        raise NotImplementedError

    def combine(self, val1: Any, val2: Any) -> Any:
        raise NotImplementedError

    def zero(self) -> Any:
        raise NotImplementedError


class ReducerAggregator(Operation):
    """``init()`` → start value, ``reduce(current, tuple)`` → next value."""

    def init(self) -> Any:
        raise NotImplementedError

    def reduce(self, curr: Any, tuple_: TridentTuple) -> Any:
        raise NotImplementedError


class Aggregator(Operation):
    """The general aggregator: ``init(batch_id, collector)`` → state, ``aggregate(state, tuple,
    collector)`` (may emit), ``complete(state, collector)`` (emits the results)."""

    def init(self, batch_id: Any, collector: TridentCollector) -> Any:
        raise NotImplementedError

    def aggregate(self, state: Any, tuple_: TridentTuple, collector: TridentCollector) -> None:
        raise NotImplementedError

    def complete(self, state: Any, collector: TridentCollector) -> None:
        raise NotImplementedError


def op_doc(op: Any, what: str) -> dict[str, Any]:
    """The data describing ``op`` (an :class:`Operation` or a module-level function);
    InvalidTopologyError naming ``what`` for anything else (a lambda, a nested function)."""
    if isinstance(op, Operation):
        cls = type(op)
        args, kwargs = op._init_args
        return {"cls": class_path(cls), "args": [_arg(a, what) for a in args],
                "kwargs": {k: _arg(v, what) for k, v in kwargs.items()}}
    if callable(op) and hasattr(op, "__qualname__") and hasattr(op, "__module__"):
        if "<" in op.__qualname__:
            raise InvalidTopologyError(
                f"{what}: {op.__qualname__} is a lambda or nested function; workers import "
                "operations by path, so pass a module-level function or an Operation instance")
        return {"fn": f"{op.__module__}:{op.__qualname__}"}
    raise InvalidTopologyError(f"{what}: {op!r:.80} is neither an Operation nor a function")


def _arg(value: Any, what: str) -> Any:
    if isinstance(value, Operation):
        return {"$op": op_doc(value, what)}
    return value


def _unarg(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"$op"}:
        return op_from_doc(value["$op"])
    return value


def op_from_doc(doc: dict[str, Any]) -> Any:
    """The operation (or function) ``doc`` describes."""
    if "fn" in doc:
        return import_object(doc["fn"])
    cls = import_object(doc["cls"])
    return cls(*[_unarg(a) for a in doc.get("args", [])],
               **{k: _unarg(v) for k, v in doc.get("kwargs", {}).items()})
