"""The exactly-once Kafka sink of transactional and Trident topologies: each committed batch's
records in one Kafka transaction, written once per transaction id (txid) however often the batch
is replayed.

Contract:

* One :class:`KafkaTransactionalSink` per sink task, with the ``transactional.id``
  ``<prefix>-<topology name>-<component>-<task index>`` (:func:`transactional_id`): stable across
  restarts and reassignments of the task, so a new incarnation's ``init_transactions`` fences the
  old one (a zombie's next produce or commit fails) and aborts the transaction it left open.
* :meth:`KafkaTransactionalSink.commit_batch(txid, records)` writes ``records`` and one *marker*
  record (key: the transactional.id, value: the txid in decimal) to the sink's *commit log*
  (``commit_log_topic``, a compacted topic created on first use) inside one Kafka transaction and
  commits it. The marker commits atomically with the records: after a crash anywhere, even between
  the Kafka commit and the topology's own commit record, the last marker of the task's
  transactional.id says which txid's records are in Kafka.
* Opening (on the first commit, and again after any failed one): ``init_transactions`` first (it
  settles the previous incarnation's transaction), then the task's partition of the commit log is
  read with ``isolation.level=read_committed`` up to its high watermark taken after that, so the
  last committed marker is seen even behind other tasks' open transactions. An
  ``init_transactions`` that failed with a retriable error (a timeout: the broker's transaction
  coordinator still loading, or aborting the previous incarnation's transaction) is still in
  progress in the client: the next opening calls it again on the same producer, as librdkafka
  requires, instead of starting another producer whose initialisation would race it (the one
  that completes last fences the other, and the sink would fence itself over and over). Only a
  fatal or non-retriable error gets a new producer. A producer whose initialisation completed is
  kept when the marker read fails; the next opening only reads again.
* The txid of the last committed marker is skipped (the replay of a batch whose Kafka
  transaction committed): ``commit_batch`` returns False and writes nothing. A txid below it
  cannot come from a replay (commits come in txid order) and raises KafkaConfigError: the
  topology's txids started over under a prefix whose markers are still in the commit log. A
  batch with no records writes nothing.
* Any error aborts the open transaction (when the client still can) and raises: the batch fails
  and is replayed; the producer is dropped and the next commit reopens (init, marker read), so an
  uncertain outcome (a commit whose reply was lost) is decided by the marker, not guessed.
* ``exactly_once=False`` (the comparison mode): a plain idempotent producer, every attempt's
  records produced and flushed, no marker, no skip — at-least-once, as ``KafkaBolt``.

All calls block (bounded by ``timeout_secs``); the callers run them in the commit phase.
"""

from __future__ import annotations

import logging
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from stormpy._settings import (
    check_flag,
    check_int,
    check_mapping,
    check_number,
    check_text,
    settings_from_doc,
)
from stormpy.connectors.kafka._bolt_config import to_bytes
from stormpy.connectors.kafka._client import require_confluent_kafka
from stormpy.connectors.kafka._config import KafkaConfigError

__all__ = ["KafkaTransactionalConfig", "KafkaTransactionalSink", "Record", "read_committed_txid",
           "transactional_id"]

log = logging.getLogger("stormpy.connectors.kafka.transactional")
client_log = logging.getLogger("stormpy.connectors.kafka.librdkafka")

#: (topic, key, value) of one output record; key and value as ``to_bytes`` takes them
Record = tuple[str, Any, Any]

#: the producer properties the sink owns
_OWNED = ("bootstrap.servers", "transactional.id", "enable.idempotence", "isolation.level")


