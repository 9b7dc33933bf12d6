"""Batch bookkeeping and Arrow conversion without a Spark session."""

from __future__ import annotations

import pytest

from stormpy.connectors.spark import CLOSED_BY_COUNT, CLOSED_BY_IDLE, CLOSED_BY_TIME, spark_settings
from stormpy.connectors.spark.arrow import BatchConversionError, result_rows, rows_to_arrow
from stormpy.connectors.spark.batching import BatchCollector
from stormpy.topology import Fields, Tuple


def tup(*values: object, stream: str = "default", fields: tuple[str, ...] = ("k", "v")) -> Tuple:
    return Tuple(list(values), stream, 1, "src", Fields(fields))


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


def test_rows_to_arrow_infers_types_and_names_bad_fields() -> None:
    table = rows_to_arrow(["k", "v", "f"], [["a", 1, 0.5], ["b", None, 1.5]])
    assert table.column_names == ["k", "v", "f"]
    assert [str(t) for t in table.schema.types] == ["string", "int64", "double"]
    assert rows_to_arrow(["k"], []).num_rows == 0
    with pytest.raises(BatchConversionError, match="field 'v'"):
        rows_to_arrow(["k", "v"], [["a", 1], ["b", "x"]])


def test_result_rows_accepts_none_lists_and_tuples() -> None:
    assert result_rows(None) == []
    assert result_rows([(1, 2), [3, 4]]) == [[1, 2], [3, 4]]
    with pytest.raises(TypeError):
        result_rows("abc")
    with pytest.raises(TypeError):
        result_rows([1, 2])


def test_spark_settings_from_topology_config() -> None:
    settings = spark_settings({"topology.name": "t1", "spark.master": "local[2]",
                               "spark.sql.shuffle.partitions": 8, "spark.ui.enabled": True,
                               "spark.executor.memory": None, "topology.workers": 2})
    assert settings["spark.master"] == "local[2]"
    assert settings["spark.app.name"] == "t1"
    assert settings["spark.sql.shuffle.partitions"] == "8"
    assert settings["spark.ui.enabled"] == "true"
    assert "spark.executor.memory" not in settings and "topology.workers" not in settings
    assert spark_settings({})["spark.master"] == "local[*]"
