"""ParquetState: each committed batch's tuples written to a Parquet table exactly once (the
Trident form of ``SparkCommitterBolt``), with pyarrow (the ``[spark]`` extra) imported lazily.

Layout: ``<path>/txid=<txid>/task=<task index>/part-0.parquet``, first written to a temporary
directory next to it, then renamed into place in one step; a txid whose directory exists is
skipped, so a replayed commit writes nothing again. Read the table with pyarrow or
``spark.read.parquet(path)`` (``txid`` and ``task`` come from the directory names). Local or
mounted filesystems only (the rename must be atomic); not for opaque spouts (a replay that
differs would be skipped).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Sequence
from typing import Any

__all__ = ["ParquetState"]

SPARK_EXTRA = "stormpy-runtime[spark]"


class ParquetState:
    """The Parquet table at ``path`` as written by one task (``task``: its index)."""

    def __init__(self, path: str, task: int) -> None:
        self.path = path
        self.task = task
        self.txid: int | None = None

    def begin_commit(self, txid: int) -> None:
        self.txid = txid

    def commit(self, txid: int) -> None:
        self.txid = None

    def directory(self, txid: int) -> str:
        return os.path.join(self.path, f"txid={txid}", f"task={self.task}")

    def write(self, rows: Sequence[Sequence[Any]], columns: Sequence[str]) -> bool:
        """Write this task's ``rows`` of the batch being committed; False when the txid's part
        is there already (a replayed commit)."""
        if self.txid is None:
            raise RuntimeError("Parquet state written outside a commit (begin_commit not called)")
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise ImportError(f"the Parquet state needs pyarrow ({exc}); install the extra: "
                              f"pip install '{SPARK_EXTRA}'") from None
        final = self.directory(self.txid)
        if os.path.isdir(final):
            return False
        parent = os.path.dirname(final)
        os.makedirs(parent, exist_ok=True)
        tmp = os.path.join(parent, f".tmp-task={self.task}-{uuid.uuid4().hex[:8]}")
        os.makedirs(tmp)
        try:
            table = pa.table({c: [row[i] for row in rows] for i, c in enumerate(columns)})
            pq.write_table(table, os.path.join(tmp, "part-0.parquet"))
            os.rename(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return True

    def close(self) -> None:
        """Nothing held between batches."""
