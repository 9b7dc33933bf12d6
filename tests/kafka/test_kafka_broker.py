"""The tansu broker harness and ``stormpy dev-kafka``."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from stormpy.testing.kafka import BROKER_ENV, KafkaBroker, KafkaBrokerNotFound, find_broker_binary

pytestmark = pytest.mark.kafka


def _consume_all(bootstrap: str, topic: str, partitions: int, expected: int) -> list[tuple[int, int, bytes]]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "harness-test",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, -2) for p in range(partitions)])
    got: list[tuple[int, int, bytes]] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.1)
            if msg is not None and msg.error() is None:
                got.append((msg.partition(), msg.offset(), msg.value()))
    finally:
        consumer.close()
    return got


def test_broker_serves_topics_created_through_the_admin_api(
        kafka_broker: KafkaBroker, kafka_topic: Callable[..., str],
        produce: Callable[..., None]) -> None:
    topic = kafka_topic(3)
    meta = kafka_broker.admin().list_topics(topic, timeout=10)
    assert len(meta.topics[topic].partitions) == 3
    produce(topic, [(i % 3, None, b"r%d" % i) for i in range(9)])
    got = _consume_all(kafka_broker.bootstrap_servers, topic, 3, 9)
    assert sorted(v for _, _, v in got) == sorted(b"r%d" % i for i in range(9))
    assert {(p, o) for p, o, _ in got} == {(p, o) for p in range(3) for o in range(3)}


def test_stop_reaps_the_process_and_removes_the_temp_dir(kafka_broker: KafkaBroker) -> None:
    broker = KafkaBroker().start()
    pid, log_dir = broker.pid, broker.log_path.parent if broker.log_path else None
    assert broker.running and pid is not None and log_dir is not None and log_dir.is_dir()
    broker.stop()
    assert not broker.running
    assert not log_dir.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    broker.stop()  # idempotent


def test_a_bad_override_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(BROKER_ENV, str(tmp_path / "nope"))
    with pytest.raises(KafkaBrokerNotFound, match=BROKER_ENV):
        find_broker_binary()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_dev_kafka_serves_until_sigterm(kafka_broker: KafkaBroker, tmp_path: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from stormpy.cli.main import main; main()", "dev-kafka",
         "--port", str(port), "--log-dir", str(tmp_path / "logs")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        assert f"127.0.0.1:{port}" in line, line
        probe = KafkaBroker(port)  # only for the topic helper: it talks to the dev broker
        probe.create_topic("dev-kafka-probe", 2)
        assert (tmp_path / "logs" / "broker.log").is_file()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
