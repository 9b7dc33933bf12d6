"""BatchCollector (stormpy._batching): batches per input stream, closed by count, age or idleness."""

from __future__ import annotations

import pytest

from stormpy._batching import CLOSED_BY_COUNT, CLOSED_BY_IDLE, CLOSED_BY_TIME, BatchCollector
from stormpy.topology import ColumnBatch, Fields, Tuple


def tup(*values: object, stream: str = "default", fields: tuple[str, ...] | None = ("k", "v")) -> Tuple:
    return Tuple(list(values), stream, 1, "src", Fields(fields) if fields is not None else None)


def test_count_closes_and_streams_are_kept_apart() -> None:
    c = BatchCollector(batch_size=2, batch_seconds=10, idle_seconds=None)
    assert c.add(tup("a", 1)) is None
    assert c.add(tup("x", stream="other", fields=("name",))) is None
    batch = c.add(tup("b", 2))
    assert batch is not None and batch.reason == CLOSED_BY_COUNT
    assert batch.rows == [["a", 1], ["b", 2]] and batch.fields == ("k", "v")
    assert list(c.open) == [("src", "other")]


def test_time_and_idle_limits_in_tick_time() -> None:
    c = BatchCollector(batch_size=100, batch_seconds=3, idle_seconds=1.5)
    c.add(tup("a", 1))
    c.advance(1.0)
    c.add(tup("b", 2))
    c.advance(1.0)
    assert c.take_due(1) == []
    c.advance(0.5)  # 1.5 s since the last tuple
    [batch] = c.take_due(1)
    assert batch.reason == CLOSED_BY_IDLE and len(batch) == 2
    c.add(tup("c", 3))
    for _ in range(3):
        c.add(tup("d", 4))
        c.advance(1.0)
    [batch] = c.take_due(5)
    assert batch.reason == CLOSED_BY_TIME and len(batch) == 4


def test_take_due_respects_the_limit_oldest_first() -> None:
    c = BatchCollector(batch_size=100, batch_seconds=1, idle_seconds=None)
    c.add(tup("a", 1, stream="s1"))
    c.advance(0.5)
    c.add(tup("b", 2, stream="s2"))
    c.advance(1.0)
    [first] = c.take_due(1)
    assert first.source.stream == "s1"
    assert [b.source.stream for b in c.take_due(1)] == ["s2"]


def test_invalid_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        BatchCollector(0, 1, None)
    with pytest.raises(ValueError, match="batch_seconds"):
        BatchCollector(1, 0, None)


def test_a_stream_without_declared_fields_is_refused_naming_it() -> None:
    c = BatchCollector(batch_size=2, batch_seconds=1, idle_seconds=None)
    with pytest.raises(ValueError, match="src/raw"):
        c.add(tup("a", stream="raw", fields=None))


def test_drain_returns_every_open_batch() -> None:
    c = BatchCollector(batch_size=10, batch_seconds=1, idle_seconds=None)
    c.add(tup("a", 1, stream="s1"))
    c.add(tup("b", 2, stream="s2"))
    assert sorted(b.source.stream for b in c.drain()) == ["s1", "s2"]
    assert c.open == {}


def test_a_column_batch_joins_whole_and_counts_its_rows() -> None:
    c = BatchCollector(batch_size=5, batch_seconds=10, idle_seconds=None)
    cb = ColumnBatch([["a", 1], ["b", 2], ["c", 3]], "default", 1, "src", Fields(("k", "v")))
    assert c.add(tup("x", 0)) is None
    assert c.add(cb) is None
    batch = c.open[("src", "default")]
    assert len(batch) == 4 and batch.tuples[1] is cb  # one ack/fail unit, its rows counted
    big = ColumnBatch([["d", 4], ["e", 5], ["f", 6]], "default", 1, "src", Fields(("k", "v")))
    closed = c.add(big)  # 7 rows: past the size, never split
    assert closed is not None and closed.reason == CLOSED_BY_COUNT and len(closed) == 7
    assert closed.rows == [["x", 0], ["a", 1], ["b", 2], ["c", 3], ["d", 4], ["e", 5], ["f", 6]]
    assert closed.fields == ("k", "v") and c.open == {}


def test_a_column_batch_without_fields_is_refused_naming_its_stream() -> None:
    c = BatchCollector(batch_size=5, batch_seconds=10, idle_seconds=None)
    with pytest.raises(ValueError, match="src/raw"):
        c.add(ColumnBatch([["a"]], "raw", 1, "src", None))