@dataclass
class KafkaTransactionalConfig:
    """The transactional sink's settings (plain data, carried in the topology spec).

    * ``bootstrap_servers`` — required.
    * ``topic`` — the records' topic, or ``topic_field`` — the input field naming it (with
      ``default_topic`` when the field is missing or None); exactly one of the two.
    * ``key_field`` ``"key"`` (no such field: a null key), ``message_field`` ``"message"``.
    * ``transactional_id_prefix`` ``"stormpy"`` — first part of each task's transactional.id.
    * ``commit_log_topic`` — the compacted topic of the markers (default
      ``<transactional_id_prefix>-commit-log``), created with ``commit_log_partitions``
      partitions when missing.
    * ``producer_props`` — librdkafka producer properties passed through (``transaction.timeout.ms``,
      ``linger.ms``, ``compression.type`` ...), except those the sink owns.
    * ``exactly_once`` True — False: the at-least-once comparison mode (see the module doc).
    * ``timeout_secs`` 60 — bound of each blocking step (init, commit, marker read).
    """

    bootstrap_servers: str
    topic: str | None = None
    topic_field: str | None = None
    default_topic: str | None = None
    key_field: str = "key"
    message_field: str = "message"
    transactional_id_prefix: str = "stormpy"
    commit_log_topic: str | None = None
    commit_log_partitions: int = 1
    producer_props: dict[str, Any] = field(default_factory=dict)
    exactly_once: bool = True
    timeout_secs: float = 60.0

    def validate(self) -> KafkaTransactionalConfig:
        err, name = KafkaConfigError, "KafkaTransactionalConfig."
        check_text(name + "bootstrap_servers", self.bootstrap_servers,
                   "'host:port[,host:port...]'", error=err)
        if (self.topic is None) == (self.topic_field is None):
            raise err(name + "topic", "set exactly one of topic and topic_field; got "
                                      f"topic={self.topic!r}, topic_field={self.topic_field!r}")
        for setting in ("topic", "topic_field", "default_topic", "commit_log_topic"):
            if getattr(self, setting) is not None:
                check_text(name + setting, getattr(self, setting), error=err)
        for setting in ("key_field", "message_field", "transactional_id_prefix"):
            check_text(name + setting, getattr(self, setting), error=err)
        check_int(name + "commit_log_partitions", self.commit_log_partitions, 1, error=err)
        props = check_mapping(name + "producer_props", self.producer_props,
                              "a mapping of librdkafka properties", error=err)
        for key in props:
            if key in _OWNED or key.endswith("_cb"):
                raise err(name + "producer_props", f"{key!r} is set by the sink and cannot be "
                                                   "given here")
        check_flag(name + "exactly_once", self.exactly_once, error=err)
        check_number(name + "timeout_secs", self.timeout_secs, 0.001, error=err)
        return self

    @property
    def commit_log(self) -> str:
        return self.commit_log_topic or f"{self.transactional_id_prefix}-commit-log"

    def to_doc(self) -> dict[str, Any]:
        return asdict(self.validate())

    @classmethod
    def from_doc(cls, doc: Any) -> KafkaTransactionalConfig:
        if isinstance(doc, cls):
            return doc.validate()
        return settings_from_doc(cls, doc, error=KafkaConfigError)

    def record_of(self, get: Callable[[str], Any], where: str) -> Record | None:
        """The record of one input (``get(field)`` → value, KeyError when absent); None when no
        topic is found. A missing message field or a value Kafka cannot carry raises ValueError
        naming ``where``."""
        topic = self.topic
        if topic is None:
            assert self.topic_field is not None
            try:
                topic = get(self.topic_field)
            except KeyError:
                topic = None
            if topic is None:
                topic = self.default_topic
            if topic is None:
                return None
            if not isinstance(topic, str):
                raise ValueError(f"{where}: field {self.topic_field!r} holds {topic!r:.60}, not "
                                 "a topic name")
        try:
            value = get(self.message_field)
        except KeyError:
            raise ValueError(f"{where}: no field {self.message_field!r} "
                             "(KafkaTransactionalConfig.message_field)") from None
        try:
            key = get(self.key_field)
        except KeyError:
            key = None
        return topic, _record_bytes(key, "key", where), _record_bytes(value, "message", where)


def _record_bytes(value: Any, what: str, where: str) -> bytes | None:
    """``value`` as the bytes Kafka stores (``to_bytes``); ValueError naming ``where`` and the
    field (``key_field``/``message_field``) when Kafka cannot carry it."""
    try:
        return to_bytes(value, what)
    except TypeError:
        raise ValueError(f"{where}: the {what} is a {type(value).__name__} ({value!r:.60}); map it "
                         f"to str, bytes, a number or None (KafkaTransactionalConfig.{what}_field)"
                         ) from None


