"""SparkBatchBolt: collect tuples into micro-batches and hand each one to Spark as a DataFrame.

This module holds the bolt's executor-loop side (batching, the in-flight slots, acking, the
timeouts checked on ticks); a batch's run in Spark and the cancelling of a timed-out one are in
``in_spark.py``, the DataFrame built ahead in ``ahead.py``, the settings (the ``spark.*`` keys,
the checks of the bolt's constructor arguments and its tick period) in ``settings.py``.

Contract (see ``SparkBatchBolt`` for the knobs):

* Tuples of each input stream (component, stream) collect into their own batch; a batch closes on
  ``batch_size`` tuples, on ``batch_seconds`` of age or, with ``idle_seconds``, after that long
  without a new tuple — whichever comes first. Age and idleness are measured in tick time, so the
  bolt needs ``topology.tick.tuple.freq.secs`` (the class default is 0.5 s; the time limits hold
  to tick resolution). So an idle stream's partial batch is always flushed.
* A closed batch gets the task's next ``batch_id`` (``seq * tasks + task_index``: unique in the
  component, increasing per task, the same for the same sequence of batches), becomes a DataFrame
  whose columns are the stream's declared fields (through Arrow), and runs
  ``process_batch(df, batch_id)`` off the executor loop, through the task's off-loop seam
  (``context.off_loop``, see ``stormpy.topology._offloop``).
* A ``ColumnBatch`` (``execute_columns``: what an upstream ``emit_many`` or a spout's
  ``emit_batch`` delivers to columnar subscribers) joins its stream's micro-batch whole, as one
  ack/fail unit whose rows all count: a micro-batch closes once it holds ``batch_size`` tuples or
  more, never splitting a column batch. Single tuples and column batches of one stream mix.
* At most ``max_in_flight`` batches per task are in Spark at once (default 1). Batches that fill
  up meanwhile wait in order for a slot; a batch that comes due by time while every slot is busy
  stays open and keeps collecting (up to ``batch_size``) until a slot frees, so a slow Spark job
  yields fuller batches rather than a queue of small ones. Memory is bounded by the spouts'
  ``topology.max.spout.pending``, which holds spouts back while batches are outstanding: set it
  (a few ``batch_size`` × tasks is a good start).
* With ``prepare_ahead`` (the default), the first batch waiting for a slot has its DataFrame
  built (Arrow + ``createDataFrame``, no Spark job) on another background thread while the
  batches before it run, so its job starts as soon as the slot frees (``ahead.py``; at most one
  batch ahead per task).
* When ``process_batch`` returns, its result rows are emitted on ``result_stream`` anchored to
  every tuple of the batch (unless ``anchor_results`` is False), then the next waiting batch is
  handed to Spark, then the batch's tuples are acked (so acking overlaps the next job).
  When it raises (or the DataFrame cannot be built), ``abort_batch`` runs, the tuples are failed —
  reliable spouts replay them, in a later batch with a new id — and the error is reported.
* While tuples wait (collecting, queued or in Spark) longer than half the message timeout, their
  timeouts are reset on each tick (``keep_alive``), so slow Spark jobs do not cause replays.
* A batch still running ``spark.stormpy.batch.timeout.secs`` (default 300) after its Spark work
  began (the SparkSession in hand: starting a session is bounded by Spark and by the master probe,
  not by this) is given up on the executor loop (checked on ticks): its tuples are failed
  and SparkBatchTimeout reported at once, its Spark jobs (tagged per batch; tasks interrupted)
  are cancelled — again and again, from a thread of its own, until the batch's background job
  returns, so a job submitted after the first cancel is stopped too — and
  the SparkSession is stopped when it is broken (``needs_restart``: it lost every executor after
  having worked — its cluster went away) so the next batch starts a fresh one once the master
  answers again. When ``process_batch`` returns or raises after that, ``abort_batch`` runs with
  a SparkBatchTimeout (the Spark error of the cancelled job as its cause) and the result is
  dropped. While the master is unreachable each batch fails after a pause of
  ``spark.stormpy.master.probe.secs`` (off the loop, in the batch's job), not in a tight loop.
* The batch timeout grows after consecutive timeouts: each tick that gives up on batches doubles
  the limit for the batches in Spark and the next ones (``stormpy.host.backoff``), up to
  ``spark.stormpy.batch.timeout.max.secs`` (default 4 × the timeout); a batch that succeeds
  restores it (failures of other kinds leave it). A cancelled task's Python worker is killed, and
  a (re)started executor's first jobs start Python workers, import the UDFs' modules and warm the
  JVM: a limit below that cold start would otherwise fail every batch in turn and never let one
  through. The timed-out batches' tuples are failed and replayed as always.
* While a batch is in Spark, ``execute`` releases the GIL every ``_YIELD_EVERY`` tuples it adds
  (``time.sleep(0)``). The batch's thread gives the GIL up on every py4j call and needs it back
  for the answer; without this it would wait out the interpreter's switch interval (5 ms) each
  time while the executor loop fills the next batch, which made Arrow + ``createDataFrame``
  several times slower than the same calls in a plain loop. The loop's other work (the spout,
  routing, acking) does not yield, so ``prepare`` also holds the process's switch interval at
  ``spark.stormpy.switch.interval.secs`` (0.5 ms; ``switching``) until ``cleanup``.
* ``cleanup`` shuts the off-loop work down: jobs not started never run (their tuples are not
  acked: a reliable spout replays them after a restart), running ones get up to
  ``cleanup_wait_secs``; then it releases the process's SparkSession.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Mapping
from functools import partial
from time import perf_counter
from typing import TYPE_CHECKING, Any, ClassVar

from stormpy._batching import Batch, BatchCollector, BatchSource
from stormpy.config import message_timeout_secs, setting
from stormpy.connectors.spark import _switching as switching
from stormpy.connectors.spark._ahead import AheadDataFrame, ignore_outcome
from stormpy.connectors.spark._arrow import batch_dataframe
from stormpy.connectors.spark._batching import BatchInfo
from stormpy.connectors.spark._errors import SparkBatchTimeout, require_spark
from stormpy.connectors.spark._in_spark import BatchRunner, InSpark, describe
from stormpy.connectors.spark._session import get_spark, release_spark, retain_spark
from stormpy.connectors.spark._settings import (
    BATCH_TIMEOUT_KEY,
    BATCH_TIMEOUT_MAX_KEY,
    TICK_KEY,
    batch_limits,
    batch_timeout_max_secs,
    batch_timeout_secs,
    probe_secs,
    tick_config,
    tick_secs,
)
from stormpy.host.backoff import Backoff
from stormpy.topology import DEFAULT_STREAM, Bolt, ColumnBatch, OffLoop, TopologyContext, Tuple

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("stormpy.connectors.spark")

#: While a batch is in Spark, the GIL is released every this many tuples added (module docstring).
_YIELD_EVERY = 16


def _release_gil() -> None:
    """Let another thread waiting for the GIL (a batch's py4j calls) take it now."""
    time.sleep(0)


class SparkBatchBolt(Bolt):
    """Base class of bolts that process micro-batches with Spark. Subclass it and implement
    ``process_batch(df, batch_id)``.

    Constructor arguments (plain data, as every component's): ``batch_size`` (tuples per batch),
    ``batch_seconds`` (longest a batch stays open), ``idle_seconds`` (close a partial batch after
    this long without new tuples; None: only ``batch_seconds``), ``max_in_flight`` (batches per
    task in Spark at once), ``schema`` (optional Spark DDL string for the DataFrame, e.g.
    ``"path string, bytes long"``; by default Arrow infers each column's type), ``keep_alive``.
    A subclass with its own arguments passes these through to ``super().__init__``; one that
    overrides ``prepare`` or ``cleanup`` calls the base method too; one that sets its own
    ``component_config`` keeps ``topology.tick.tuple.freq.secs`` in it.

    Batch ids start again from ``first_batch_seq()`` when a task restarts: a sink that keys its
    output by ``batch_id`` should also key it by the run (``context.topology_id``, plus the
    worker's start if restarts matter) or override ``first_batch_seq`` to resume numbering.

    ``process_batch`` runs off the executor loop: it may block on Spark, but must not call
    ``emit``/``ack``/``fail`` — return the rows to emit instead. Declare ``outputs`` for them.
    """

    component_config: ClassVar[Mapping[str, Any]] = {TICK_KEY: 0.5}
    #: Stream the rows returned by ``process_batch`` are emitted on.
    result_stream: ClassVar[str] = DEFAULT_STREAM
    #: Anchor result rows to every tuple of the batch (costs one anchor entry per tuple per row).
    anchor_results: ClassVar[bool] = True
    #: Report a failed batch's error (with traceback) through ``report_error``.
    report_batch_errors: ClassVar[bool] = True
    #: Start the SparkSession in the background as soon as the bolt is prepared.
    warm_up: ClassVar[bool] = True
    #: How long ``cleanup`` waits for running Spark jobs.
    cleanup_wait_secs: ClassVar[float] = 8.0
    #: Build the next waiting batch's DataFrame while the batches before it run (one batch's
    #: Arrow table and DataFrame more in memory per task; no Spark job runs early).
    prepare_ahead: ClassVar[bool] = True

    @classmethod
    def declare_config(cls, kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
        """Tick often enough for the time limits: a quarter of ``batch_seconds`` (and half of
        ``idle_seconds``), between 0.05 s and the class default."""
        return tick_config(cls.component_config, kwargs)

    def __init__(self, batch_size: int = 1000, batch_seconds: float = 2.0,
                 idle_seconds: float | None = None, max_in_flight: int = 1,
                 schema: str | None = None, keep_alive: bool = True) -> None:
        (self.batch_size, self.batch_seconds, self.idle_seconds, self.max_in_flight,
         self.schema) = batch_limits(type(self).__name__, batch_size, batch_seconds, idle_seconds,
                                     max_in_flight, schema)
        self.keep_alive = bool(keep_alive)

    # -- user hooks ----------------------------------------------------------------------------
    def process_batch(self, df: DataFrame, batch_id: int) -> Any:
        """Process one batch: ``df`` has a column per field of the input stream and one row per
        tuple. Return None, or rows (value lists, ``Row`` objects or a small DataFrame) to emit
        on ``result_stream``. Raise to fail the batch's tuples. Runs off the executor loop."""
        raise NotImplementedError(f"{type(self).__name__} must implement process_batch(df, batch_id)")

    def process_stream_batch(self, df: DataFrame, batch_id: int, source: BatchSource) -> Any:
        """Called for every batch; ``source`` names its input (component, stream). Override it
        instead of ``process_batch`` when a bolt's inputs have different fields."""
        return self.process_batch(df, batch_id)

    def abort_batch(self, batch_id: int, error: BaseException) -> None:
        """Called on the background thread when a batch fails, before its tuples are failed:
        undo partial side effects here (e.g. delete output written under ``batch_id``)."""

    def on_batch_done(self, info: BatchInfo) -> None:
        """Called on the executor loop after a batch's tuples were acked or failed."""

    def first_batch_seq(self) -> int:
        """Sequence number of this task's first batch (0). Override to resume numbering after a
        restart, e.g. from the highest ``batch_id`` a sink has committed."""
        return 0

    @property
    def spark(self) -> SparkSession:
        """The worker process's SparkSession (started on first use; blocks meanwhile)."""
        return get_spark(self._conf)

    # -- Bolt API ------------------------------------------------------------------------------
    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        """Check Spark can run (SparkUnavailableError otherwise) and that ticks are configured."""
        require_spark()
        self._tick = tick_secs(conf, f"{type(self).__name__} ({context.component_id})")
        if self._tick > self.batch_seconds:
            log.warning("%s: tick period %.3gs is longer than batch_seconds %.3gs; batches close "
                        "late", context.component_id, self._tick, self.batch_seconds)
        self._conf = conf
        self._collector = BatchCollector(self.batch_size, self.batch_seconds, self.idle_seconds)
        self._ready: deque[Batch] = deque()
        #: batch id → batch handed to Spark whose outcome has not come back to the loop yet
        #: (nor been given up on: a timed-out batch leaves at once)
        self._in_flight: dict[int, InSpark] = {}
        self._off_loop: OffLoop = context.off_loop
        #: batch id → its DataFrame being built ahead (the first batch waiting for a slot)
        self._ahead: dict[int, AheadDataFrame] = {}
        result = context.spec.components[context.component_id].streams.get(self.result_stream)
        self._runner = BatchRunner(
            type(self).__name__, conf, dataframe=self._dataframe, process=self.process_stream_batch,
            abort=self.abort_batch, result_stream=self.result_stream,
            result_arity=len(result.fields) if result is not None else None,
            unreachable_pause=probe_secs(conf))
        self._tasks = len(context.component_tasks)
        self._task_index = context.task_index
        self._seq = self.first_batch_seq()
        self._closing = False
        tracking = conf.get("topology.acker.executors") != 0 and setting(
            conf, "topology.enable.message.timeouts")
        self._reset_after = message_timeout_secs(conf) / 2 if tracking and self.keep_alive else None
        timeout = batch_timeout_secs(conf)
        #: the batch timeout in force: ``delay(failures + 1)``, doubled per consecutive timeout
        self._timeouts = (None if timeout is None else
                          Backoff(timeout, batch_timeout_max_secs(conf, timeout)))
        self.batches_ok = 0
        self.batches_failed = 0
        self._added = 0  # tuples added while a batch was in Spark
        self._switching = switching.lower(switching.configured(conf, context.component_id))
        retain_spark()
        if self.warm_up:
            self._off_loop.submit(self._warm, self._warmed)

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            self._on_tick(tup)
            return
        batch = self._collector.add(tup)
        if batch is not None:
            self._close(batch)
        elif self._in_flight:
            self._added += 1
            if self._added % _YIELD_EVERY == 0:
                _release_gil()

    def execute_columns(self, batch: ColumnBatch) -> None:
        """A column batch joins its stream's micro-batch whole (see the module doc)."""
        closed = self._collector.add(batch)
        if closed is not None:
            self._close(closed)
        elif self._in_flight:
            _release_gil()

    def cleanup(self) -> None:
        self._closing = True
        self._off_loop.shutdown(self.cleanup_wait_secs)
        self._ahead.clear()
        dropped = sum(len(b) for b in self._collector.drain()) + sum(len(b) for b in self._ready)
        if dropped:
            log.info("%s: %d tuples in unprocessed batches at shutdown (not acked; reliable "
                     "spouts replay them)", type(self).__name__, dropped)
        if self._switching:
            self._switching = False
            switching.restore()
        release_spark()

    # -- batching --------------------------------------------------------------------------------
    def _on_tick(self, tup: Tuple) -> None:
        values = tup.values
        seconds = values[0] if values and isinstance(values[0], int | float) else self._tick
        self._collector.advance(float(seconds))
        if self._timeouts is not None:
            self._check_timeouts(perf_counter(), self._timeouts)
        self._close_due()
        if self._reset_after is not None:
            self._keep_alive(self._collector.now, self._reset_after)

    def _keep_alive(self, now: float, after: float) -> None:
        waiting = itertools.chain(self._collector.open.values(), self._ready,
                                  (f.batch for f in self._in_flight.values()))
        for batch in waiting:
            if now - batch.touched_at >= after:
                batch.touched_at = now
                for t in batch.tuples:
                    self.reset_timeout(t)

    def _check_timeouts(self, now: float, timeouts: Backoff) -> None:
        if self._closing:
            return
        limit = timeouts.delay(timeouts.failures + 1)
        late = [f for f in self._in_flight.values()
                if f.spark_since is not None and now - f.spark_since > limit and not f.abandoned]
        if not late:
            return
        streak = timeouts.failures
        grown = (f", grown from {timeouts.first:g} s after {streak} consecutive timeout"
                 f"{'s' if streak > 1 else ''}" if streak else "")
        timeouts.failed()
        after = timeouts.delay(timeouts.failures + 1)
        next_limit = f"; the next batches may run {after:g} s" if after > limit else ""
        if after > limit:
            log.warning("%s: batch timed out after %g s; the next batches may run %g s (up to "
                        "%s, %g s) until one succeeds", type(self).__name__, limit, after,
                        BATCH_TIMEOUT_MAX_KEY, timeouts.cap)
        for flight in late:
            self._abandon(flight, SparkBatchTimeout(
                f"batch {flight.batch.batch_id} still running after {limit:g} s "
                f"({BATCH_TIMEOUT_KEY}{grown}); its Spark jobs are cancelled (the SparkSession is "
                f"restarted if it lost its executors){next_limit}"))

    def _abandon(self, flight: InSpark, error: BaseException) -> None:
        """Fail a timed-out batch now; cancel its Spark jobs (and stop a broken session) on a
        thread of its own. Its own background job keeps running until Spark gives it back; its outcome
        is then dropped (``_done``)."""
        flight.abandoned = True
        if flight.job is not None:
            flight.job.cancel()  # a no-op once started (always, when the timeout applies)
        self._in_flight.pop(flight.batch.batch_id, None)
        self._finish(flight.batch, None, error)
        # Not on the background pool: its threads may all be held by stuck batches.
        threading.Thread(target=self._runner.cancel, args=(flight,), daemon=True,
                         name=f"spark-cancel-{flight.batch.batch_id}").start()

    def _close_due(self) -> None:
        """Close the batches due by time, but only into free in-flight slots: while Spark is
        busy a due batch stays open and keeps collecting (fuller batches, not a queue)."""
        free = self.max_in_flight - len(self._in_flight) - len(self._ready)
        if free > 0 and not self._closing:
            for batch in self._collector.take_due(free):
                self._close(batch)

    def _close(self, batch: Batch) -> None:
        batch.batch_id = self._seq * self._tasks + self._task_index
        self._seq += 1
        self._ready.append(batch)
        self._pump()

    def _pump(self) -> None:
        while self._ready and len(self._in_flight) < self.max_in_flight and not self._closing:
            batch = self._ready.popleft()
            flight = InSpark(batch, self._ahead.pop(batch.batch_id, None))
            self._in_flight[batch.batch_id] = flight
            batch.started_at = perf_counter()
            flight.job = self._off_loop.submit(partial(self._runner.run, flight),
                                               partial(self._done, flight))
        if self.prepare_ahead and self._ready and not self._closing:
            head = self._ready[0]
            if head.batch_id not in self._ahead:
                ahead = self._ahead[head.batch_id] = AheadDataFrame()
                self._off_loop.submit(partial(ahead.build, partial(get_spark, self._conf),
                                              partial(self._dataframe, head)), ignore_outcome)

    def _dataframe(self, batch: Batch, session: SparkSession) -> DataFrame:
        return batch_dataframe(session, batch.fields, batch.rows, self.schema)

    # -- off the loop ------------------------------------------------------------------------------
    def _warm(self) -> None:
        get_spark(self._conf)

    def _warmed(self, result: Any, error: BaseException | None) -> None:
        if error is not None:
            self.report_error(error)

    # -- back on the executor loop ---------------------------------------------------------------
    def _done(self, flight: InSpark, rows: list[list[Any]] | None,
              error: BaseException | None) -> None:
        if flight.abandoned:
            return  # failed by _abandon already
        self._in_flight.pop(flight.batch.batch_id, None)
        if self._closing:
            return
        if error is None and self._timeouts is not None:
            self._timeouts.reset()  # Spark is warm: the batch timeout is the configured one again
        self._finish(flight.batch, rows, error)

    def _finish(self, batch: Batch, rows: list[list[Any]] | None,
                error: BaseException | None) -> None:
        """Emit the results and ack the batch's tuples, or fail them and report ``error``."""
        if error is None and rows:
            anchors = batch.tuples if self.anchor_results else None
            try:
                for row in rows:
                    self.emit(row, anchors=anchors, stream=self.result_stream)
            except Exception as exc:  # noqa: BLE001 - e.g. unserialisable results: fail the batch
                error = exc
        # The next batch's Spark work starts before this batch's tuples are acked: acking tens
        # of thousands of tuples takes the loop a while, and the next job runs meanwhile.
        self._pump()
        self._close_due()
        if error is None:
            self.ack_many(batch.tuples)  # one compiled loop for the whole batch
            self.batches_ok += 1
        else:
            for t in batch.tuples:
                self.fail(t)
            self.batches_failed += 1
            if self.report_batch_errors:
                self.report_error(describe(batch, error))
        batch.finished_at = perf_counter()
        try:
            self.on_batch_done(BatchInfo.of(batch, len(rows or ()), error))
        except Exception as exc:  # noqa: BLE001 - a hook must not stop the loop
            self.report_error(exc)

