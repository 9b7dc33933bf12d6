"""Built-in operations (Storm's ``org.apache.storm.trident.operation.builtin``): ``Count``,
``Sum``, ``Min``, ``Max`` (combiners), ``FirstN`` (an assembly: the first ``n`` tuples of the
batch, optionally the largest/smallest by a field) and ``Debug`` (a filter that prints)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stormpy.trident._operation import (
    Aggregator,
    CombinerAggregator,
    Filter,
    TridentCollector,
    TridentTuple,
)

if TYPE_CHECKING:
    from stormpy.trident._stream import Stream

__all__ = ["Count", "Debug", "FirstN", "Max", "Min", "Sum"]


class Count(CombinerAggregator):
    """The number of tuples (0 for an empty batch)."""

    def init(self, tuple_: TridentTuple) -> int:
        return 1

    def combine(self, val1: Any, val2: Any) -> Any:
        return val1 + val2

    def zero(self) -> int:
        return 0


class Sum(CombinerAggregator):
    """The sum of the first input field (0 for an empty batch)."""

    def init(self, tuple_: TridentTuple) -> Any:
        return tuple_[0]

    def combine(self, val1: Any, val2: Any) -> Any:
        return val1 + val2

    def zero(self) -> int:
        return 0


class _Comparison(CombinerAggregator):
    def __init__(self, field: str | None = None) -> None:
        self.field = field

    def init(self, tuple_: TridentTuple) -> Any:
        return tuple_[self.field] if self.field is not None else tuple_[0]

    def zero(self) -> Any:
        return None

    def pick(self, val1: Any, val2: Any) -> Any:
        raise NotImplementedError

    def combine(self, val1: Any, val2: Any) -> Any:
        if val1 is None:
            return val2
        if val2 is None:
            return val1
        return self.pick(val1, val2)


class Min(_Comparison):
    """The smallest value of ``field`` (default: the first input field); None when empty."""

    def pick(self, val1: Any, val2: Any) -> Any:
        return min(val1, val2)


class Max(_Comparison):
    """The largest value of ``field`` (default: the first input field); None when empty."""

    def pick(self, val1: Any, val2: Any) -> Any:
        return max(val1, val2)


class Debug(Filter):
    """Prints every tuple (``DEBUG: [...]``, or ``DEBUG(<name>): ...``) and keeps it."""

    def __init__(self, name: str | None = None) -> None:
        self.name = name

    def is_keep(self, tuple_: TridentTuple) -> bool:
        prefix = f"DEBUG({self.name}): " if self.name else "DEBUG: "
        print(prefix + repr(list(tuple_)), flush=True)
        return True


class FirstNAgg(Aggregator):
    """The first ``n`` whole tuples; sorted by ``sort_field`` (descending when ``reverse``,
    Storm's default order for a sort field is ascending) when given."""

    def __init__(self, n: int, sort_field: str | None = None, reverse: bool = False) -> None:
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"FirstN needs n >= 1, got {n!r}")
        self.n = n
        self.sort_field = sort_field
        self.reverse = reverse

    def init(self, batch_id: Any, collector: TridentCollector) -> list[TridentTuple]:
        return []

    def aggregate(self, state: Any, tuple_: TridentTuple, collector: TridentCollector) -> None:
        state.append(tuple_)
        if self.sort_field is None and len(state) > self.n:
            state.pop()

    def complete(self, state: Any, collector: TridentCollector) -> None:
        rows = state
        if self.sort_field is not None:
            rows = sorted(state, key=lambda t: t[self.sort_field], reverse=self.reverse)
        for row in rows[:self.n]:
            collector.emit(list(row))


class FirstN:
    """An assembly (``stream.apply_assembly(FirstN(n, sort_field, reverse))``): the first ``n``
    tuples of each batch, by ``sort_field`` when given; keeps the stream's fields."""

    def __init__(self, n: int, sort_field: str | None = None, reverse: bool = False) -> None:
        self.agg = FirstNAgg(n, sort_field, reverse)

    def apply(self, stream: Stream) -> Stream:
        fields = list(stream.fields)
        return stream.partition_aggregate(fields, self.agg, fields) \
            .global_().partition_aggregate(fields, self.agg, fields)
