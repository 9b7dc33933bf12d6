"""The tuple a bolt receives."""

from __future__ import annotations

from typing import Any, Final

from stormpy.topology._fields import Fields

DEFAULT_STREAM: Final = "default"
TICK_STREAM: Final = "__tick"
SYSTEM_COMPONENT: Final = "__system"
#: Storm's system stream: every component has it implicitly (fields ``["event"]``) and each of its
#: tasks emits ``["startup"]`` on it once when the worker starts it; bolts may subscribe to it
SYSTEM_STREAM: Final = "__system"


try:  # mypy's decorator for compiled classes; a plain install may not have it
    from mypy_extensions import mypyc_attr
except ImportError:  # pragma: no cover - the attributes only matter to mypyc at build time
    def mypyc_attr(*args: Any, **attrs: Any) -> Any:  # type: ignore[misc]  # noqa: ARG001
        """No-op stand-in: the attributes are read by mypyc when it compiles this module."""
        return lambda cls: cls


# Compiled (mypyc), a Tuple is allocated once per emit and freed once processed, so the class
# keeps its last freed instance for the next one (``free_list_len``) and is not tracked by the
# cycle collector (``acyclic``): a Tuple refers to its values, fields and anchors, never back to
# itself, so it cannot be part of a reference cycle unless user code puts the tuple in its own
# values (such a tuple would then not be collected: do not).
@mypyc_attr(free_list_len=1, acyclic=True)
class Tuple:
    """One tuple as seen by a bolt: its values plus where it came from.

    ``values`` is the list of emitted values, in the order of the source stream's fields.
    The rest of the state is runtime bookkeeping, not for user code: a tuple in exactly one spout
    tuple's tree has that tree's ``root`` id and its own ``edge`` id there (the common case,
    kept in two plain fields so tracking allocates nothing more); a tuple in several trees has
    ``root`` 0 and ``anchors`` mapping each root onto its edge; an untracked tuple has neither.
    """

    __slots__ = ("values", "stream", "task", "component", "fields", "root", "edge", "anchors",
                 "ack_val")

    def __init__(self, values: Any, stream: str, task: int, component: str,
                 fields: Fields | None, root: int = 0, edge: int = 0,
                 anchors: dict[int, int] | None = None) -> None:
        self.values = values
        self.stream = stream
        self.task = task
        self.component = component
        self.fields = fields
        self.root = root
        self.edge = edge
        self.anchors = anchors
        #: XOR of the edge ids of tuples emitted anchored to this one (folded into its ack).
        self.ack_val = 0

    def tree_edges(self) -> dict[int, int]:
        """Root id → this tuple's edge id, for every spout-tuple tree it belongs to."""
        if self.root:
            return {self.root: self.edge}
        return dict(self.anchors) if self.anchors else {}

    def __getitem__(self, key: int | str) -> Any:
        """``tup[0]`` by position or ``tup["word"]`` by field name."""
        if isinstance(key, str):
            if self.fields is None:
                raise KeyError(f"tuple from {self.component}/{self.stream} has no declared fields")
            return self.values[self.fields.index_of(key)]
        return self.values[key]

    def value(self, field: str) -> Any:
        """The value of ``field``; KeyError naming the field when the stream has no such field."""
        return self[field]

    def as_dict(self) -> dict[str, Any]:
        """Field name → value."""
        return dict(zip(self.fields or (), self.values))

    def is_tick(self) -> bool:
        """True for the tick tuples sent by ``topology.tick.tuple.freq.secs``: component
        ``"__system"``, stream ``"__tick"``, task -1, values ``[period in seconds (float)]``.
        Ticks carry no anchors; acking one is harmless."""
        return self.stream == TICK_STREAM and self.component == SYSTEM_COMPONENT

    def __len__(self) -> int:
        return len(self.values)

    def __reduce__(self) -> tuple[Any, ...]:
        """copy and pickle support, spelled out so that it also holds when this module is
        compiled (a compiled class has no ``__slots__``-based default)."""
        return _restore, (self.values, self.stream, self.task, self.component, self.fields,
                          self.root, self.edge, self.anchors, self.ack_val)

    def __repr__(self) -> str:
        return (f"Tuple(component={self.component!r}, stream={self.stream!r}, task={self.task}, "
                f"values={self.values!r})")


def _restore(values: Any, stream: str, task: int, component: str, fields: Fields | None,
             root: int, edge: int, anchors: dict[int, int] | None, ack_val: int) -> Tuple:
    tup = Tuple(values, stream, task, component, fields, root, edge, anchors)
    tup.ack_val = ack_val
    return tup
