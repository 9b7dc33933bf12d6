"""KinesisSpout: emits the records of a Kinesis stream's shards, at least once.

Build it with ``KinesisSpout.of(config)`` (or ``kwargs={"config": config.to_doc()}``)::

    builder.set_spout("clicks", KinesisSpout.of(KinesisSpoutConfig(name="clicks", stream="c")), 2)

Each ``next_tuple`` moves round-robin to the next shard of the task and emits that shard's first
queued retry, else its next buffered record (trying each shard at most once per call). The message
id is ``"<shard-id>:<sequence-number>"``. Acks advance the shard's checkpoint over the contiguous
acked prefix; fails queue the record for re-emission up to ``max_retries`` times.

Nothing blocks the executor loop: connecting (the Kinesis client, DescribeStreamSummary, ZooKeeper,
ListShards), GetRecords, the shard-list refresh and checkpoint reads and writes run on the task's
off-loop seam (``run_in_background``) and their results are applied on the loop; only ``close``
writes the last checkpoints synchronously.

``open`` does not contact anything. Setting up runs from ``next_tuple``: until it succeeds the
spout emits nothing, reports every failure (unknown stream, unreachable endpoint, missing
credentials, ZooKeeper unreachable, a corrupt checkpoint) through ``report_error`` — so it shows
in topology info — and retries with exponential backoff up to ``setup_retry_max_ms``. No error
of the stream or the store stops the task; only a missing boto3 does, in ``open``.

Metrics (``context.register_metric``): ``kinesisShards`` (per owned shard: checkpoint, stored
checkpoint, in-flight count, retries, counted-out records, MillisBehindLatest, records buffered,
finished) and ``kinesisSpout`` (ready, setup attempts, last error, error and checkpoint-failure
counts).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from stormpy.connectors._reporting import report_to_task
from stormpy.connectors.kinesis._checkpoints import StateCheckpointStore, ZkCheckpointStore
from stormpy.connectors.kinesis._client import describe, make_client, require_boto3
from stormpy.connectors.kinesis._config import KinesisSpoutConfig
from stormpy.connectors.kinesis._records import message_id, parse_message_id
from stormpy.connectors.kinesis._scheme import load_scheme
from stormpy.connectors.kinesis._state import StateManager
from stormpy.host.backoff import Backoff
from stormpy.topology._component import Spout
from stormpy.topology._context import TopologyContext
from stormpy.topology._state import StateBackend
from stormpy.topology._streams import Stream

log = logging.getLogger(__name__)

#: first wait before setting up again after a failure (doubling up to setup_retry_max_ms)
SETUP_RETRY_MIN_S = 0.5


class _Handle:
    """What ``TopologyBuilder.set_spout`` accepts: the class plus its msgpack-able arguments."""

    def __init__(self, config: KinesisSpoutConfig) -> None:
        self.component_class = KinesisSpout
        self.component_kwargs = {"config": config.to_doc()}


class KinesisSpout(Spout):
    """Reads a Kinesis stream (see the module docstring). Constructor: ``config``, the dict of
    ``KinesisSpoutConfig.to_doc()``."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = KinesisSpoutConfig.from_doc(config)
        self.scheme: Any = None
        self.manager: StateManager | None = None
        self._store: StateCheckpointStore | None = None
        self.clock = time.monotonic

    @classmethod
    def of(cls, config: KinesisSpoutConfig) -> _Handle:
        """A handle to pass to ``TopologyBuilder.set_spout``."""
        return _Handle(config)

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        config = KinesisSpoutConfig.from_doc(kwargs["config"])
        scheme = load_scheme(config.record_scheme)
        return {"default": Stream(list(scheme.fields), name="default")}

    # --- lifecycle -----------------------------------------------------------------------------
    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        """Load the record scheme and register the metrics; KinesisUnavailableError without
        boto3. Connecting is left to ``next_tuple`` (off the loop, retried)."""
        require_boto3()
        self.scheme = load_scheme(self.config.record_scheme)
        self._conf = dict(conf)
        try:  # the topology's state: the checkpoints' home unless the config names a ZooKeeper
            self._state: StateBackend | None = context.state_backend
        except RuntimeError:  # a context made by hand
            self._state = None
        self._task_index = context.task_index
        self._num_tasks = len(context.component_tasks)
        self._closed = False
        self._setting_up = False
        high = self.config.setup_retry_max_ms / 1000.0
        self._setup_backoff = Backoff(min(SETUP_RETRY_MIN_S, high), high)
        self.setup_attempts = 0
        self.errors = 0
        self.last_error: str | None = None
        context.register_metric("kinesisShards", self.metrics)
        context.register_metric("kinesisSpout", self.status)

    def _setup(self) -> None:
        """Connect and load the shard list off the loop; ``_set_up`` takes over on the loop."""
        config, conf = self.config, self._conf
        task_index, num_tasks = self._task_index, self._num_tasks

        def job() -> tuple[StateManager, StateCheckpointStore, list[Any]]:
            client = make_client(config)
            try:
                client.describe_stream_summary(StreamName=config.stream)
            except Exception as exc:
                raise describe(exc, config, "DescribeStreamSummary") from exc
            store: StateCheckpointStore
            if config.checkpoint_store == "redis":
                store = StateCheckpointStore.on_redis(config.redis(conf), config.name,
                                                      config.stream)
            elif (self._state is not None and config.zookeeper_servers is None
                    and config.zookeeper_prefix is None):
                # the topology's state: the worker's ZooKeeper, a LocalCluster's own memory
                store = StateCheckpointStore.on_backend(self._state, config.name, config.stream)
            else:
                store = ZkCheckpointStore.connect(
                    config.zookeeper_connect(conf), config.zookeeper_root(conf), config.name,
                    config.stream, config.zookeeper_timeout_ms / 1000.0)
            try:
                manager = StateManager(config, client, store, task_index, num_tasks, self.clock,
                                       self.run_in_background, self._background_error)
                shards = manager.prepare()
                if self._closed:
                    raise RuntimeError("the spout was closed while setting up")
            except BaseException:
                store.close()
                raise
            return manager, store, shards

        self._setting_up = True
        self.setup_attempts += 1
        self.run_in_background(job, self._set_up)

    def _set_up(self, result: Any, error: BaseException | None) -> None:
        self._setting_up = False
        if error is not None:
            self._setup_backoff.failed_at(self.clock())
            self._report(f"cannot start reading ({error}); retrying in "
                                  f"{self._setup_backoff.last_delay:g}s")
            return
        manager, store, shards = result
        self.manager, self._store = manager, store
        self._setup_backoff.reset()
        self.last_error = None
        manager.begin(shards)
        log.info("Kinesis spout %s (task index %d): reading stream %s, shards %s",
                 self.config.name, self._task_index, self.config.stream, sorted(manager.states))

    def _background_error(self, error: BaseException) -> None:
        """An error of background work while running (on the loop): reported, then retried."""
        self._report(f"{type(error).__name__}: {error}")

    def _report(self, text: str) -> None:
        """Count an error and report it to the task (topology info; logged and throttled there,
        once)."""
        self.errors += 1
        label = f"KinesisSpout {self.config.name!r}"
        self.last_error = f"{label}: {text}"
        report_to_task(self, label, text)

    def deactivate(self) -> None:
        if self.manager is not None:
            self.manager.flush()

    def close(self) -> None:
        """Store the last checkpoints (synchronously, bounded by the store's timeouts) and close
        the store."""
        self._closed = True
        if self.manager is not None:
            self.manager.close()
            self.manager.flush_now()
            self.manager = None
        if self._store is not None:
            self._store.close()
            self._store = None

    # --- emitting ------------------------------------------------------------------------------
    def next_tuple(self) -> None:
        manager = self.manager
        if manager is None:
            if (not self._setting_up and not self._closed
                    and self._setup_backoff.ready(self.clock())):
                self._setup()
            return
        manager.tick()
        for _ in range(manager.active_count):
            state = manager.next_state()
            if state is None or state.tracker is None or state.getter is None:
                return
            tracker = state.tracker
            retry = tracker.record_to_retry() if tracker.should_retry() else None
            record = retry if retry is not None else state.getter.next()
            if record is None:
                if state.getter.finished and not state.done:
                    manager.shard_finished(state)
                continue
            values = self.scheme.deserialize(record)
            tracker.on_emit(record, retry is not None)
            if values is None:
                tracker.on_ack(record.sequence_number)  # the scheme skipped it
                continue
            self.emit(values, msg_id=message_id(record.shard_id, record.sequence_number))
            return

    def ack(self, msg_id: Any) -> None:
        self._done(msg_id, True)

    def fail(self, msg_id: Any) -> None:
        self._done(msg_id, False)

    def _done(self, msg_id: Any, acked: bool) -> None:
        manager = self.manager
        if manager is None:
            return
        shard_id, seq = parse_message_id(msg_id)
        state = manager.states.get(shard_id)
        if state is None or state.tracker is None:
            log.debug("%s for %s: shard not read by this task any more", "ack" if acked else "fail",
                      msg_id)
            return
        if acked:
            state.tracker.on_ack(seq)
        else:
            state.tracker.on_fail(seq)
        if state.getter is not None and state.getter.finished and not state.done:
            manager.shard_finished(state)

    def metrics(self) -> dict[str, dict[str, Any]]:
        """The ``kinesisShards`` metric: per owned shard, checkpoint, stored, in_flight, retries,
        counted_out, millis_behind_latest, buffered, finished (empty until set up)."""
        return self.manager.metrics() if self.manager is not None else {}

    def status(self) -> dict[str, Any]:
        """The ``kinesisSpout`` metric: whether the spout is reading, setup attempts, the latest
        error (None once set up after it), error and checkpoint-failure counts."""
        manager = self.manager
        return {"stream": self.config.stream, "ready": manager is not None,
                "setup_attempts": self.setup_attempts, "last_error": self.last_error,
                "errors": self.errors,
                "checkpoint_failures": manager.checkpoint_failures if manager is not None else 0}


__all__ = ["KinesisSpout"]
