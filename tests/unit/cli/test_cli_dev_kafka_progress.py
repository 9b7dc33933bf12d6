"""``stormpy dev-kafka`` says what it is doing while the broker starts (through click's runner,
with a broker that is slow to start): a line before it starts, progress lines while it starts,
and how long it took once it serves."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from stormpy.cli import dev_cmds
from stormpy.cli.main import cli
from stormpy.local import _dev_kafka as dev_kafka
from stormpy.testing import wait_for


class SlowBroker:
    """Starts only once it has been reported as still starting (a slow Apache Kafka)."""

    kind = "the Apache Kafka broker"
    flavour = "Apache Kafka 9.9 (KRaft)"
    bootstrap_servers = "127.0.0.1:19092"
    log_path = Path("/tmp/dev-kafka/broker.log")
    returncode = None

    def __init__(self, progressed: threading.Event) -> None:
        self.progressed = progressed
        self.running = False

    def start(self) -> SlowBroker:
        wait_for(self.progressed.is_set, 60, "a progress line while the broker starts")
        self.running = True
        return self

    def stop(self) -> None:
        self.running = False


def test_dev_kafka_says_what_it_does_while_the_broker_starts(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    progressed, stop = threading.Event(), threading.Event()
    monkeypatch.setattr(dev_kafka, "PROGRESS_SECS", 0.05)
    monkeypatch.setattr(dev_kafka, "choose_broker",
                        lambda *_a, **_k: (SlowBroker(progressed), None))
    run = dev_kafka.run_dev_kafka

    def run_once(*args: Any, echo: Any, **kwargs: Any) -> int:
        def spy(text: str) -> None:
            if text.startswith("still starting"):
                progressed.set()
            echo(text)
        return run(*args, echo=spy, stop_event=stop, on_ready=lambda _broker: stop.set(), **kwargs)
    monkeypatch.setattr(dev_cmds, "run_dev_kafka", run_once)
    res = CliRunner().invoke(cli, ["dev-kafka", "--port", "19092", "--log-dir", str(tmp_path)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == ("starting the Apache Kafka broker on 127.0.0.1:19092; waiting until it "
                        "serves...")
    assert lines[1].startswith("still starting the Apache Kafka broker: ")
    serving = next(line for line in lines if "serving on" in line)
    assert serving.startswith("Kafka broker Apache Kafka 9.9 (KRaft) serving on 127.0.0.1:19092 "
                              "(ready after ")
