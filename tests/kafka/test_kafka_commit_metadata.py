"""The commit metadata of the Kafka spout on a real Apache Kafka broker, which (unlike the tansu
stand-in) keeps it: every commit carries ``{"topologyId", "taskId", "threadName"}``, and a
partition's first poll resumes a commit made by the same topology even with ``EARLIEST``, while
another topology starts over with ``EARLIEST`` and resumes with ``UNCOMMITTED_*``.

The spout runs in this process, driven by hand (``open``, ``next_tuple``, ``ack``, ``close``) under
fixed topology ids, which a LocalCluster does not give (each submission gets a new id); its
background jobs run inline and its emits are recorded.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from stormpy.connectors.kafka import KafkaSpout, KafkaSpoutConfig
from stormpy.testing import wait_for
from stormpy.testing._kafka import KafkaBroker

pytestmark = pytest.mark.kafka


class Context:
    """What the spout reads from a TopologyContext."""

    def __init__(self, topology_id: str, task_id: int) -> None:
        self.topology_id = topology_id
        self.task_id = task_id
        self.component_tasks = [task_id]
        self.task_index = 0

    def register_metric(self, name: str, fn: Any) -> None:
        pass


class DrivenSpout:
    """One KafkaSpout task under ``topology_id``, driven by hand; emits are recorded."""

    def __init__(self, broker: KafkaBroker, topic: str, group: str, topology_id: str,
                 strategy: str) -> None:
        config = KafkaSpoutConfig(bootstrap_servers=broker.bootstrap_servers, group_id=group,
                                  topics=[topic], first_poll_offset_strategy=strategy,
                                  consumer_props={"fetch.wait.max.ms": 10, "fetch.error.backoff.ms": 10})
        self.spout = KafkaSpout(config.to_doc())
        self.emits: list[tuple[list[Any], Any]] = []
        self.errors: list[str] = []
        self.spout.emit = self._emit  # type: ignore[method-assign]
        self.spout.emit_many = self._emit_many  # type: ignore[method-assign]
        self.spout.emit_batch = self._emit_batch  # type: ignore[method-assign]
        self.spout.report_error = self.errors.append  # type: ignore[method-assign]
        self.spout.run_in_background = self._inline  # type: ignore[method-assign]
        self.spout.open({}, Context(topology_id, 7))  # type: ignore[arg-type]

    def _emit(self, values: list[Any], msg_id: Any = None, stream: str = "default") -> list[int]:
        self.emits.append((list(values), msg_id))
        return [1]

    def _emit_many(self, values_list: list[list[Any]], msg_ids: Any = None, stream: str = "default") -> None:
        for i, values in enumerate(values_list):
            self._emit(values, None if msg_ids is None else msg_ids[i], stream)

    def _emit_batch(self, values_list: list[list[Any]], msg_ids: Any = None,
                    stream: str = "default") -> list[list[int]]:
        self._emit_many(values_list, msg_ids, stream)
        return [[1] for _ in values_list]

    @staticmethod
    def _inline(fn: Callable[[], Any], on_done: Callable[[Any, BaseException | None], None]) -> None:
        try:
            result = fn()
        except Exception as exc:
            on_done(None, exc)
        else:
            on_done(result, None)

    def read(self, count: int) -> list[int]:
        """Call next_tuple until ``count`` records were emitted; their offsets."""
        def enough() -> bool:
            self.spout.next_tuple()
            return len(self.emits) >= count

        wait_for(enough, timeout=60, what=f"{count} records emitted (errors: {self.errors})")
        return [values[2] for values, _ in self.emits]

    def ack_all(self) -> None:
        for _, msg_id in self.emits:
            self.spout.ack(msg_id)

    def close(self) -> None:
        self.spout.close()


def committed_with_metadata(broker: KafkaBroker, group: str, topic: str) -> tuple[int, str | None]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group,
                  "enable.auto.commit": False})
    try:
        (tp,) = c.committed([TopicPartition(topic, 0)], timeout=10)
        return tp.offset, tp.metadata
    finally:
        c.close()


def test_commits_carry_the_topology_and_earliest_resumes_only_its_own_commits(
        kafka_broker: KafkaBroker, kafka_topic: Callable[..., str], produce: Callable[..., None]) -> None:
    topic, group = kafka_topic(1), "metadata-group"
    produce(topic, [(0, None, b"v%d" % i) for i in range(6)])

    first = DrivenSpout(kafka_broker, topic, group, "topo-A", "EARLIEST")
    assert first.read(6) == [0, 1, 2, 3, 4, 5]
    first.emits = first.emits[:4]
    first.ack_all()   # offsets 0-3 acked: the final commit is offset 4
    first.close()
    offset, metadata = committed_with_metadata(kafka_broker, group, topic)
    assert offset == 4
    doc = json.loads(metadata or "null")
    assert doc["topologyId"] == "topo-A" and doc["taskId"] == 7 and doc["threadName"]

    # the same topology again: its own commit is resumed even with EARLIEST
    same = DrivenSpout(kafka_broker, topic, group, "topo-A", "EARLIEST")
    assert same.read(2) == [4, 5]
    same.close()
    # another topology: EARLIEST starts over, UNCOMMITTED_* resume at the committed offset
    other = DrivenSpout(kafka_broker, topic, group, "topo-B", "EARLIEST")
    assert other.read(6) == [0, 1, 2, 3, 4, 5]
    other.close()
    for strategy in ("UNCOMMITTED_EARLIEST", "UNCOMMITTED_LATEST"):
        resumed = DrivenSpout(kafka_broker, topic, group, f"topo-{strategy}", strategy)
        assert resumed.read(2) == [4, 5]
        resumed.close()
    # none of them acked anything: the commit and its metadata are still topo-A's
    offset, metadata = committed_with_metadata(kafka_broker, group, topic)
    assert offset == 4 and json.loads(metadata or "null")["topologyId"] == "topo-A"
