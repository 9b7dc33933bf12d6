"""Fixtures for the Kafka connector tests: one real Apache Kafka broker per test session.

* ``kafka_broker`` (session): a running :class:`stormpy.testing._kafka.ApacheKafkaBroker` (a
  single-node KRaft broker on 127.0.0.1, free ports, data in a temp dir, the quick-start JVM
  options; ``make kafka`` installs it into ``.tools/kafka``). When Java, the Kafka jars or
  confluent-kafka are missing, tests using it are skipped, or FAIL with the install hint when the
  environment variable ``CI`` is ``true``.
* ``spare_broker`` (function): a factory ``spare_broker(port=0) -> ApacheKafkaBroker`` of extra
  brokers, NOT started (a test starts, kills and restarts them); each is stopped and its directory
  removed at the end of the test. Needs what ``kafka_broker`` needs.
* ``kafka_topic`` (function): a factory ``kafka_topic(partitions=1) -> name`` creating a fresh
  topic (unique name per call) through the admin API.
* ``produce`` (function): ``produce(topic, [(partition, key, value), ...])`` writes records
  synchronously (flushes before returning).

When a test using a broker fails, the tail of each broker's log is attached to the report.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NoReturn

import pytest

from parts_kit import unavailable
from stormpy.testing._kafka import (
    KAFKA_INSTALL_HINT,
    QUICK_START_JVM_OPTIONS,
    ApacheKafkaBroker,
    KafkaBroker,
    KafkaBrokerNotFound,
    apache_kafka_missing,
)

_SPARES: list[ApacheKafkaBroker] = []


def _unavailable(reason: str) -> NoReturn:
    unavailable("Apache Kafka", reason, KAFKA_INSTALL_HINT)


def _require_kafka() -> None:
    try:
        import confluent_kafka  # noqa: F401
    except ImportError as exc:
        _unavailable(f"confluent-kafka is not installed ({exc})")
    missing = apache_kafka_missing()
    if missing is not None:
        _unavailable(missing)


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[ApacheKafkaBroker]:
    """One Apache Kafka broker for the whole test session."""
    _require_kafka()
    broker = ApacheKafkaBroker(jvm_options=QUICK_START_JVM_OPTIONS)
    try:
        broker.start()
    except KafkaBrokerNotFound as exc:
        _unavailable(str(exc))
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def spare_broker() -> Iterator[Callable[..., ApacheKafkaBroker]]:
    """``spare_broker(port=0)``: another Apache Kafka broker, not started; stopped after the test."""
    _require_kafka()
    made: list[ApacheKafkaBroker] = []

    def make(port: int = 0) -> ApacheKafkaBroker:
        broker = ApacheKafkaBroker(port, jvm_options=QUICK_START_JVM_OPTIONS)
        made.append(broker)
        _SPARES.append(broker)
        return broker

    try:
        yield make
    finally:
        # every broker is stopped even when one fails to; then the first failure is raised
        errors: list[BaseException] = []
        for broker in made:
            try:
                broker.stop()
            except Exception as exc:  # noqa: BLE001 - raised below, after the others
                errors.append(exc)
            finally:
                _SPARES.remove(broker)
        if errors:
            raise errors[0]


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
    if report.failed and call.when == "call":
        funcargs = getattr(item, "funcargs", {})
        broker = funcargs.get("kafka_broker")
        if isinstance(broker, KafkaBroker):
            report.sections.append(("Kafka broker log tail", broker.log_tail(60)))
        for spare in _SPARES:
            report.sections.append((f"spare Kafka broker ({spare.work_dir}) log tail", spare.log_tail(60)))
    return report
