"""A SparkBatchBolt batch's life off the executor loop: running it in Spark, cancelling it.

:class:`InSpark` is one batch handed to the task's off-loop seam, with what the seam's job handle
does not say (its Spark job tag, when its Spark work began, whether the loop gave up on it).
:class:`BatchRunner` holds what a task's batches need off the loop (the topology config, the
bolt's hooks) and runs them:

* ``run(flight)`` (on a background thread): gets the SparkSession (after a pause of
  ``spark.stormpy.master.probe.secs`` when the master is unreachable, so a down master is no
  tight fail/replay cycle), tags the thread's Spark jobs with the batch's tag (cancelled tasks
  are interrupted), builds the DataFrame (or takes the one built ahead), calls the bolt's
  ``process_stream_batch`` and checks the rows it returned against the declared result stream.
  On any error (or once the loop gave up on the batch, a SparkBatchTimeout with the Spark error
  as its cause) the bolt's ``abort_batch`` runs and the error is raised to the seam.
* ``cancel(flight)`` (on a thread of its own): cancels a timed-out batch's Spark jobs again and
  again until its background job returns, then stops the SparkSession when it is broken
  (``needs_restart``) so the next batch starts a fresh one.

``describe`` is the report of a failed batch. The batching and acking stay on the loop in
``bolt.py``.
"""

from __future__ import annotations

import contextlib
import logging
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from time import perf_counter
from typing import TYPE_CHECKING, Any

import msgpack

from stormpy._batching import Batch, BatchSource
from stormpy.connectors.spark._ahead import AheadDataFrame
from stormpy.connectors.spark._arrow import result_rows
from stormpy.connectors.spark._errors import SparkBatchTimeout, SparkMasterUnreachable
from stormpy.connectors.spark._session import get_spark, is_alive, needs_restart, note_job_ok, reset_spark
from stormpy.topology import BackgroundJob

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["CANCEL_POLL_SECS", "CANCEL_WAIT_SECS", "BatchRunner", "InSpark", "describe"]

log = logging.getLogger("stormpy.connectors.spark")

#: A timed-out batch's jobs are cancelled again this often until its background job returns ...
CANCEL_POLL_SECS = 0.2
#: ... for at most this long.
CANCEL_WAIT_SECS = 120.0


class InSpark:
    """One batch handed to the off-loop seam (see the module doc).

    ``session``/``spark_since`` are written by the batch's background job, ``abandoned`` by the
    executor loop; each is a single reference assignment read by the other side."""

    __slots__ = ("batch", "job", "tag", "session", "spark_since", "abandoned", "returned", "ahead")

    def __init__(self, batch: Batch, ahead: AheadDataFrame | None = None) -> None:
        self.batch = batch
        self.ahead = ahead  # its DataFrame, when built ahead
        self.job: BackgroundJob | None = None
        self.tag = f"stormpy-batch-{batch.batch_id}-{uuid.uuid4().hex[:12]}"
        self.session: SparkSession | None = None
        self.spark_since: float | None = None  # perf_counter once the session is in hand
        self.abandoned = False  # timed out: failed on the executor loop already
        self.returned = False  # the batch's background job has left Spark (ok or not)


