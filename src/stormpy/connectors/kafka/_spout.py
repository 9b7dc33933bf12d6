"""KafkaSpout: storm-kafka-client's spout on the public topology API.

Per spout task: one consumer with manual assignment (partitions spread round robin over the
spout's tasks by task index, refreshed every ``partition_refresh_period_ms``), one
:class:`OffsetManager` per assigned partition and one retry service. ``next_tuple`` runs on the
executor loop and never blocks on the broker: ``consume`` waits at most
:data:`MAX_LOOP_POLL_MS`; metadata, committed-offset lookups and synchronous commits run off the
loop (``run_in_background``) and their results are applied on the loop.

The three guarantees (seed 002):

* ``AT_LEAST_ONCE`` — tuples carry the message id ``(topic, partition, offset)``; every
  ``offset_commit_period_ms`` the contiguous acked prefix of each partition is committed
  synchronously; failed and timed-out tuples are replayed by seeking back, on the retry
  schedule; past ``max_retries`` a record is acked (and reported). A partition with
  ``max_uncommitted_offsets`` uncommitted offsets is paused unless a retriable offset lies within
  the cap. With ``batch_acking`` a poll's new records are one tracked batch per stream
  (``emit_batch``: one tuple tree; ``ack_many`` acks each offset when it completes, a failure
  schedules each offset for a retry; retries go out one tuple each).
* ``AT_MOST_ONCE`` — after each poll the position is committed synchronously, and only then are
  the polled records emitted (untracked); nothing is replayed.
* ``NO_GUARANTEE`` — untracked emits; the position is committed asynchronously on the period.

Commits carry metadata naming the topology id and task, so ``EARLIEST``/``LATEST`` apply only the
first time a topology polls a partition. Broker trouble is logged and reported (topology info)
and retried; it never stops the spout.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from stormpy.connectors.kafka import _assignment as asg
from stormpy.connectors.kafka._client import KafkaConsumerClient
from stormpy.connectors.kafka._config import KafkaConfigError, KafkaSpoutConfig, ProcessingGuarantee
from stormpy.connectors.kafka._emitting import KafkaRecordError, RecordEmitter
from stormpy.connectors.kafka._messages import KafkaSpoutMessageId, TopicPartition
from stormpy.connectors.kafka._offset_manager import OffsetManager
from stormpy.connectors.kafka._retry import RetryExponentialBackoff
from stormpy.connectors.kafka._translator import KafkaTupleListener, PolledRecord
from stormpy.topology import DEFAULT_STREAM, Stream, TopologyContext
from stormpy.topology._imports import import_object

__all__ = ["KafkaRecordError", "KafkaSpout", "MAX_LOOP_POLL_MS"]

log = logging.getLogger("stormpy.connectors.kafka")

#: the longest a poll waits on the executor loop, whatever ``poll_timeout_ms`` says
MAX_LOOP_POLL_MS = 1
#: librdkafka properties the spout sets unless ``consumer_props`` does. The client prefetches in
#: the background and, once its queue holds ``queued.min.messages``, postpones the next fetch by
#: ``fetch.queue.backoff.ms`` (1,000 ms by default), so a spout draining 100k records in less
#: than a second sits idle for the rest of it; the Java client Storm uses fetches in ``poll``.
#: ``reconnect.backoff.ms`` (100 ms by default, doubling up to ``reconnect.backoff.max.ms``):
#: the first metadata request of a new consumer (``open`` reads the topics' partitions) usually
#: waited ~50 ms on it before it was sent; 10 ms is the Java client's order (50 ms)
CONSUMER_DEFAULTS: dict[str, Any] = {"fetch.queue.backoff.ms": 10, "reconnect.backoff.ms": 10}
#: first commit / refresh after open (Storm's TIMER_DELAY_MS)
TIMER_DELAY_SECS = 0.5
#: a commit or partition refresh still running after this long is reported (the broker is
#: probably unreachable; the spout does not poll meanwhile)
STALL_REPORT_SECS = 10.0
#: the metadata lookup in ``open`` (an unknown topic is then a clear error) waits this long
OPEN_METADATA_TIMEOUT_SECS = 2.0


class _Handle:
    """What ``KafkaSpout.of(config)`` returns: the builder takes it in place of a class."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.component_class = KafkaSpout
        self.component_kwargs = {"config": doc}


def _load(setting: str, path: str, base: type) -> Any:
    try:
        obj = import_object(path)
    except ImportError as exc:
        raise KafkaConfigError(f"KafkaSpoutConfig.{setting}", str(exc)) from None
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise KafkaConfigError(f"KafkaSpoutConfig.{setting}", f"{path!r} is not a {base.__name__} subclass")
    return obj


