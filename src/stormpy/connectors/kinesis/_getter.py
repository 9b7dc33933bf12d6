"""Reading one shard: a ShardGetter issuing GetRecords, and a BufferedGetter over it that hands out
one record at a time on the executor loop while GetRecords runs off it (the off-loop seam).

* The shard iterator is opened at the start position (``AFTER_SEQUENCE_NUMBER`` of a checkpoint,
  or the initial position); when it expires it is re-opened ``AFTER_SEQUENCE_NUMBER`` of the last
  record read, so nothing is skipped or read twice.
* Throttling (and a timed-out or refused call) backs the shard off exponentially (a
  :class:`~stormpy.host.backoff.Backoff` from ``MIN_BACKOFF_S`` up to ``MAX_BACKOFF_S``); an empty
  batch pauses it for ``empty_record_sleep_ms``.
* A shard closed by resharding ends when GetRecords returns no next iterator; ``finished`` is then
  true once the buffer is drained and no call is in flight.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from stormpy.connectors.kinesis._client import THROTTLING, describe, error_code
from stormpy.connectors.kinesis._config import KinesisSpoutConfig
from stormpy.connectors.kinesis._records import KinesisRecord
from stormpy.host.backoff import Backoff
from stormpy.topology._offloop import OnDone

log = logging.getLogger(__name__)

#: ``submit(fn, on_done)``: the off-loop seam's ``OffLoop.submit`` (or :func:`run_inline`)
Submit = Callable[[Callable[[], Any], OnDone], Any]

MIN_BACKOFF_S = 0.05
MAX_BACKOFF_S = 5.0
TRANSIENT = frozenset({"EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError",
                       "ConnectionClosedError"})


@dataclass(frozen=True)
class Position:
    """Where to open a shard iterator: ``kind`` is a Kinesis ShardIteratorType."""

    kind: str
    sequence_number: str | None = None
    timestamp: float | None = None

    @classmethod
    def after(cls, sequence_number: str) -> Position:
        return cls("AFTER_SEQUENCE_NUMBER", sequence_number)

    @classmethod
    def initial(cls, config: KinesisSpoutConfig) -> Position:
        return cls(config.initial_position, timestamp=config.initial_timestamp)

    def request(self) -> dict[str, Any]:
        """The GetShardIterator arguments of this position."""
        args: dict[str, Any] = {"ShardIteratorType": self.kind}
        if self.sequence_number is not None:
            args["StartingSequenceNumber"] = self.sequence_number
        if self.timestamp is not None:
            args["Timestamp"] = datetime.fromtimestamp(self.timestamp, tz=UTC)
        return args


class RetryLater(Exception):
    """The shard should not be asked again for a while (throttled or unreachable)."""


class ShardGetter:
    """GetRecords over one shard, from ``start``; not thread-safe."""

    def __init__(self, client: Any, config: KinesisSpoutConfig, shard_id: str,
                 start: Position) -> None:
        self.client = client
        self.config = config
        self.shard_id = shard_id
        self.start = start
        self._iterator: str | None = None
        self.last_read: str | None = start.sequence_number if start.kind == "AFTER_SEQUENCE_NUMBER" \
            else None
        self.at_end = False
        self.millis_behind: int | None = None

    def _open(self) -> None:
        position = Position.after(self.last_read) if self.last_read is not None else self.start
        try:
            resp = self.client.get_shard_iterator(StreamName=self.config.stream,
                                                  ShardId=self.shard_id, **position.request())
        except Exception as exc:
            self._raise(exc, "GetShardIterator")
        self._iterator = resp.get("ShardIterator")
        if self._iterator is None:
            self.at_end = True

    def _raise(self, exc: Exception, action: str) -> None:
        code = error_code(exc)
        if code in THROTTLING or type(exc).__name__ in TRANSIENT:
            raise RetryLater(f"{action} on shard {self.shard_id}: {code or exc}") from exc
        raise describe(exc, self.config, f"{action} on shard {self.shard_id}") from exc

    def fetch(self, limit: int) -> list[KinesisRecord]:
        """The next batch of at most ``limit`` records (possibly empty); RetryLater when throttled or
        the endpoint did not answer, KinesisStreamError for anything else."""
        if self.at_end:
            return []
        if self._iterator is None:
            self._open()
            if self._iterator is None:
                return []
        try:
            resp = self.client.get_records(ShardIterator=self._iterator, Limit=limit)
        except Exception as exc:
            if error_code(exc) == "ExpiredIteratorException":
                log.info("shard %s: shard iterator expired; re-opening after %s", self.shard_id,
                         self.last_read or self.start.kind)
                self._iterator = None
                raise RetryLater(f"shard {self.shard_id}: iterator expired") from exc
            self._raise(exc, "GetRecords")
        self._iterator = resp.get("NextShardIterator")
        if self._iterator is None:
            self.at_end = True
        self.millis_behind = resp.get("MillisBehindLatest", self.millis_behind)
        floor = int(self.last_read) if self.last_read is not None else -1
        out = []
        for r in resp.get("Records", []):
            seq = r["SequenceNumber"]
            if int(seq) <= floor:
                continue  # already read before the iterator was re-opened
            arrival = r.get("ApproximateArrivalTimestamp")
            out.append(KinesisRecord(self.shard_id, seq, r.get("PartitionKey", ""), bytes(r["Data"]),
                                     arrival.timestamp() if arrival is not None else None))
            floor = int(seq)
        if out:
            self.last_read = out[-1].sequence_number
        return out


def run_inline(fn: Callable[[], Any], on_done: OnDone) -> None:
    """A ``submit`` that runs ``fn`` at once on the caller's thread (tests, tools): the same
    ``on_done(result, error)`` contract as the off-loop seam, without the pool."""
    try:
        result = fn()
    except Exception as exc:  # noqa: BLE001 - handed to on_done, as the seam does
        on_done(None, exc)
        return
    on_done(result, None)


class BufferedGetter:
    """Hands out the records of one shard one at a time from a buffer that GetRecords fills off
    the executor loop.

    Whenever the buffer holds fewer than ``records_per_get`` records and the shard is neither
    paused nor finished, the next batch is requested through ``submit`` (the task's off-loop
    seam: ``fn`` runs on the background pool, ``on_done`` back on the loop), so the following
    batch is usually on its way while the current one is emitted. At most one GetRecords of the
    shard is in flight at a time and batches are appended in the order they were read, so records
    are never reordered; the ShardGetter is only touched by the one job in flight.

    A throttled or unanswered call backs the shard off exponentially; any other error (the stream
    was deleted, credentials expired) backs it off too and is handed to ``on_error`` (the spout
    reports it), never raised on the loop.
    """

    def __init__(self, getter: ShardGetter, records_per_get: int, empty_sleep_s: float,
                 clock: Callable[[], float] = time.monotonic, submit: Submit = run_inline,
                 on_error: Callable[[BaseException], None] | None = None) -> None:
        self.getter = getter
        self.records_per_get = records_per_get
        self.empty_sleep_s = empty_sleep_s
        self.clock = clock
        self.submit = submit
        self.on_error = on_error
        self._buffer: deque[KinesisRecord] = deque()
        self._backoff = Backoff(MIN_BACKOFF_S, MAX_BACKOFF_S)  # after failed calls
        self._not_before = 0.0  # after an empty batch
        self._in_flight = False
        self._closed = False
        self._job: Any = None
        self.backoffs = 0
        self.errors = 0
        self.fetches = 0

    @property
    def shard_id(self) -> str:
        return self.getter.shard_id

    @property
    def in_flight(self) -> bool:
        """A GetRecords of this shard is running off the loop."""
        return self._in_flight

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    @property
    def finished(self) -> bool:
        """The shard was read to its end (closed by resharding) and every record handed out."""
        return not self._buffer and not self._in_flight and self.getter.at_end

    def next(self) -> KinesisRecord | None:
        """The next record, or None when none is ready now (or ever, once ``finished``);
        requests the next batch when the buffer runs low. Call on the executor loop."""
        buffer = self._buffer
        record = buffer.popleft() if buffer else None
        if not self._in_flight and len(buffer) < self.records_per_get:
            self._request()
            if record is None and buffer:  # a submit that ran at once (run_inline)
                record = buffer.popleft()
        return record

    def _request(self) -> None:
        now = self.clock()
        if self.getter.at_end or self._closed or now < self._not_before or not self._backoff.ready(now):
            return
        self._in_flight = True
        self.fetches += 1
        getter, limit = self.getter, self.records_per_get
        self._job = self.submit(lambda: getter.fetch(limit), self._fetched)

    def _fetched(self, batch: Any, error: BaseException | None) -> None:
        """A GetRecords finished (on the loop): buffer its records or back off."""
        self._in_flight = False
        self._job = None
        if self._closed:
            return
        now = self.clock()
        backoff = self._backoff
        if error is None:
            backoff.reset()
            if batch:
                self._buffer.extend(batch)
            else:
                self._not_before = now + self.empty_sleep_s
            return
        backoff.failed_at(now)
        self.backoffs += 1
        if isinstance(error, RetryLater):
            log.debug("%s; backing off %.2fs", error, backoff.last_delay)
            return
        self.errors += 1
        log.warning("shard %s: %s; backing off %.2fs", self.shard_id, error, backoff.last_delay)
        if self.on_error is not None:
            self.on_error(error)

    def close(self) -> None:
        """Stop reading: a request not started is cancelled, a result arriving later dropped."""
        self._closed = True
        job = self._job
        if job is not None and hasattr(job, "cancel"):
            job.cancel()