class BatchRunner:
    """Runs one task's batches in Spark and cancels timed-out ones (see the module doc).

    ``name`` (the bolt's class name) starts its messages; ``dataframe(batch, session)`` builds a
    batch's DataFrame, ``process(df, batch_id, source)`` and ``abort(batch_id, error)`` are the
    bolt's hooks; ``result_arity`` is the number of fields of ``result_stream`` (None: not
    declared, so rows are an error); ``unreachable_pause`` the seconds a batch waits before it
    fails on an unreachable master."""

    def __init__(self, name: str, conf: Mapping[str, Any], *,
                 dataframe: Callable[[Batch, SparkSession], DataFrame],
                 process: Callable[[DataFrame, int, BatchSource], Any],
                 abort: Callable[[int, BaseException], None],
                 result_stream: str, result_arity: int | None, unreachable_pause: float) -> None:
        self.name = name
        self.conf = conf
        self.dataframe = dataframe
        self.process = process
        self.abort = abort
        self.result_stream = result_stream
        self.result_arity = result_arity
        self.unreachable_pause = unreachable_pause

    def run(self, flight: InSpark) -> list[list[Any]]:
        """The batch's rows to emit, or its error raised (after ``abort``); background thread."""
        batch = flight.batch
        try:
            try:
                session = get_spark(self.conf)
            except SparkMasterUnreachable:
                time.sleep(self.unreachable_pause)  # off the loop: no tight fail/replay cycle
                raise
            flight.session = session
            flight.spark_since = perf_counter()
            sc = session.sparkContext
            # Thread-local on this pool thread's own JVM thread (PySpark's pinned-thread mode,
            # the default): every job this batch submits carries the tag, and a cancelled task
            # is interrupted (its Python worker killed) rather than left to run to its end.
            sc.setInterruptOnCancel(True)
            sc.addJobTag(flight.tag)
            try:
                df = None
                if flight.ahead is not None:
                    df = flight.ahead.take(session, lambda: flight.abandoned)
                if df is None:
                    df = self.dataframe(batch, session)
                if flight.abandoned:
                    raise SparkBatchTimeout(f"batch {batch.batch_id} timed out before "
                                            "process_batch began")
                rows = result_rows(self.process(df, batch.batch_id, batch.source))
            finally:
                with contextlib.suppress(Exception):
                    sc.removeJobTag(flight.tag)
            if flight.abandoned:
                raise SparkBatchTimeout(f"batch {batch.batch_id} finished after its timeout; "
                                        "its tuples were already failed")
            note_job_ok(session)
            if rows:
                self.check_results(rows)
            return rows
        except BaseException as exc:
            error = exc
            if flight.abandoned and not isinstance(exc, SparkBatchTimeout):
                # given up on and its jobs cancelled: the Spark error is the cancel's echo
                error = SparkBatchTimeout(f"batch {batch.batch_id} timed out; its Spark jobs were "
                                          f"cancelled ({type(exc).__name__})")
                error.__cause__ = exc
            try:
                self.abort(batch.batch_id, error)
            except Exception as abort_exc:  # noqa: BLE001 - the batch fails either way
                error.add_note(f"abort_batch({batch.batch_id}) also failed: {abort_exc!r}")
            if error is exc:
                raise
            raise error from exc
        finally:
            flight.returned = True

    def cancel(self, flight: InSpark) -> None:
        """Cancel a timed-out batch's Spark jobs until its background job gives up (on a thread
        of its own). ``cancelJobsWithTag`` only reaches jobs already submitted: a batch given up
        while it was still building its DataFrame, or whose ``process_batch`` runs several
        actions, submits its next job later, so the cancel is repeated every
        ``CANCEL_POLL_SECS`` until the job returns (at most ``CANCEL_WAIT_SECS``)."""
        try:
            session = flight.session
            if session is not None:
                sc = session.sparkContext
                deadline = perf_counter() + CANCEL_WAIT_SECS
                while True:
                    with contextlib.suppress(Exception):
                        sc.cancelJobsWithTag(flight.tag)
                    if flight.returned or perf_counter() > deadline or not is_alive(session):
                        break
                    time.sleep(CANCEL_POLL_SECS)
                if needs_restart(session):
                    reset_spark(session)
        except Exception as exc:  # noqa: BLE001 - on a thread of its own: log, never raise
            log.warning("%s: cancelling timed-out batch %d failed: %r", self.name,
                        flight.batch.batch_id, exc)

    def check_results(self, rows: list[list[Any]]) -> None:
        """Fail the batch here (so ``abort_batch`` runs) rather than at emit time when results
        do not fit the declared result stream or are not plain, serialisable data."""
        name, arity = self.name, self.result_arity
        if arity is None:
            raise TypeError(f"{name}.process_batch returned rows, but stream "
                            f"{self.result_stream!r} is not declared in {name}.outputs")
        for row in rows:
            if len(row) != arity:
                raise TypeError(f"{name}.process_batch returned a row of {len(row)} values for "
                                f"stream {self.result_stream!r} with {arity} fields: {row!r:.80}")
        try:
            msgpack.packb(rows)
        except (TypeError, ValueError, OverflowError) as exc:
            raise TypeError(f"{name}.process_batch returned values that are not plain data "
                            f"(str, int, float, bool, None, bytes, lists, dicts): {exc}") from exc


def describe(batch: Batch, error: BaseException) -> str:
    """The report of a failed batch: what it held, then the error's whole traceback."""
    text = "".join(traceback.format_exception(error)).rstrip()
    return (f"batch {batch.batch_id} ({len(batch)} tuples from {batch.source.component}/"
            f"{batch.source.stream}) failed; its tuples were failed for replay:\n{text}")