def transactional_id(prefix: str, topology: str, component: str, task_index: int) -> str:
    """``<prefix>-<topology name>-<component>-<task index>``: the same for every incarnation of
    the task, different for every task."""
    return f"{prefix}-{topology}-{component}-{task_index}"


def _marker_partition(tid: str, partitions: int) -> int:
    return zlib.crc32(tid.encode()) % partitions


def _retriable(exc: BaseException) -> bool:
    """Whether a client call that raised ``exc`` may be called again (a retriable KafkaError
    that is not fatal)."""
    err: Any = exc.args[0] if exc.args else None
    return bool(hasattr(err, "retriable") and err.retriable()
                and not (hasattr(err, "fatal") and err.fatal()))


def read_committed_txid(bootstrap_servers: str, commit_log: str, tid: str,
                        timeout_secs: float = 60.0) -> int | None:
    """The txid of the last committed marker of ``tid`` in ``commit_log`` (None: none), read with
    ``read_committed`` up to the partition's high watermark as of this call (so it waits for open
    transactions below it to end). TimeoutError past ``timeout_secs``; a read error raises the
    client's KafkaException (its KafkaError kept as ``args[0]``) with a note naming the commit
    log, its partition, the transactional.id and the offset."""
    ck = require_confluent_kafka()
    consumer = ck.Consumer({"bootstrap.servers": bootstrap_servers, "group.id": f"{tid}-reader",
                            "isolation.level": "read_committed", "enable.auto.commit": False,
                            "enable.partition.eof": True, "logger": client_log})
    try:
        meta = consumer.list_topics(commit_log, timeout=timeout_secs).topics.get(commit_log)
        if meta is None or meta.error is not None or not meta.partitions:
            raise KafkaConfigError("KafkaTransactionalConfig.commit_log_topic",
                                   f"commit log topic {commit_log!r} is not available: "
                                   f"{None if meta is None else meta.error}")
        tp = ck.TopicPartition(commit_log, _marker_partition(tid, len(meta.partitions)))
        low, high = consumer.get_watermark_offsets(tp, timeout=timeout_secs, cached=False)
        if high <= low:
            return None
        tp.offset = low
        consumer.assign([tp])
        last: int | None = None
        deadline = time.monotonic() + timeout_secs
        position = low
        while position < high:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading the commit log {commit_log!r} of {tid!r}: at offset "
                                   f"{position} of {high} after {timeout_secs:.0f} s (a "
                                   "transaction stays open below it)")
            for msg in consumer.consume(500, 0.5):
                err = msg.error()
                if err is not None:
                    if err.code() == ck.KafkaError._PARTITION_EOF:
                        position = max(position, msg.offset())
                        continue
                    failure = ck.KafkaException(err)
                    failure.add_note(f"reading the commit log {commit_log!r} (partition "
                                     f"{tp.partition}) of {tid!r} at offset {position}")
                    raise failure
                if msg.key() == tid.encode():
                    last = int(msg.value())
                position = max(position, msg.offset() + 1)
            got = consumer.position([ck.TopicPartition(tp.topic, tp.partition)])[0]
            if got.offset >= 0:
                position = max(position, got.offset)
        return last
    finally:
        consumer.close()


