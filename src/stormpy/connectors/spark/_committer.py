"""SparkCommitterBolt: a transactional committer that writes each committed batch to Parquet
exactly once.

Contract:

* It is a ``Committer`` for ``stormpy.transactional`` topologies: it collects the batch's tuples
  this task receives (their values after the attempt) and, in the commit phase, turns them into a
  DataFrame (through Arrow; columns = the input stream's fields after the first, or ``columns``)
  and writes them to ``<path>/txid=<txid>/task=<task index>`` — first into a temporary directory
  next to it, then renamed into place in one step. A txid whose directory already exists is
  skipped: a replayed commit (the batch is identical for transactional and partitioned spouts)
  writes nothing again, so every record lands in Parquet exactly once. Opaque spouts, whose
  replays may differ, are not supported.
* The Spark job runs off the executor loop (``finish_in_background``); the batch commits on this
  task when the rename is done. A failure fails the commit, which is replayed. Attempts of the
  same txid never write concurrently in one process (a replay waits for an abandoned attempt's
  job, then usually finds the txid written).
* ``path`` is a local (or mounted shared) filesystem directory; the rename is atomic there, not
  on object stores. Read the table with ``spark.read.parquet(path)`` (columns ``txid`` and
  ``task`` come from the directory names).
* It emits ``[attempt, rows, written]`` (rows of this task's part, False when skipped).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from stormpy.config import SettingError
from stormpy.connectors.spark import _switching as switching
from stormpy.connectors.spark._arrow import batch_dataframe
from stormpy.connectors.spark._errors import require_spark
from stormpy.connectors.spark._session import get_spark, release_spark, retain_spark
from stormpy.topology import TopologyContext, Tuple
from stormpy.transactional import BatchOutputCollector, Committer, TransactionAttempt


class SparkCommitterBolt(Committer):
    """Constructor arguments: ``path`` (the table's directory), ``columns`` (names of the values
    after the attempt; default the input stream's fields after the first), ``schema`` (optional
    Spark DDL string, e.g. ``"word string, n long"``)."""

    outputs = ["id", "rows", "written"]

    #: one lock per table and task (commits of a task are sequential anyway): a replayed attempt
    #: waits for an abandoned one still writing
    _locks: dict[tuple[Path, int], threading.Lock] = {}
    _locks_guard = threading.Lock()

    def __init__(self, path: str, columns: Sequence[str] | None = None,
                 schema: str | None = None) -> None:
        if not isinstance(path, str) or not path:
            raise SettingError("SparkCommitterBolt.path", f"must be a directory path, got {path!r}")
        self.path = Path(path)
        self.columns = list(columns) if columns is not None else None
        self.schema = schema

    @classmethod
    def prepare_task(cls, conf: Mapping[str, Any], context: TopologyContext) -> None:
        """Check Spark can run; hold the process's SparkSession and switch interval (as
        ``SparkBatchBolt`` does: ``switching``) until ``cleanup_task``."""
        require_spark()
        switching.lower(switching.configured(conf, context.component_id))
        retain_spark()

    @classmethod
    def cleanup_task(cls, conf: Mapping[str, Any], context: TopologyContext) -> None:
        if switching.configured(conf, context.component_id) is not None:
            switching.restore()
        release_spark()

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: BatchOutputCollector, id: TransactionAttempt) -> None:  # noqa: A002
        super().prepare(conf, context, collector, id)
        self.conf = conf
        self.task_index = context.task_index
        self.rows: list[list[Any]] = []

    def execute(self, tup: Tuple) -> None:
        if self.columns is None:
            if tup.fields is None:
                raise ValueError(f"tuple from {tup.component}/{tup.stream} has no declared fields; "
                                 "give SparkCommitterBolt its columns")
            self.columns = tup.fields.to_list()[1:]
        if len(tup.values) - 1 != len(self.columns):
            raise ValueError(f"tuple from {tup.component}/{tup.stream} has {len(tup.values) - 1} "
                             f"values after the attempt, columns are {self.columns}")
        self.rows.append(list(tup.values[1:]))

    def target(self) -> Path:
        """This task's directory for the batch's txid."""
        return self.path / f"txid={self.id.transaction_id}" / f"task={self.task_index}"

    def finish_batch(self) -> None:
        self.collector.finish_in_background(self.write, self.written)

    def write(self) -> bool:
        """Write this task's part of the batch unless its txid was written; True when written.
        Runs off the executor loop."""
        final = self.target()
        with self._locks_guard:
            lock = self._locks.setdefault((self.path, self.task_index), threading.Lock())
        with lock:
            return self._write(final)

    def _write(self, final: Path) -> bool:
        if final.exists():
            return False
        final.parent.mkdir(parents=True, exist_ok=True)
        prefix = f".tmp-task={self.task_index}-"
        for stale in final.parent.glob(prefix + "*"):  # left by a crashed attempt
            shutil.rmtree(stale, ignore_errors=True)
        tmp = final.parent / f"{prefix}{self.id.attempt_id}"
        if self.rows or self.schema:
            df = batch_dataframe(get_spark(self.conf), self.columns or [], self.rows, self.schema)
            df.write.mode("overwrite").parquet(str(tmp))
        else:
            tmp.mkdir()  # an empty part: the txid is committed, nothing to read
        os.rename(tmp, final)
        return True

    def written(self, written: bool) -> None:
        self.emit([self.id, len(self.rows), written])
