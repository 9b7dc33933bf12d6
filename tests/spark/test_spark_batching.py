"""Arrow conversion and Spark settings without a Spark session (the batches themselves are
tested in tests/unit/worker/test_batching.py)."""

from __future__ import annotations

import pytest

from stormpy.connectors.spark import spark_settings
from stormpy.connectors.spark._arrow import BatchConversionError, result_rows, rows_to_arrow


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
