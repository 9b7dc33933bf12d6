"""The columnar batch a bolt's ``execute_columns`` receives.

A ``ColumnBatch`` is several tuples of one stream from one task, emitted together by one
``emit_many`` with the same anchors: ONE node of the tuple tree. It carries the rows (one values
list per tuple, in the stream's field order) and gives columns on demand; it is routed, queued,
sent between workers, acked and failed as one object. Counters (executed, acked, failed,
transferred, queue sizes) count its tuples, as Storm counts tuples.
"""

from __future__ import annotations

from typing import Any

from stormpy.topology._errors import EmitError
from stormpy.topology._fields import Fields


class ColumnBatch:
    """Tuples of one stream from one task sharing their anchors, handed over as one object.

    ``rows`` holds one values list per tuple; ``column(i)`` (or ``column("word")``) the i-th
    value of every row, built on first use and kept. ``stream``, ``task`` and ``component`` say
    where the batch came from; ``fields`` are the stream's declared fields. A batch is acked
    (``self.ack(batch)``) or failed (``self.fail(batch)``) as a whole, and tuples emitted
    anchored to it join every tree it is in: failing it fails every spout tuple it belongs to.

    The rest is runtime bookkeeping, as on ``Tuple``: ``root``/``edge`` for a batch in one tree,
    ``anchors`` (root → edge) for a batch in several, ``ack_val`` for its children's edges.
    A batch received from another worker holds its columns first; its rows are built from them
    when asked for. Its lists are the batch's own: do not change them.
    """

    __slots__ = ("_rows", "_cols", "n", "stream", "task", "component", "fields", "root", "edge",
                 "anchors", "ack_val")

    def __init__(self, rows: list[list[Any]] | None, stream: str, task: int, component: str,
                 fields: Fields | None, root: int = 0, edge: int = 0,
                 anchors: dict[int, int] | None = None,
                 columns: list[list[Any]] | None = None, n: int = -1) -> None:
        """From ``rows`` (``n`` is their count), or from ``columns`` and their length ``n``."""
        if rows is None:
            if columns is None or n < 0:
                raise ValueError("a ColumnBatch needs rows, or columns and their length")
            self.n = n
        else:
            self.n = len(rows)
        self._rows = rows
        self._cols = columns
        self.stream = stream
        self.task = task
        self.component = component
        self.fields = fields
        self.root = root
        self.edge = edge
        self.anchors = anchors
        #: XOR of the edge ids of tuples emitted anchored to this batch (folded into its ack)
        self.ack_val = 0

    @property
    def rows(self) -> list[list[Any]]:
        """One values list per tuple, in arrival order."""
        rows = self._rows
        if rows is None:
            cols = self._cols
            assert cols is not None
            # a stream without fields has no columns: n empty rows
            rows = [list(r) for r in zip(*cols)] if cols else [[] for _ in range(self.n)]
            self._rows = rows
        return rows

    def column(self, key: int | str) -> list[Any]:
        """The values of field ``key`` (its position, or its name) of every tuple, in order.
        IndexError / KeyError naming what is wrong for a field the stream does not have."""
        if isinstance(key, str):
            if self.fields is None:
                raise KeyError(f"batch from {self.component}/{self.stream} has no declared fields")
            i = self.fields.index_of(key)
        else:
            i = key
        cols = self.columns()
        if not -len(cols) <= i < len(cols):
            raise IndexError(f"batch from {self.component}/{self.stream} has {len(cols)} "
                             f"field(s), no field {key!r}")
        return cols[i]

    def columns(self) -> list[list[Any]]:
        """Every column, in field order (built from the rows on first use)."""
        cols = self._cols
        if cols is None:
            rows = self._rows
            assert rows is not None
            width = len(self.fields) if self.fields is not None else \
                (len(rows[0]) if rows else 0)
            cols = [[r[0] for r in rows]] if width == 1 else \
                [[r[j] for r in rows] for j in range(width)]
            self._cols = cols
        return cols

    def tree_edges(self) -> dict[int, int]:
        """Root id → this batch's edge id, for every spout-tuple tree it belongs to."""
        if self.root:
            return {self.root: self.edge}
        return dict(self.anchors) if self.anchors else {}

    def is_tick(self) -> bool:
        """Always False: tick tuples reach a bolt one at a time, as ``Tuple``s."""
        return False

    def __len__(self) -> int:
        return self.n

    def __reduce__(self) -> tuple[Any, ...]:
        """copy and pickle support (also when this module is compiled)."""
        return _restore, (self._rows, self._cols, self.n, self.stream, self.task, self.component,
                          self.fields, self.root, self.edge, self.anchors, self.ack_val)

    def __repr__(self) -> str:
        return (f"ColumnBatch(component={self.component!r}, stream={self.stream!r}, "
                f"task={self.task}, tuples={self.n})")


def _restore(rows: list[list[Any]] | None, cols: list[list[Any]] | None, n: int, stream: str,
             task: int, component: str, fields: Fields | None, root: int, edge: int,
             anchors: dict[int, int] | None, ack_val: int) -> ColumnBatch:
    batch = ColumnBatch(rows, stream, task, component, fields, root, edge, anchors, cols, n)
    batch.ack_val = ack_val
    return batch


def column_lists(columns: Any, stream: Any) -> tuple[list[list[Any]], int]:
    """``columns`` (a sequence of equal-length sequences, one per field) as a list of lists and
    their length, for ``emit_columns``. EmitError naming the stream when it is not one (a
    string, a mapping, no columns, columns of different lengths)."""
    if isinstance(columns, (str, bytes, dict)) or not hasattr(columns, "__iter__"):
        raise EmitError(f"stream {stream!r}: emit_columns takes a list of columns (one list of "
                        f"values per field), got {type(columns).__name__}")
    cols: list[list[Any]] = []
    for c in columns:
        if type(c) is not list:
            if isinstance(c, (str, bytes, dict)) or not hasattr(c, "__iter__"):
                raise EmitError(f"stream {stream!r}: emit_columns takes a list of columns, one "
                                f"of which is a {type(c).__name__}")
            c = list(c)
        cols.append(c)
    if not cols:
        raise EmitError(f"stream {stream!r}: emit_columns got no columns (a stream without "
                        "fields takes emit_many)")
    n = len(cols[0])
    for c in cols:
        if len(c) != n:
            raise EmitError(f"stream {stream!r}: emit_columns got columns of different lengths "
                            f"{[len(c) for c in cols]}")
    return cols, n


def rows_of(cols: list[list[Any]], n: int) -> list[list[Any]]:
    """The ``n`` rows of ``cols`` (one values list per tuple)."""
    if len(cols) == 1:
        return [[v] for v in cols[0]]
    return [[c[i] for c in cols] for i in range(n)]
