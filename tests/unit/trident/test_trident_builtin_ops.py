"""The built-in operations on their own, as a batch meets them: ``Debug`` prints each tuple with
its prefix and keeps it; ``FirstN`` takes n >= 1 and keeps the first n tuples, or the smallest
(the largest with ``reverse``) by its sort field; ``Min``/``Max`` read the field they were given,
else the first."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy.trident import Debug, FirstN, FixedBatchSpout, Max, Min, TridentTopology
from stormpy.trident._builtin import FirstNAgg
from stormpy.trident._operation import TridentCollector, TridentTuple

FIELDS = ["word", "n"]
ROWS = [["c", 3], ["d", 1], ["a", 4], ["b", 2]]  # by word and by n in other orders


def first_n(agg: FirstNAgg) -> list[list[Any]]:
    out: list[list[Any]] = []
    collector = TridentCollector(lambda values: out.append(list(values)))
    state = agg.init(1, collector)
    for row in ROWS:
        agg.aggregate(state, TridentTuple(row, FIELDS), collector)
    agg.complete(state, collector)
    return out


def test_debug_prints_each_tuple_with_its_prefix_and_keeps_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert Debug().is_keep(TridentTuple(["a", 1], FIELDS)) is True
    assert Debug("words").is_keep(TridentTuple(["b", 2], FIELDS)) is True
    assert capsys.readouterr().out == "DEBUG: ['a', 1]\nDEBUG(words): ['b', 2]\n"


def test_first_n_takes_n_from_one_and_keeps_the_first_or_the_smallest_by_its_field() -> None:
    assert first_n(FirstNAgg(1)) == [["c", 3]]
    assert first_n(FirstNAgg(2)) == [["c", 3], ["d", 1]]
    assert first_n(FirstNAgg(2, "n")) == [["d", 1], ["b", 2]]  # ascending, as Storm's default
    assert first_n(FirstNAgg(2, "n", reverse=True)) == [["a", 4], ["c", 3]]
    assert first_n(FirstN(2, "n").agg) == [["d", 1], ["b", 2]]
    assert first_n(FirstN(2, "n", reverse=True).agg) == [["a", 4], ["c", 3]]
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match=f"FirstN needs n >= 1, got {bad!r}"):
            FirstNAgg(bad)  # type: ignore[arg-type]


def test_min_and_max_read_their_field_else_the_first() -> None:
    row = TridentTuple(["b", 7], FIELDS)
    assert Min("n").init(row) == Max("n").init(row) == 7
    assert Min().init(row) == Max().init(row) == "b"


def test_first_n_keeps_the_streams_fields_for_what_follows() -> None:
    t = TridentTopology()
    s = t.new_stream("fn", FixedBatchSpout(FIELDS, 2, ROWS))
    kept = s.apply_assembly(FirstN(2, "n"))
    assert kept.fields == FIELDS
    kept.project(["n"])  # a later operation finds the fields by name
