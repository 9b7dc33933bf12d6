"""Reading one shard: a ShardGetter issuing GetRecords, and a BufferedGetter over it that hands out
one record at a time and never blocks longer than one bounded GetRecords call.

* The shard iterator is opened at the start position (``AFTER_SEQUENCE_NUMBER`` of a checkpoint,
  or the initial position); when it expires it is re-opened ``AFTER_SEQUENCE_NUMBER`` of the last
  record read, so nothing is skipped or read twice.
* Throttling (and a timed-out or refused call) backs the shard off exponentially, up to
  ``MAX_BACKOFF_S``; an empty batch pauses it for ``empty_record_sleep_ms``.
* A shard closed by resharding ends when GetRecords returns no next iterator; ``finished`` is then
  true once the buffer is drained.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from stormpy.connectors.kinesis.client import THROTTLING, describe, error_code
from stormpy.connectors.kinesis.config import KinesisSpoutConfig
from stormpy.connectors.kinesis.records import KinesisRecord

log = logging.getLogger(__name__)

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


class Backoff(Exception):
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
            raise Backoff(f"{action} on shard {self.shard_id}: {code or exc}") from exc
        raise describe(exc, self.config, f"{action} on shard {self.shard_id}") from exc

    def fetch(self, limit: int) -> list[KinesisRecord]:
        """The next batch of at most ``limit`` records (possibly empty); Backoff when throttled or
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
                raise Backoff(f"shard {self.shard_id}: iterator expired") from exc
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


class BufferedGetter:
    """Hands out the records of one shard one at a time, fetching a batch when its buffer is
    empty and the shard is neither paused nor finished."""

    def __init__(self, getter: ShardGetter, records_per_get: int, empty_sleep_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.getter = getter
        self.records_per_get = records_per_get
        self.empty_sleep_s = empty_sleep_s
        self.clock = clock
        self._buffer: deque[KinesisRecord] = deque()
        self._not_before = 0.0
        self._backoff = 0.0
        self.backoffs = 0

    @property
    def shard_id(self) -> str:
        return self.getter.shard_id

    @property
    def finished(self) -> bool:
        """The shard was read to its end (closed by resharding) and every record handed out."""
        return self.getter.at_end and not self._buffer

    def next(self) -> KinesisRecord | None:
        """The next record, or None when none is ready now (or ever, once ``finished``)."""
        if self._buffer:
            return self._buffer.popleft()
        if self.getter.at_end:
            return None
        now = self.clock()
        if now < self._not_before:
            return None
        try:
            batch = self.getter.fetch(self.records_per_get)
        except Backoff as exc:
            self._backoff = min(MAX_BACKOFF_S, max(MIN_BACKOFF_S, self._backoff * 2))
            self._not_before = now + self._backoff
            self.backoffs += 1
            log.debug("%s; backing off %.2fs", exc, self._backoff)
            return None
        self._backoff = 0.0
        if not batch:
            self._not_before = now + self.empty_sleep_s
            return None
        self._buffer.extend(batch)
        return self._buffer.popleft()