class KafkaTransactionalSink:
    """One sink task's writer (see the module doc): ``commit_batch(txid, records)``, ``close()``.

    ``producer_factory(conf)`` and ``read_txid(sink)`` are seams for tests (a stub client)."""

    def __init__(self, config: KafkaTransactionalConfig, tid: str, *,
                 producer_factory: Callable[[Mapping[str, Any]], Any] | None = None,
                 read_txid: Callable[[KafkaTransactionalSink], int | None] | None = None) -> None:
        self.config = config.validate()
        self.tid = tid
        self._factory = producer_factory
        self._read_txid = read_txid
        self.producer: Any = None
        #: a producer being opened: its init_transactions not completed yet (False) or completed
        #: with the marker still to be read (True); kept across failed openings
        self._opening: tuple[Any, bool] | None = None
        #: the last txid whose records are committed in Kafka (None: none or not read yet)
        self.last_txid: int | None = None
        self._marker_partition = 0
        self._errors: list[str] = []
        self._failed: list[str] = []
        #: one commit at a time (a replayed attempt waits for an abandoned one still committing)
        self._lock = threading.Lock()
        self.counters = {"batches": 0, "records": 0, "skipped_batches": 0, "aborted": 0,
                         "opens": 0}

    # -- opening ------------------------------------------------------------------------------
    def _new_producer(self) -> Any:
        cfg = self.config
        conf: dict[str, Any] = {"bootstrap.servers": cfg.bootstrap_servers,
                                "client.id": self.tid, **cfg.producer_props,
                                "error_cb": lambda err: self._errors.append(str(err)),
                                "logger": client_log}
        if cfg.exactly_once:
            conf["transactional.id"] = self.tid
        else:
            conf["enable.idempotence"] = True
        if self._factory is not None:
            return self._factory(conf)
        return require_confluent_kafka().Producer(conf)

    def _ensure_commit_log(self) -> int:
        """The commit log's partition count, the topic created (compacted) when missing."""
        ck = require_confluent_kafka()
        from confluent_kafka.admin import AdminClient, NewTopic

        cfg = self.config
        admin_conf: dict[str, Any] = {"bootstrap.servers": cfg.bootstrap_servers,
                                      "logger": client_log}
        admin = AdminClient(admin_conf)
        topic = cfg.commit_log
        meta = admin.list_topics(timeout=cfg.timeout_secs).topics.get(topic)
        if meta is None or not meta.partitions:
            futures = admin.create_topics([NewTopic(
                topic, num_partitions=cfg.commit_log_partitions, replication_factor=-1,
                config={"cleanup.policy": "compact", "segment.ms": "600000",
                        "min.cleanable.dirty.ratio": "0.1"})])
            try:
                futures[topic].result(cfg.timeout_secs)
            except ck.KafkaException as exc:
                if exc.args[0].code() != ck.KafkaError.TOPIC_ALREADY_EXISTS:
                    raise
            deadline = time.monotonic() + cfg.timeout_secs
            while True:
                meta = admin.list_topics(topic, timeout=cfg.timeout_secs).topics.get(topic)
                if meta is not None and meta.error is None and meta.partitions:
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the commit log topic {topic!r} did not appear")
                time.sleep(0.2)
        return len(meta.partitions)

    def open(self) -> None:
        """Create the producer; in exactly-once mode ``init_transactions`` (fencing earlier
        incarnations) and read the last committed txid."""
        cfg = self.config
        if not cfg.exactly_once:
            self.producer = self._new_producer()
            self.counters["opens"] += 1
            return
        if self._read_txid is None:
            self._marker_partition = _marker_partition(self.tid, self._ensure_commit_log())
        producer, initialized = self._opening or (self._new_producer(), False)
        self._opening = producer, initialized
        if not initialized:
            try:
                producer.init_transactions(cfg.timeout_secs)
            except Exception as exc:
                if not _retriable(exc):  # fatal (fenced ...): the next opening starts anew
                    self._opening = None
                raise
            self._opening = producer, True
        self.last_txid = (self._read_txid(self) if self._read_txid is not None else
                          read_committed_txid(cfg.bootstrap_servers, cfg.commit_log, self.tid,
                                              cfg.timeout_secs))
        self._opening = None
        self.producer = producer
        self.counters["opens"] += 1
        log.info("Kafka transactional sink %s open (last committed txid %s)", self.tid,
                 self.last_txid)

    # -- committing ---------------------------------------------------------------------------
    def committed(self, txid: int) -> bool:
        """Whether ``txid``'s records are known to be committed in Kafka."""
        return self.last_txid is not None and txid <= self.last_txid

    def commit_batch(self, txid: int, records: Sequence[Record]) -> bool:
        """Write ``records`` (topic, key, value) as txid's transaction; False when skipped (the
        txid committed before, or no records). Raises on failure (nothing of it visible to
        ``read_committed`` readers; the next call reopens)."""
        with self._lock:
            return self._commit_batch(txid, records)

    def _commit_batch(self, txid: int, records: Sequence[Record]) -> bool:
        if self.producer is None:
            self.open()
        if self.config.exactly_once and self.committed(txid):
            if txid < self.last_txid:  # type: ignore[operator]
                raise KafkaConfigError(
                    "KafkaTransactionalConfig.transactional_id_prefix",
                    f"txid {txid} is below the last txid committed by {self.tid!r} "
                    f"({self.last_txid}, in {self.config.commit_log!r}): the topology's "
                    "transaction ids started over (a new transactional state or txid name) "
                    "while the commit log keeps this prefix's markers; use a new "
                    "transactional_id_prefix or commit_log_topic")
            self.counters["skipped_batches"] += 1
            log.info("Kafka transactional sink %s: txid %d already committed in Kafka (last %s); "
                     "skipped", self.tid, txid, self.last_txid)
            return False
        if not records:
            return False
        try:
            if self.config.exactly_once:
                self._transaction(txid, records)
                self.last_txid = txid
            else:
                self._produce_all(records)
                left = self.producer.flush(self.config.timeout_secs)
                self._check_delivery(left)
        except BaseException:
            self._drop()
            raise
        self.counters["batches"] += 1
        self.counters["records"] += len(records)
        return True

    def _transaction(self, txid: int, records: Sequence[Record]) -> None:
        producer, timeout = self.producer, self.config.timeout_secs
        producer.begin_transaction()
        try:
            self._produce_all(records)
            producer.produce(self.config.commit_log, key=self.tid.encode(),
                             value=str(txid).encode(), partition=self._marker_partition)
            self._commit(producer, timeout)
        except BaseException:
            self.counters["aborted"] += 1
            try:
                producer.abort_transaction(timeout)
            except Exception as exc:  # fatal or fenced: the next init_transactions settles it
                log.warning("Kafka transactional sink %s: abort of txid %d failed: %s", self.tid,
                            txid, exc)
            raise

    def _commit(self, producer: Any, timeout: float) -> None:
        """``commit_transaction``, retried while the client says the error is retriable."""
        ck = require_confluent_kafka()
        deadline = time.monotonic() + timeout
        while True:
            try:
                producer.commit_transaction(timeout)
                return
            except ck.KafkaException as exc:
                err = exc.args[0] if exc.args else None
                if (err is None or not hasattr(err, "retriable") or not err.retriable()
                        or time.monotonic() > deadline):
                    raise

    def _produce_all(self, records: Iterable[Record]) -> None:
        producer = self.producer
        kwargs: dict[str, Any] = {}
        if not self.config.exactly_once:  # a transaction's commit reports failed deliveries
            failed = self._failed

            def on_delivery(err: Any, _msg: Any) -> None:
                if err is not None:
                    failed.append(str(err))
            kwargs["on_delivery"] = on_delivery
        for topic, key, value in records:
            while True:
                try:
                    producer.produce(topic, value=value, key=key, **kwargs)
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.poll(0)

    def _check_delivery(self, left: int) -> None:
        if left:
            raise RuntimeError(f"Kafka sink {self.tid}: {left} records undelivered after "
                               f"{self.config.timeout_secs:.0f} s")
        if self._failed:
            failed, self._failed = self._failed, []
            raise RuntimeError(f"Kafka sink {self.tid}: {len(failed)} records not delivered "
                               f"({failed[0]})")
        if self._errors:
            errors, self._errors = self._errors, []
            log.warning("Kafka sink %s: client errors: %s", self.tid, "; ".join(errors[-5:]))

    def _drop(self) -> None:
        """Forget the producer and what was read: the next commit reopens."""
        self.producer = None
        self.last_txid = None

    def metrics(self) -> dict[str, Any]:
        return {**self.counters, "last_txid": self.last_txid}

    def close(self) -> None:
        producer, self.producer = self.producer, None
        if producer is not None:
            try:
                producer.flush(5.0)
            except Exception as exc:
                log.warning("Kafka transactional sink %s: flush at close failed: %s", self.tid, exc)