class KafkaSpout(RecordEmitter):
    """Reads Kafka topics with storm-kafka-client's semantics (see the module doc).

    ``builder.set_spout("kafka", KafkaSpout.of(config), parallelism)``, or pass ``KafkaSpout``
    with ``kwargs={"config": config.to_doc()}``.
    """

    #: tests replace this to drive the spout against a stub consumer
    client_factory: Callable[..., Any] = KafkaConsumerClient
    clock: Callable[[], float] = staticmethod(time.monotonic)

    @classmethod
    def of(cls, config: KafkaSpoutConfig) -> _Handle:
        return _Handle(config.to_doc())

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        cfg = KafkaSpoutConfig.from_doc(kwargs.get("config"))
        from stormpy.connectors.kafka._translator import RecordTranslator

        translator = _load("record_translator", cfg.record_translator, RecordTranslator)
        if cfg.tuple_listener is not None:
            _load("tuple_listener", cfg.tuple_listener, KafkaTupleListener)
        return dict(translator.declare_outputs(cfg.record_translator_args))

    def __init__(self, config: Mapping[str, Any] | KafkaSpoutConfig) -> None:
        self.cfg = KafkaSpoutConfig.from_doc(config)

    # -- lifecycle -------------------------------------------------------------------------
    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        from stormpy.connectors.kafka._translator import RecordTranslator

        cfg = self.cfg
        self.context = context
        self.guarantee = cfg.guarantee
        self.at_least_once = self.guarantee is ProcessingGuarantee.AT_LEAST_ONCE
        self.translator = _load("record_translator", cfg.record_translator,
                                RecordTranslator)(**cfg.record_translator_args)
        streams = self.declare_outputs({"config": cfg.to_doc()})
        self._null_values = [None] * len(streams[DEFAULT_STREAM].fields) if DEFAULT_STREAM in streams else []
        listener_cls = (_load("tuple_listener", cfg.tuple_listener, KafkaTupleListener)
                        if cfg.tuple_listener else KafkaTupleListener)
        self.listener = listener_cls()
        self.listener.open(conf, context)
        #: per-emit and per-ack hooks, None when no listener is configured (a call per tuple less)
        self._on_emit = self.listener.on_emit if cfg.tuple_listener else None
        self._on_ack = self.listener.on_ack if cfg.tuple_listener else None
        self.retry = RetryExponentialBackoff.from_doc(cfg.retry, clock=self.clock)
        self.metadata = asg.commit_metadata(context.topology_id, context.task_id)
        context.register_metric("kafkaOffset", self.metrics)
        self.assigned: set[TopicPartition] = set()
        self.managers: dict[TopicPartition, OffsetManager] = {}
        self.emitted: set[KafkaSpoutMessageId] = set()
        self._acked_ids: list[KafkaSpoutMessageId] = []
        self.waiting: deque[PolledRecord] = deque()
        self._held: list[PolledRecord] | None = None
        self._paused: set[TopicPartition] = set()
        self._commits_in_flight = 0
        self._refreshing = False
        self._busy_since: float | None = None
        self._last_marks: dict[TopicPartition, tuple[int, int] | None] = {}
        self.counters = {"bad_records": 0, "max_retries_reached": 0, "commit_failures": 0,
                         "errors": 0, "commits": 0}
        self._poll_secs = min(cfg.poll_timeout_ms, MAX_LOOP_POLL_MS) / 1000.0
        #: records polled as values lists (``consume_rows``) instead of KafkaRecords
        self._rows = self._uses_default_translator()
        client_conf = {"bootstrap.servers": cfg.bootstrap_servers, "group.id": cfg.group_id,
                       "enable.auto.commit": False, "enable.auto.offset.store": False,
                       "client.id": f"stormpy-{context.topology_id}-{context.task_id}",
                       **CONSUMER_DEFAULTS, **cfg.consumer_props}
        self.consumer = self.client_factory(client_conf, self._report,
                                            self._report)
        now = self.clock()
        self._commit_due = now + TIMER_DELAY_SECS
        self._refresh_due = now + cfg.partition_refresh_period_ms / 1000.0
        try:
            found = self._fetch_assignment(frozenset(), OPEN_METADATA_TIMEOUT_SECS)
        except Exception as exc:  # broker unreachable: keep going, refresh off the loop
            self._report(f"partition metadata from {cfg.bootstrap_servers} unavailable "
                                     f"({exc}); retrying every {cfg.partition_refresh_period_ms} ms")
            self._refresh_due = now
            return
        missing, partitions = found[2], found[3]
        if missing:
            raise KafkaConfigError("KafkaSpoutConfig.topics", f"unknown topic(s) {missing} on "
                                   f"{cfg.bootstrap_servers}")
        if not partitions and cfg.topic_pattern is not None:
            raise KafkaConfigError("KafkaSpoutConfig.topic_pattern", f"{cfg.topic_pattern!r} matches no "
                                   f"topic on {cfg.bootstrap_servers}")
        self._apply_assignment(found[0], found[1])

    def activate(self) -> None:
        self._refresh_due = min(self._refresh_due, self.clock())

    def deactivate(self) -> None:
        self._commit_now()

    def close(self) -> None:
        """Commit what is acked (bounded wait), then close the consumer (bounded wait)."""
        if self.at_least_once:
            offsets = self._acked_offsets(self.assigned)
            if offsets:
                self._bounded(lambda: self.consumer.commit_sync(offsets), "final commit")
        elif self.guarantee is ProcessingGuarantee.NO_GUARANTEE:
            offsets = self._position_offsets()
            if offsets:
                self._bounded(lambda: self.consumer.commit_sync(offsets), "final commit")
        self._bounded(self.consumer.close, "consumer close")

    # -- next_tuple --------------------------------------------------------------------------
    def next_tuple(self) -> None:
        now = self.clock()
        # No poll while a job runs on the consumer, and a refresh and a periodic commit never at
        # once: confluent-kafka makes every call on the consumer wait for one in flight on another
        # thread, so a commit or metadata request stuck on an unreachable broker (~45 s for a
        # commit) would otherwise freeze the loop. (An AT_MOST_ONCE commit holding its records may
        # still meet a refresh, so that a revocation drops the held records.)
        busy = self._refreshing or self._commits_in_flight > 0
        if busy or self._held is not None:
            self._note_stall(now)
        else:
            self._busy_since = None
        if now >= self._refresh_due and not busy:
            self._refresh_due = now + self.cfg.partition_refresh_period_ms / 1000.0
            self._start_refresh()
            busy = self._refreshing
        if now >= self._commit_due and not busy and self.guarantee is not ProcessingGuarantee.AT_MOST_ONCE:
            self._commit_due = now + self.cfg.offset_commit_period_ms / 1000.0
            self._commit_now()
            busy = self._commits_in_flight > 0
        if busy and self._busy_since is None:
            self._busy_since = now  # a job started now: a stall counts from here
        if not busy and not self.waiting and self._held is None and self.assigned:
            self._fold_acks()
            pollable, retriable = self._pollable()
            self._poll(pollable, retriable)
        if self.waiting:  # the whole polled batch, one emit_many per stream
            records, self.waiting = self.waiting, deque()
            self._emit_batch(records)

    def _note_stall(self, now: float) -> None:
        """Report a commit or refresh that has been running for STALL_REPORT_SECS or more."""
        if self._busy_since is None:
            self._busy_since = now
        elif now - self._busy_since >= STALL_REPORT_SECS:
            what = "partition refresh" if self._refreshing else "offset commit"
            self._report(f"the {what} on {self.cfg.bootstrap_servers} has not finished "
                                    f"after {now - self._busy_since:.0f} s (broker unreachable?); "
                                    "polling waits for it")

    def _pollable(self) -> tuple[set[TopicPartition], dict[TopicPartition, int]]:
        """Storm's getPollablePartitionsInfo: partitions below the uncommitted cap, or at it with
        a retriable offset within the cap; and the retriable offsets to seek to."""
        if not self.at_least_once:
            return self.assigned, {}
        earliest = self.retry.earliest_retriable_offsets()
        cap = self.cfg.max_uncommitted_offsets
        pollable = set()
        for tp in self.assigned:
            om = self.managers.get(tp)
            if om is None or om.num_uncommitted_offsets < cap:
                pollable.add(tp)
            else:
                retriable = earliest.get(tp)
                if retriable is not None and retriable <= om.nth_uncommitted_offset_after_committed(cap):
                    pollable.add(tp)
        return pollable, {tp: off for tp, off in earliest.items() if tp in pollable}

    def _poll(self, pollable: set[TopicPartition], retriable: Mapping[TopicPartition, int]) -> None:
        for tp, offset in retriable.items():
            self._seek(tp, offset)
        paused = self.assigned - pollable
        if paused != self._paused:  # pausing is sticky: no refetch churn while at the cap
            resumed = sorted(self._paused - paused)
            self.consumer.resume(resumed)
            # a resumed partition may wait for the client's next fetch cycle: seeking to the
            # position starts its fetch at once
            for tp, pos in self.consumer.position(resumed).items():
                if tp not in retriable:
                    self._seek(tp, pos)
            self.consumer.pause(sorted(paused - self._paused))
            self._paused = paused
        if not pollable:
            return
        if self._rows:  # the default translator: each record is its tuple's values already
            records, errors = self.consumer.consume_rows(self.cfg.max_poll_records, self._poll_secs)
        else:
            records, errors = self.consumer.consume(self.cfg.max_poll_records, self._poll_secs)
        for text in errors:
            self._report(text)
        if not records:
            return
        if retriable:
            self._ack_compacted_away(retriable, records)
        if self.guarantee is ProcessingGuarantee.AT_MOST_ONCE:
            self._commit_then_emit(records)
        else:
            self.waiting.extend(records)

    def _ack_compacted_away(self, retriable: Mapping[TopicPartition, int],
                            records: list[PolledRecord]) -> None:
        """Retriable offsets below the first record a seek returned no longer exist: ack them."""
        first: dict[TopicPartition, int] = {}
        for r in records:
            first.setdefault(TopicPartition(r[0], r[1]), r[2])
        for tp, sought in retriable.items():
            got = first.get(tp)
            if got is None or got <= sought:
                continue
            om = self.managers.get(tp)
            for mid in self.retry.scheduled_ids(tp):
                if sought <= mid.offset < got and om is not None and not om.contains(mid) \
                        and mid not in self.emitted:
                    self.retry.remove(mid)
                    self.emitted.add(mid)
                    self.ack(mid)

    # -- ack / fail ----------------------------------------------------------------------------
    def ack(self, msg_id: Any) -> None:
        try:
            self.emitted.remove(msg_id)
        except KeyError:
            self._ack_not_in_flight(msg_id)
            return
        self._acked_ids.append(msg_id)  # folded into the offset managers before they are read
        if self._on_ack is not None:
            self._on_ack(msg_id)

    def ack_many(self, msg_ids: list[Any]) -> None:
        """``ack`` of each id: the runtime's call for a completed batch (``batch_acking``)."""
        emitted = self.emitted
        acked = self._acked_ids
        on_ack = self._on_ack
        for msg_id in msg_ids:
            try:
                emitted.remove(msg_id)
            except KeyError:
                self._ack_not_in_flight(msg_id)
                continue
            acked.append(msg_id)
            if on_ack is not None:
                on_ack(msg_id)

    def _ack_not_in_flight(self, msg_id: Any) -> None:
        """A record acked directly (null tuple, bad record, past max retries), or an id whose
        partition was revoked (ignored), or any ack under the untracked guarantees (none come)."""
        if not self.at_least_once or not getattr(msg_id, "null_tuple", False):
            return
        om = self.managers.get((msg_id[0], msg_id[1]))  # type: ignore[call-overload]
        if om is not None:
            om.add_to_ack_msgs(msg_id[2])
            self.listener.on_ack(msg_id)

    def fail(self, msg_id: Any) -> None:
        if not self.at_least_once or msg_id not in self.emitted:
            return  # untracked guarantee, or its partition was revoked
        msg_id.num_fails += 1
        if not self.retry.schedule(msg_id):
            self.counters["max_retries_reached"] += 1
            log.warning("Kafka spout task %s: %s failed %d times (max_retries %s); acked past it",
                        self.context.task_id, msg_id, msg_id.num_fails, self.retry.max_retries)
            self.listener.on_max_retry_reached(msg_id)
            self.ack(msg_id)
        else:
            self.listener.on_retry(msg_id)
            self.emitted.discard(msg_id)

    # -- metrics -------------------------------------------------------------------------------
    def metrics(self) -> dict[str, Any]:
        """Per partition the latest offset (log end as last seen by the fetcher), the latest
        emitted and the committed offset, the uncommitted count and the lag (log end minus
        committed), plus the spout's counters. Published as the task metric ``kafkaOffset``
        (topology info), sampled at heartbeats; it asks the broker nothing."""
        self._fold_acks()
        parts = {}
        # the consumer would make this wait for a job in flight: the last marks seen meanwhile
        busy = self._refreshing or self._commits_in_flight > 0 or self._held is not None
        for tp in sorted(self.assigned):
            om = self.managers.get(tp)
            marks = self._last_marks.get(tp) if busy else self.consumer.watermarks(tp)
            self._last_marks[tp] = marks
            committed = om.committed_offset if om is not None else None
            parts[str(tp)] = {
                "latest": marks[1] if marks else None,
                "latest_emitted": om.latest_emitted_offset if om is not None else None,
                "committed": committed,
                "uncommitted": om.num_uncommitted_offsets if om is not None else 0,
                "lag": (marks[1] - committed) if marks and committed is not None else None,
            }
        return {"partitions": parts, **self.counters, "in_flight": len(self.emitted),
                "scheduled_retries": len(self.retry)}
