"""An in-memory stand-in for KafkaConsumerClient, and a harness driving a KafkaSpout with it.

The stub keeps commit metadata (tansu drops it), records every commit and emit in one event log,
and can be told to fail metadata lookups or commits (a broker that is down).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from typing import Any

from stormpy.connectors.kafka import (
    KafkaRecord,
    KafkaSpout,
    KafkaSpoutConfig,
    OffsetAndMetadata,
    TopicPartition,
)
from stormpy.connectors.kafka._assignment import OFFSET_BEGINNING, OFFSET_END


class Cluster:
    """The broker side shared by stub consumers: logs and committed offsets per group."""

    def __init__(self) -> None:
        self.logs: dict[TopicPartition, list[KafkaRecord]] = {}
        self.committed: dict[tuple[str, TopicPartition], OffsetAndMetadata] = {}
        self.events: list[tuple[Any, ...]] = []
        self.down = False
        self.fail_commits = False

    def create(self, topic: str, partitions: int) -> None:
        for p in range(partitions):
            self.logs.setdefault(TopicPartition(topic, p), [])

    def produce(self, topic: str, partition: int, value: bytes, key: bytes | None = None,
                offset: int | None = None) -> None:
        log = self.logs[TopicPartition(topic, partition)]
        off = offset if offset is not None else (log[-1].offset + 1 if log else 0)
        log.append(KafkaRecord(topic, partition, off, key, value))


def cluster_with(n: int, partitions: int = 1) -> Cluster:
    """A cluster with topic ``t`` of ``partitions`` partitions holding ``n`` records ``b"v<i>"``,
    record ``i`` in partition ``i % partitions``."""
    c = Cluster()
    c.create("t", partitions)
    for i in range(n):
        c.produce("t", i % partitions, b"v%d" % i)
    return c


class StubConsumer:
    def __init__(self, cluster: Cluster, conf: Mapping[str, Any]) -> None:
        self.cluster = cluster
        self.conf = dict(conf)
        self.group = conf["group.id"]
        self.positions: dict[TopicPartition, int] = {}
        self.paused: set[TopicPartition] = set()
        self.consumed: dict[TopicPartition, int] = {}  # next offset the application consumes
        self.closed = False

    def _check(self) -> None:
        if self.cluster.down:
            raise ConnectionError("broker down")

    def topics(self, timeout: float) -> dict[str, int]:
        self._check()
        out: dict[str, int] = {}
        for tp in self.cluster.logs:
            out[tp.topic] = out.get(tp.topic, 0) + 1
        return out

    def committed(self, partitions: Iterable[TopicPartition], timeout: float) -> dict[TopicPartition, Any]:
        self._check()
        return {tp: self.cluster.committed.get((self.group, tp)) for tp in partitions}

    def _resolve(self, tp: TopicPartition, offset: int) -> int:
        log = self.cluster.logs[tp]
        if offset == OFFSET_BEGINNING:
            return log[0].offset if log else 0
        if offset == OFFSET_END:
            return log[-1].offset + 1 if log else 0
        return offset

    def assign(self, starts: Mapping[TopicPartition, int]) -> None:
        for tp, off in starts.items():
            self.positions[tp] = self._resolve(tp, off)
        self.cluster.events.append(("assign", dict(starts)))

    def unassign(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.positions.pop(tp, None)
            self.consumed.pop(tp, None)

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        self.paused |= set(partitions)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        self.paused -= set(partitions)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.positions[tp] = offset
        self.cluster.events.append(("seek", tp, offset))

    def position(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.consumed[tp] for tp in partitions if tp in self.consumed}

    def consume(self, max_records: int, timeout: float) -> tuple[list[KafkaRecord], list[str]]:
        if self.cluster.down:
            return [], ["fetch error: broker down"]
        out: list[KafkaRecord] = []
        for tp in sorted(self.positions):
            if tp in self.paused:
                continue
            log = self.cluster.logs[tp]
            i = bisect.bisect_left([r.offset for r in log], self.positions[tp])
            for r in log[i:i + max_records - len(out)]:
                out.append(r)
                self.positions[tp] = r.offset + 1
                self.consumed[tp] = r.offset + 1
        return out, []

    def consume_rows(self, max_records: int, timeout: float) -> tuple[list[list[Any]], list[str]]:
        records, errors = self.consume(max_records, timeout)
        return [list(r[:5]) for r in records], errors

    def commit_sync(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> dict[TopicPartition, str]:
        self._check()
        if self.cluster.fail_commits:
            raise ConnectionError("commit failed: broker down")
        for tp, oam in offsets.items():
            self.cluster.committed[(self.group, tp)] = oam
        self.cluster.events.append(("commit_sync", {tp: o.offset for tp, o in offsets.items()}))
        return {}

    def commit_async(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        for tp, oam in offsets.items():
            self.cluster.committed[(self.group, tp)] = oam
        self.cluster.events.append(("commit_async", {tp: o.offset for tp, o in offsets.items()}))

    def watermarks(self, tp: TopicPartition) -> tuple[int, int] | None:
        log = self.cluster.logs.get(tp)
        return (log[0].offset, log[-1].offset + 1) if log else None

    def close(self) -> None:
        self.closed = True


class Context:
    """Just what the spout reads from a TopologyContext."""

    def __init__(self, topology_id: str, task_id: int, tasks: list[int]) -> None:
        self.topology_id = topology_id
        self.task_id = task_id
        self.component_tasks = tasks
        self.task_index = tasks.index(task_id)
        self.metrics: dict[str, Any] = {}

    def register_metric(self, name: str, fn: Any) -> None:
        self.metrics[name] = fn


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Harness:
    """One KafkaSpout task on a stub consumer; background jobs run inline; emits are recorded."""

    def __init__(self, cluster: Cluster, topology_id: str = "topo-1", task_id: int = 1,
                 tasks: list[int] | None = None, **settings: Any) -> None:
        doc = {"bootstrap_servers": "stub:9092", "group_id": "g", "topics": ["t"], **settings}
        self.cluster = cluster
        self.clock = Clock()
        self.spout = KafkaSpout(KafkaSpoutConfig.from_doc(doc).to_doc())
        self.spout.clock = self.clock  # type: ignore[assignment]
        self.spout.client_factory = self._factory  # type: ignore[assignment]
        self.emits: list[tuple[list[Any], Any, str]] = []
        #: per emit_batch call: its message ids (None: untracked)
        self.batches: list[list[Any] | None] = []
        self.errors: list[str] = []
        self.consumer: StubConsumer | None = None
        self.spout.emit = self._emit  # type: ignore[method-assign]
        self.spout.emit_many = self._emit_many  # type: ignore[method-assign]
        self.spout.emit_batch = self._emit_batch  # type: ignore[method-assign]
        self.spout.report_error = self.errors.append  # type: ignore[method-assign]
        self.spout.run_in_background = self._inline  # type: ignore[method-assign]
        self.context = Context(topology_id, task_id, tasks or [task_id])

    def _factory(self, conf: Mapping[str, Any], on_error: Any, on_commit_error: Any) -> StubConsumer:
        self.consumer = StubConsumer(self.cluster, conf)
        return self.consumer

    def _emit(self, values: list[Any], msg_id: Any = None, stream: str = "default") -> list[int]:
        self.emits.append((values, msg_id, stream))
        self.cluster.events.append(("emit", values[2] if len(values) > 2 else values))
        return [1]

    def _emit_many(self, values_list: list[list[Any]], msg_ids: Any = None,
                   stream: str = "default") -> None:
        for i, values in enumerate(values_list):
            self._emit(values, None if msg_ids is None else msg_ids[i], stream)

    def _emit_batch(self, values_list: list[list[Any]], msg_ids: Any = None,
                    stream: str = "default") -> list[list[int]]:
        self.batches.append(None if msg_ids is None else list(msg_ids))
        self._emit_many(values_list, msg_ids, stream)
        return [[1] for _ in values_list]

    @staticmethod
    def _inline(fn: Any, on_done: Any) -> None:
        try:
            result = fn()
        except Exception as exc:
            on_done(None, exc)
        else:
            on_done(result, None)

    def open(self) -> Harness:
        self.spout.open({}, self.context)  # type: ignore[arg-type]
        return self

    def run(self, rounds: int = 50) -> list[tuple[list[Any], Any, str]]:
        """Call next_tuple ``rounds`` times; return the tuples emitted meanwhile."""
        start = len(self.emits)
        for _ in range(rounds):
            self.spout.next_tuple()
        return self.emits[start:]

    def offsets(self, emitted: list[tuple[list[Any], Any, str]]) -> list[int]:
        return [values[2] for values, _, _ in emitted]
