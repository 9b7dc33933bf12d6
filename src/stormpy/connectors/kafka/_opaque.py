"""KafkaOpaqueSpout: a Kafka topic as an opaque partitioned transactional spout (Storm's
``OpaqueTridentKafkaSpout``), for transactional topologies and Trident's ``new_stream``.

Each transaction takes, per partition, the records from the offset after the previous
transaction's batch (its metadata ``{"offset": first, "next": after last}``: the latest attempt's
on this task, else the committed one) up to ``max_batch_records``, so every record is in exactly
one committed batch. Offsets live in the transactional metadata, not in the consumer group
(nothing is committed to Kafka). Pair it with opaque state for exactly-once counts. A replay that
starts at the same offset as an earlier attempt of its transaction (recorded in the transactional
store, so across restarts too) takes exactly the records that attempt took: the committers may
have committed that attempt's values before the coordinator recorded the commit, and opaque state
is exact only when the replay rewrites every key the earlier attempt wrote; when those records
cannot be read in time the batch fails and is tried again, rather than going out smaller. A
partition's first batch on a task (or after a replay moved it) waits for its first records. Those
waits run on the executor loop, so they share one budget per batch and task (``REPLAY_WAIT_SECS``
over all its partitions, each partition still polled for ``poll_timeout_secs``): a loop blocked
for longer would miss its heartbeats and the supervisor would restart the worker
(``supervisor.worker.timeout.secs``), whose fresh consumers would wait again. What a batch does
not get in time comes with a later one.

Tuples: ``[attempt, partition, offset, key, value]`` (key and value decoded with ``encoding``,
or bytes when it is None). One consumer per partition an emitter task serves.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

from stormpy.connectors.kafka._assignment import OFFSET_BEGINNING
from stormpy.connectors.kafka._client import KafkaConsumerClient
from stormpy.connectors.kafka._messages import TopicPartition
from stormpy.topology._context import TopologyContext
from stormpy.topology._errors import FailedException
from stormpy.topology._streams import Stream
from stormpy.transactional._api import BatchOutputCollector, OpaquePartitionedTransactionalSpout
from stormpy.transactional._attempt import TransactionAttempt

__all__ = ["KafkaOpaqueSpout"]

#: How long one batch of an emitter task waits in all (over its partitions) for the records a
#: replay's earlier attempt took or a fresh assignment's first records: the executor loop is
#: blocked meanwhile, so well under the supervisor's worker timeout.
REPLAY_WAIT_SECS = 1.5


class KafkaOpaqueSpout(OpaquePartitionedTransactionalSpout):
    """``KafkaOpaqueSpout(bootstrap_servers, topic, max_batch_records=1000)``; pass the instance
    to ``TransactionalTopologyBuilder`` or ``TridentTopology.new_stream``.

    ``poll_timeout_secs`` bounds each wait for records (a batch takes what arrived meanwhile);
    ``consumer_config``: extra librdkafka settings."""

    def __init__(self, bootstrap_servers: str, topic: str, max_batch_records: int = 1000, *,
                 poll_timeout_secs: float = 0.2, encoding: str | None = "utf-8",
                 consumer_config: Mapping[str, Any] | None = None) -> None:
        if not isinstance(max_batch_records, int) or max_batch_records < 1:
            raise ValueError(f"max_batch_records must be an integer >= 1, got {max_batch_records!r}")
        if not topic or not bootstrap_servers:
            raise ValueError("KafkaOpaqueSpout needs bootstrap_servers and a topic")
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.max_batch_records = max_batch_records
        self.poll_timeout_secs = float(poll_timeout_secs)
        self.encoding = encoding
        self.consumer_config = dict(consumer_config or {})

    @property
    def component_class(self) -> type:
        return type(self)

    @property
    def component_kwargs(self) -> dict[str, Any]:
        return {"bootstrap_servers": self.bootstrap_servers, "topic": self.topic,
                "max_batch_records": self.max_batch_records,
                "poll_timeout_secs": self.poll_timeout_secs, "encoding": self.encoding,
                "consumer_config": self.consumer_config}

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        return {"default": Stream(["tx", "partition", "offset", "key", "value"])}

    def get_emitter(self, conf: Mapping[str, Any], context: TopologyContext) -> KafkaOpaqueEmitter:
        return KafkaOpaqueEmitter(self, context)


class KafkaOpaqueEmitter(OpaquePartitionedTransactionalSpout.Emitter):
    """Reads batches of one partition at a time, each partition with its own consumer."""

    def __init__(self, spout: KafkaOpaqueSpout, context: TopologyContext) -> None:
        self.spout = spout
        self.context = context
        self.consumers: dict[int, KafkaConsumerClient] = {}
        self.positions: dict[int, int | None] = {}
        self.errors: list[str] = []
        self._partitions: int | None = None
        #: the attempt whose batch is being emitted and the end of its shared wait budget
        self._waiting: tuple[TransactionAttempt | None, float] = (None, 0.0)

    def _conf(self) -> dict[str, Any]:
        return {"bootstrap.servers": self.spout.bootstrap_servers,
                "group.id": f"stormpy-opaque-{uuid.uuid4().hex[:12]}",
                "enable.auto.commit": False, "auto.offset.reset": "earliest",
                "enable.partition.eof": False, **self.spout.consumer_config}

    def _consumer(self, partition: int) -> KafkaConsumerClient:
        consumer = self.consumers.get(partition)
        if consumer is None:
            consumer = self.consumers[partition] = KafkaConsumerClient(
                self._conf(), self.errors.append, self.errors.append)
            self.positions[partition] = None
        return consumer

    def num_partitions(self) -> int:
        if self._partitions is None:
            consumer = self._consumer(0)
            topics = consumer.topics(10.0)
            if self.spout.topic not in topics:
                raise RuntimeError(f"Kafka topic {self.spout.topic!r} not found on "
                                   f"{self.spout.bootstrap_servers}")
            self._partitions = topics[self.spout.topic]
        return self._partitions

    def emit_partition_batch(self, attempt: TransactionAttempt, collector: BatchOutputCollector,
                             partition: int, last_meta: Any) -> Any:
        start = int(last_meta["next"]) if last_meta else None
        records = self._take(attempt, partition, start, None)
        if not records:
            return last_meta if last_meta else None
        return self._emit(attempt, collector, partition, records)

    def emit_partition_batch_again(self, attempt: TransactionAttempt,
                                   collector: BatchOutputCollector, partition: int,
                                   last_meta: Any, meta: Any) -> Any:
        start = int(last_meta["next"]) if last_meta else None
        target = int(meta["next"])
        taken = self._take(attempt, partition, start, target)
        records = [r for r in taken if r.offset < target]
        if not records or records[-1].offset + 1 != target:
            got = records[-1].offset + 1 if records else start
            self._unplace(partition)  # the next attempt reads the batch again from its start
            raise FailedException(
                f"Kafka topic {self.spout.topic!r} partition {partition}: the replay of transaction "
                f"{attempt.transaction_id} must take the offsets up to {target} its earlier attempt "
                f"took, got up to {got} in time; the transaction is tried again")
        meta = self._emit(attempt, collector, partition, records)
        if len(records) < len(taken):  # the consumer is past the batch: place it again
            self._unplace(partition)
        return meta

    def _unplace(self, partition: int) -> None:
        """Take the partition out of its consumer's assignment: the next batch assigns it again
        at its start."""
        if self.positions.get(partition) is not None:
            self.consumers[partition].unassign([TopicPartition(self.spout.topic, partition)])
            self.positions[partition] = None

    def _take(self, attempt: TransactionAttempt, partition: int, start: int | None,
              target: int | None) -> list[Any]:
        """The partition's records from ``start`` (the beginning when None): up to ``target``
        (exclusive) when given, waiting for them within the batch's budget; else what is ready
        (up to ``max_batch_records``)."""
        consumer = self._consumer(partition)
        tp = TopicPartition(self.spout.topic, partition)
        at = start if start is not None else OFFSET_BEGINNING
        fresh = self.positions[partition] != at
        if fresh:  # a replay, or the first batch of the partition here
            if self.positions[partition] is not None:
                consumer.unassign([tp])
            consumer.assign({tp: at})
            self.positions[partition] = at
        wanted = self.spout.max_batch_records
        records: list[Any] = []
        # after a (re)assignment the first fetch takes a while: wait longer for it, so a replay
        # after a worker restart does not come out empty for want of patience
        now = time.monotonic()
        if self._waiting[0] != attempt:  # the attempt's first partition on this task
            self._waiting = (attempt, now + REPLAY_WAIT_SECS)
        poll = self.spout.poll_timeout_secs
        deadline = max(self._waiting[1], now + poll) if fresh or target is not None else now + poll
        while target is not None or len(records) < wanted:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            room = wanted - len(records) if target is None else max(1, min(
                wanted, target - (records[-1].offset + 1 if records else (start or 0))))
            got, _errors = consumer.consume(room, min(left, 0.1))
            records.extend(r for r in got if start is None or r.offset >= start)
            if target is not None:
                if records and records[-1].offset + 1 >= target:
                    break
            elif records and not got:
                break  # what was ready is taken; the rest comes with the next batch
        return records

    def _emit(self, attempt: TransactionAttempt, collector: BatchOutputCollector,
              partition: int, records: list[Any]) -> Any:
        enc = self.spout.encoding
        for r in records:
            key, value = r.key, r.value
            if enc is not None:
                key = key.decode(enc) if key is not None else None
                value = value.decode(enc) if value is not None else None
            collector.emit([attempt, partition, r.offset, key, value])
        first, nxt = records[0].offset, records[-1].offset + 1
        self.positions[partition] = nxt
        return {"offset": first, "next": nxt}

    def close(self) -> None:
        for consumer in self.consumers.values():
            try:
                consumer.close()
            except Exception:  # noqa: BLE001 - closing at shutdown: nothing left to do with it
                pass
        self.consumers.clear()
