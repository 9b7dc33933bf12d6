"""KinesisSpout: emits the records of a Kinesis stream's shards, at least once.

Build it with ``KinesisSpout.of(config)`` (or ``kwargs={"config": config.to_dict()}``)::

    builder.set_spout("clicks", KinesisSpout.of(KinesisSpoutConfig(name="clicks", stream="c")), 2)

Each ``next_tuple`` moves round-robin to the next shard of the task and emits that shard's first
queued retry, else its next buffered record (trying each shard at most once per call). The message
id is ``"<shard-id>:<sequence-number>"``. Acks advance the shard's checkpoint over the contiguous
acked prefix; fails queue the record for re-emission up to ``max_retries`` times.

Blocking calls (GetRecords, ZooKeeper reads and writes) run on the executor loop, each bounded by
the short timeouts of the config.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from stormpy.connectors.kinesis.checkpoints import ZkCheckpointStore
from stormpy.connectors.kinesis.client import describe, make_client
from stormpy.connectors.kinesis.config import KinesisSpoutConfig
from stormpy.connectors.kinesis.records import message_id, parse_message_id
from stormpy.connectors.kinesis.scheme import load_scheme
from stormpy.connectors.kinesis.state import StateManager
from stormpy.topology.component import Spout
from stormpy.topology.context import TopologyContext
from stormpy.topology.streams import Stream

log = logging.getLogger(__name__)


class _Handle:
    """What ``TopologyBuilder.set_spout`` accepts: the class plus its msgpack-able arguments."""

    def __init__(self, config: KinesisSpoutConfig) -> None:
        self.component_class = KinesisSpout
        self.component_kwargs = {"config": config.to_dict()}


class KinesisSpout(Spout):
    """Reads a Kinesis stream (see the module docstring). Constructor: ``config``, the dict of
    ``KinesisSpoutConfig.to_dict()``."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = KinesisSpoutConfig.from_dict(config)
        self.scheme: Any = None
        self.manager: StateManager | None = None
        self._store: ZkCheckpointStore | None = None
        self.clock = time.monotonic

    @classmethod
    def of(cls, config: KinesisSpoutConfig) -> _Handle:
        """A handle to pass to ``TopologyBuilder.set_spout``."""
        return _Handle(config)

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        config = KinesisSpoutConfig.from_dict(kwargs["config"])
        scheme = load_scheme(config.record_scheme)
        return {"default": Stream(list(scheme.fields), name="default")}

    # --- lifecycle -----------------------------------------------------------------------------
    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        """Connect to ZooKeeper and Kinesis, load the shard list and start the owned shards.
        Unknown stream, unreachable endpoint or ZooKeeper, missing credentials or a corrupt
        checkpoint raise an error naming it."""
        config = self.config
        self.scheme = load_scheme(config.record_scheme)
        client = make_client(config)
        try:
            client.describe_stream_summary(StreamName=config.stream)
        except Exception as exc:
            raise describe(exc, config, "DescribeStreamSummary") from exc
        self._store = ZkCheckpointStore.connect(
            config.zookeeper_connect(conf), config.zookeeper_root(conf), config.name, config.stream,
            config.zookeeper_timeout_ms / 1000.0)
        try:
            self.manager = StateManager(config, client, self._store, context.task_index,
                                        len(context.component_tasks), self.clock)
            self.manager.start()
        except BaseException:
            self._store.close()
            self._store = None
            raise
        log.info("Kinesis spout %s (task index %d): reading stream %s, shards %s", config.name,
                 context.task_index, config.stream, sorted(self.manager.states))

    def deactivate(self) -> None:
        if self.manager is not None:
            self.manager.flush()

    def close(self) -> None:
        if self.manager is not None:
            self.manager.flush()
            self.manager = None
        if self._store is not None:
            self._store.close()
            self._store = None

    # --- emitting ------------------------------------------------------------------------------
    def next_tuple(self) -> None:
        manager = self.manager
        if manager is None:
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
        """Per owned shard: checkpoint, in_flight, retries, counted_out, millis_behind_latest,
        finished (empty before ``open``)."""
        return self.manager.metrics() if self.manager is not None else {}


__all__ = ["KinesisSpout"]
