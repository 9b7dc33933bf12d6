"""Fixtures for the Kafka connector tests: one real Kafka-protocol broker per test session.

* ``kafka_broker`` (session): a running :class:`stormpy.testing.kafka.KafkaBroker` (tansu, in
  memory, 127.0.0.1, free port). When the broker binary or confluent-kafka is missing, tests using
  it are skipped, or fail with the install hint when the environment variable ``CI`` is ``true``.
* ``kafka_topic`` (function): a factory ``kafka_topic(partitions=1) -> name`` creating a fresh
  topic (unique name per call) through the admin API.
* ``produce`` (function): ``produce(topic, [(partition, key, value), ...])`` writes records
  synchronously (flushes before returning).

When a test using ``kafka_broker`` fails, the tail of the broker log is attached to the report.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest

from stormpy.testing.kafka import INSTALL_HINT, KafkaBroker, KafkaBrokerNotFound


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        hint = "" if INSTALL_HINT in reason else f"; {INSTALL_HINT}"
        pytest.fail(f"the Kafka test broker is required in CI: {reason}{hint}", pytrace=False)
    pytest.skip(f"Kafka test broker unavailable: {reason}")


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[KafkaBroker]:
    """One tansu broker for the whole test session."""
    try:
        import confluent_kafka  # noqa: F401
    except ImportError as exc:
        _unavailable(f"confluent-kafka is not installed ({exc})")
    broker = KafkaBroker()
    try:
        broker.start()
    except KafkaBrokerNotFound as exc:
        _unavailable(str(exc))
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def kafka_topic(request: pytest.FixtureRequest, kafka_broker: KafkaBroker) -> Callable[..., str]:
    """Create a fresh topic named after the test: ``kafka_topic(partitions=1)``."""
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)[:60]

    def create(partitions: int = 1) -> str:
        return kafka_broker.create_topic(f"{base}-{uuid.uuid4().hex[:8]}", partitions)

    return create


@pytest.fixture
def produce(kafka_broker: KafkaBroker) -> Iterator[Callable[[str, Iterable[tuple[int, Any, Any]]], None]]:
    """``produce(topic, [(partition, key, value), ...])``: write records and wait for delivery."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers, "linger.ms": 1})

    def send(topic: str, records: Iterable[tuple[int, Any, Any]]) -> None:
        errors: list[Any] = []
        for partition, key, value in records:
            producer.produce(topic, key=key, value=value, partition=partition,
                             on_delivery=lambda err, _msg: errors.append(err) if err else None)
            producer.poll(0)
        remaining = producer.flush(30)
        assert remaining == 0 and not errors, f"produce to {topic}: {remaining} undelivered, {errors}"

    yield send
    producer.flush(5)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report = yield
    if report.failed and call.when == "call" and "kafka_broker" in getattr(item, "fixturenames", ()):
        broker = item.funcargs.get("kafka_broker") if hasattr(item, "funcargs") else None
        if isinstance(broker, KafkaBroker):
            report.sections.append(("Kafka broker log tail", broker.log_tail(60)))
    return report
