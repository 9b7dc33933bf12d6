"""Turning a batch of tuple values into a Spark DataFrame through Arrow, and results back.

The batch becomes a ``pyarrow.Table`` column by column (types inferred by Arrow, or cast to a
declared Spark DDL schema), then one ``spark.createDataFrame(table)`` call ships it to the JVM —
no per-row Python objects on the Spark side.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession


class BatchConversionError(ValueError):
    """A batch's values cannot become an Arrow column; the message names the field."""


def rows_to_arrow(fields: Sequence[str], rows: Sequence[Sequence[Any]]) -> pa.Table:
    """A table with one column per field, Arrow inferring each column's type from its values.

    Raises BatchConversionError naming the field whose values are mixed or unsupported."""
    import pyarrow as pa

    columns: Sequence[Sequence[Any]] = list(zip(*rows)) if rows else [() for _ in fields]
    if rows and len(columns) != len(fields):
        raise BatchConversionError(f"batch rows have {len(columns)} values, fields are "
                                   f"{list(fields)}")
    arrays = []
    for name, column in zip(fields, columns):
        try:
            arrays.append(pa.array(column))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
            raise BatchConversionError(f"field {name!r}: cannot convert the batch's values to "
                                       f"Arrow ({exc}); declare a schema or emit uniform types"
                                       ) from exc
    return pa.Table.from_arrays(arrays, names=list(fields))


def arrow_to_dataframe(spark: SparkSession, table: pa.Table, schema: str | None = None) -> DataFrame:
    """``spark.createDataFrame`` from an Arrow table; ``schema`` (Spark DDL, e.g.
    ``"path string, bytes long"``) casts the columns, whose names must match the fields."""
    import pyspark

    if int(pyspark.__version__.split(".")[0]) >= 4:
        return spark.createDataFrame(table, schema)
    # PySpark 3.5 takes pandas (converted through Arrow when arrow.pyspark.enabled is set).
    return spark.createDataFrame(table.to_pandas(), schema)


def batch_dataframe(spark: SparkSession, fields: Sequence[str], rows: Sequence[Sequence[Any]],
                    schema: str | None = None) -> DataFrame:
    """The DataFrame of one batch: columns ``fields``, one row per tuple."""
    return arrow_to_dataframe(spark, rows_to_arrow(fields, rows), schema)


def result_rows(result: Any) -> list[list[Any]]:
    """What ``process_batch`` returned, as value lists to emit: None → none; a Spark DataFrame →
    its collected rows; otherwise an iterable of rows (lists, tuples or ``Row`` objects)."""
    if result is None:
        return []
    if hasattr(result, "collect") and hasattr(result, "schema"):
        result = result.collect()
    if not isinstance(result, Iterable) or isinstance(result, str | bytes):
        raise TypeError(f"process_batch must return None, a DataFrame or an iterable of rows, "
                        f"got {type(result).__name__}")
    rows = []
    for row in result:
        if isinstance(row, str | bytes) or not isinstance(row, Iterable):
            raise TypeError(f"each result row must be a list/tuple of values, got {row!r:.80}")
        rows.append(list(row))
    return rows
