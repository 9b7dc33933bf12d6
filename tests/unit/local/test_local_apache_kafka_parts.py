"""Apache Kafka's KRaft broker without a JVM: the Kafka home lookup, the cluster id, and a
stand-in ``java`` (a small Python script) run through the format step and the server start, with
the exact command lines and ``server.properties`` written, the probe's cluster id check (a
stand-in admin client), a crash and a restart on the same ports and data."""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import confluent_kafka.admin
import pytest

import stormpy
from stormpy.host.ports import free_port
from stormpy.local import _apache_kafka as ak
from stormpy.local._apache_kafka import (
    KAFKA_HOME_ENV,
    KAFKA_INSTALL_HINT,
    QUICK_START_JVM_OPTIONS,
    ApacheKafkaBroker,
    apache_kafka_missing,
    find_kafka_home,
    new_cluster_id,
)
from stormpy.local._kafka_broker import KafkaBrokerNotFound, KafkaBrokerStartError
from stormpy.testing import wait_for

HINT = ("install Apache Kafka with `make kafka` (Maven copies org.apache.kafka:kafka_2.13 and its "
        "dependencies into .tools/kafka; `make test` does it too), or set $STORMPY_KAFKA_HOME to a "
        "directory whose libs/ holds the Kafka jars; Java 17+ is needed")

#: a stand-in ``java``: records its argv and cwd; as Kafka's StorageTool it writes
#: ``meta.properties`` with the cluster id into ``log.dirs`` (STAND_IN_FORMAT=fail: exits 3,
#: hang: never ends); as ``kafka.Kafka`` it listens on the PLAINTEXT listener, says so, and on
#: SIGTERM logs a controlled shutdown and exits (STAND_IN_SERVER=exit: exits 5 at once)
STAND_IN_JAVA = """\
import json, os, signal, socket, sys, time
argv = sys.argv[1:]
with open(os.environ["STAND_IN_RECORD"], "a") as f:
    f.write(json.dumps({"argv": argv, "cwd": os.getcwd()}) + "\\n")
def props(path):
    return dict(line.split("=", 1) for line in open(path).read().splitlines() if "=" in line)
if "kafka.tools.StorageTool" in argv:
    mode = os.environ.get("STAND_IN_FORMAT", "ok")
    print("stand-in StorageTool " + mode, flush=True)
    if mode == "fail":
        print("format error: bad config", file=sys.stderr, flush=True)
        sys.exit(3)
    if mode == "hang":
        time.sleep(60)
    cluster = argv[argv.index("-t") + 1]
    data = props(argv[argv.index("-c") + 1])["log.dirs"]
    os.makedirs(data, exist_ok=True)
    with open(os.path.join(data, "meta.properties"), "w") as f:
        f.write("version=1\\nnode.id=1\\ncluster.id=" + cluster + "\\n")
    sys.exit(0)
settings = props(argv[-1])
if os.environ.get("STAND_IN_SERVER") == "exit":
    print("kafka.Kafka failed: bad settings", flush=True)
    sys.exit(5)
def shutdown(*_):
    print("controlled shutdown", flush=True)
    os._exit(0)
signal.signal(signal.SIGTERM, shutdown)
host, port = settings["listeners"].split(",")[0].split("//", 1)[1].rsplit(":", 1)
listener = socket.create_server((host, int(port)))
print("[KafkaRaftServer nodeId=1] Kafka Server started", flush=True)
while True:
    conn, _ = listener.accept()
    conn.close()
"""

TEST_SETTINGS = [
    "num.partitions=1", "default.replication.factor=1", "auto.create.topics.enable=true",
    "offsets.topic.replication.factor=1", "offsets.topic.num.partitions=4",
    "transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1",
    "transaction.state.log.num.partitions=4", "share.coordinator.state.topic.replication.factor=1",
    "share.coordinator.state.topic.min.isr=1", "group.initial.rebalance.delay.ms=0",
    "log.segment.bytes=1048576", "log.cleaner.dedupe.buffer.size=4194304", "num.network.threads=2",
    "num.io.threads=4", "num.recovery.threads.per.data.dir=1", "broker.heartbeat.interval.ms=1000",
    "broker.session.timeout.ms=5000",
]


def _home(root: Path, *jars: str, log4j: bool = True) -> Path:
    (root / "libs").mkdir(parents=True)
    for jar in jars:
        (root / "libs" / jar).write_bytes(b"")
    if log4j:
        (root / "config").mkdir()
        (root / "config" / "log4j2.properties").write_text("rootLogger.level = INFO\n")
    return root


@pytest.fixture
def kafka_home(tmp_path: Path) -> Path:
    return _home(tmp_path / "kafka", "kafka-clients-4.4.0.jar", "kafka_2.13-4.4.0.jar")


@pytest.fixture
def java(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "bin" / "java"
    path.parent.mkdir()
    path.write_text(f"#!{sys.executable}\n{STAND_IN_JAVA}")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("STAND_IN_RECORD", str(tmp_path / "launches.jsonl"))
    return path


def _launches(tmp_path: Path) -> list[dict[str, Any]]:
    record = tmp_path / "launches.jsonl"
    return [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []


class Probe:
    """A stand-in ``AdminClient``: answers a metadata request with ``answer(broker)``."""

    def __init__(self) -> None:
        self.confs: list[dict[str, Any]] = []
        self.timeouts: list[float] = []
        self.broker: ApacheKafkaBroker | None = None
        self.failures = 0
        self.cluster_id: str | None = None  # None: the broker's own
        self.brokers: dict[int, Any] = {1: object()}

    def client(self, conf: dict[str, Any]) -> Any:
        self.confs.append(conf)
        probe = self

        class Client:
            def list_topics(self, timeout: float) -> Any:
                probe.timeouts.append(timeout)
                assert probe.broker is not None
                if conf["bootstrap.servers"] != probe.broker.bootstrap_servers:
                    raise confluent_kafka.KafkaException("no broker at " + conf["bootstrap.servers"])
                if probe.failures > 0:
                    probe.failures -= 1
                    raise confluent_kafka.KafkaException("broker transport failure")
                assert probe.broker is not None
                return type("Meta", (), {"cluster_id": probe.cluster_id or probe.broker.cluster_id,
                                         "brokers": probe.brokers})()
        return Client()


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> Probe:
    stand_in = Probe()
    monkeypatch.setattr(confluent_kafka.admin, "AdminClient", stand_in.client)
    return stand_in


def _broker(probe: Probe, **kwargs: Any) -> ApacheKafkaBroker:
    # a stand-in serves within a second: a broken probe fails in 20 s, not the default 120
    kwargs.setdefault("startup_timeout_secs", 20.0)
    broker = ApacheKafkaBroker(**kwargs)
    probe.broker = broker
    return broker


def _jvm(java: Path, home: Path, work: Path, heap: str, options: list[str], main: str,
         *args: str, log4j: bool = True) -> list[str]:
    logging = [f"-Dlog4j2.configurationFile={home / 'config' / 'log4j2.properties'}"] if log4j else []
    return [heap, *options, "-XX:-UsePerfData", "-Djava.awt.headless=true", f"-Dkafka.logs.dir={work}",
            *logging, "-cp", f"{home / 'libs'}/*", main, *args]


# -- the cluster id, the Kafka home, Java ---------------------------------------------------------

def test_a_cluster_id_is_a_random_uuid_in_kafkas_22_character_form() -> None:
    ids = {new_cluster_id() for _ in range(50)}
    assert len(ids) == 50
    for text in ids:
        assert len(text) == 22 and not text.startswith("-") and "=" not in text
        assert len(base64.urlsafe_b64decode(text + "==")) == 16


def test_a_cluster_id_never_starts_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    dashed = uuid.UUID(bytes=b"\xf8" + bytes(15))  # "-" in URL-safe base64
    plain = uuid.UUID(bytes=b"\x10" + bytes(14) + b"\x01")
    draws = iter([dashed, dashed, plain])
    monkeypatch.setattr(ak.uuid, "uuid4", lambda: next(draws))
    assert new_cluster_id() == base64.urlsafe_b64encode(plain.bytes).decode()[:22]
    assert new_cluster_id.__module__ == "stormpy.local._apache_kafka"


def test_the_checkouts_kafka_home_is_its_tools_directory() -> None:
    root = Path(stormpy.__file__).resolve().parents[2]
    assert ak._source_checkout_home() == root / ".tools" / "kafka"


def test_the_kafka_home_lookup_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert KAFKA_HOME_ENV == "STORMPY_KAFKA_HOME" and KAFKA_INSTALL_HINT == HINT
    checkout = _home(tmp_path / "checkout" / ".tools" / "kafka", "kafka_2.13-1.0.jar")
    monkeypatch.setattr(ak, "_source_checkout_home", lambda: checkout)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv(KAFKA_HOME_ENV, raising=False)
    assert find_kafka_home() == checkout
    local = _home(work / ".tools" / "kafka", "kafka_2.13-2.0.jar")
    assert find_kafka_home() == local
    env = _home(tmp_path / "env-kafka", "kafka_2.13-3.0.jar")
    monkeypatch.setenv(KAFKA_HOME_ENV, str(tmp_path / "link" / ".." / "env-kafka"))
    (tmp_path / "link").mkdir()
    assert find_kafka_home() == env  # resolved
    given = _home(tmp_path / "given", "kafka_2.13-4.0.jar")
    assert find_kafka_home(given) == given
    assert find_kafka_home(str(given)) == given
    monkeypatch.setenv(KAFKA_HOME_ENV, "")  # empty counts as unset
    assert find_kafka_home() == local


def test_a_missing_kafka_home_names_every_place_looked_at(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    checkout = _home(tmp_path / "checkout", "kafka-clients-4.4.0.jar")  # no broker jar
    monkeypatch.setattr(ak, "_source_checkout_home", lambda: checkout)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(KAFKA_HOME_ENV, raising=False)
    with pytest.raises(KafkaBrokerNotFound) as caught:
        find_kafka_home()
    assert str(caught.value) == ("Apache Kafka was not found (no kafka_2.13-*.jar in "
                                 f"{tmp_path}/.tools/kafka/libs, {checkout}/libs); {HINT}")
    monkeypatch.setenv(KAFKA_HOME_ENV, str(tmp_path / "env"))
    with pytest.raises(KafkaBrokerNotFound) as caught:
        find_kafka_home()
    assert str(caught.value) == ("Apache Kafka was not found (no kafka_2.13-*.jar in "
                                 f"{tmp_path}/env/libs); {HINT}")
    _home(tmp_path / ".tools" / "kafka", "kafka_2.13-9.jar")  # not looked at: the variable is set
    with pytest.raises(KafkaBrokerNotFound):
        find_kafka_home()
    with pytest.raises(KafkaBrokerNotFound) as caught:
        find_kafka_home(tmp_path / "given")
    assert str(caught.value) == ("Apache Kafka was not found (no kafka_2.13-*.jar in "
                                 f"{tmp_path}/given/libs); {HINT}")


def test_why_apache_kafka_cannot_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kafka_home: Path,
                                     java: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    assert apache_kafka_missing(tmp_path / "nowhere") == (
        f"Apache Kafka was not found (no kafka_2.13-*.jar in {tmp_path}/nowhere/libs); {HINT}")
    assert apache_kafka_missing(kafka_home) == (
        f"Java was not found (JAVA_HOME={tmp_path}/no-jdk has no executable bin/java); {HINT}")
    monkeypatch.setenv("JAVA_HOME", str(java.parent.parent))
    assert apache_kafka_missing(kafka_home) is None
    monkeypatch.setenv(KAFKA_HOME_ENV, str(kafka_home))
    assert apache_kafka_missing() is None


def test_the_version_is_the_newest_broker_jars(tmp_path: Path) -> None:
    home = _home(tmp_path / "k", "kafka_2.13-3.9.1.jar", "kafka_2.13-4.4.0.jar", "kafka-clients-5.0.jar")
    assert ak.kafka_version(home) == "4.4.0"
    assert ak.kafka_version(_home(tmp_path / "empty")) == "?"


def test_the_broker_defaults(tmp_path: Path) -> None:
    broker = ApacheKafkaBroker()
    assert (broker.host, broker.startup_timeout_secs, broker.die_with_parent, broker.heap_mb) == (
        "127.0.0.1", 120.0, True, 512)
    assert broker.jvm_options == ["-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                                  "-XX:InitiatingHeapOccupancyPercent=35"]
    assert broker.settings == {}
    assert (broker.home, broker.version, broker.cluster_id, broker.controller_port) == (None, "?", None, None)
    assert broker.flavour == "Apache Kafka ? (KRaft)"
    assert broker.data_dir is None and broker._requested_work_dir is None
    with pytest.raises(RuntimeError, match="known only after start"):
        _ = broker.port  # a free port, picked by start()
    assert QUICK_START_JVM_OPTIONS == ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
    assert ApacheKafkaBroker.kind == "the Apache Kafka broker"
    broker = ApacheKafkaBroker(7, host="h", log_dir=tmp_path, startup_timeout_secs=5.0, die_with_parent=False)
    assert (broker.port, broker.host, broker._requested_work_dir, broker.startup_timeout_secs,
            broker.die_with_parent) == (7, "h", tmp_path, 5.0, False)


def test_without_java_the_start_is_refused_naming_why(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                      kafka_home: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    broker = ApacheKafkaBroker(kafka_home=kafka_home)
    with pytest.raises(KafkaBrokerNotFound) as caught:
        broker.start()
    assert str(caught.value) == (
        f"Java was not found (JAVA_HOME={tmp_path}/no-jdk has no executable bin/java); {HINT}")
    assert broker.work_dir is None  # nothing was created
    broker = ApacheKafkaBroker(kafka_home=tmp_path / "nowhere", java=sys.executable)
    with pytest.raises(KafkaBrokerNotFound, match="^Apache Kafka was not found"):
        broker.start()


# -- a start: the format step, server.properties, the server's command line ----------------------

def test_a_start_formats_the_storage_writes_the_settings_and_runs_the_server(
        probe: Probe, tmp_path: Path, kafka_home: Path, java: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(java.parent.parent))  # found through find_java
    broker = _broker(probe, kafka_home=kafka_home)
    with broker:
        work, port = broker.work_dir, broker.port
        assert work is not None and work.name.startswith("stormpy-kafka-")
        assert broker.log_path == work / "broker.log"
        assert broker.data_dir == work / "data"
        assert broker.version == "4.4.0" and broker.home == kafka_home
        assert broker.flavour == "Apache Kafka 4.4.0 (KRaft)"
        assert broker.describe() == f"Apache Kafka 4.4.0 (KRaft) on 127.0.0.1:{port}"
        controller = broker.controller_port
        assert controller is not None and controller != port
        cluster = broker.cluster_id
        assert cluster is not None and len(cluster) == 22
        properties = work / "server.properties"
        assert properties.read_text().splitlines() == [
            "process.roles=broker,controller", "node.id=1",
            f"controller.quorum.voters=1@127.0.0.1:{controller}",
            f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}", "controller.listener.names=CONTROLLER",
            "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            f"log.dirs={work / 'data'}", *TEST_SETTINGS]
        assert (work / "data" / "meta.properties").read_text().endswith(f"cluster.id={cluster}\n")
        fmt, server = _launches(tmp_path)
        assert fmt == {"argv": _jvm(java, kafka_home, work, "-Xmx256m", QUICK_START_JVM_OPTIONS,
                                    "kafka.tools.StorageTool", "format", "-t", cluster, "-c",
                                    str(properties)),
                       "cwd": str(work)}
        assert server == {"argv": _jvm(java, kafka_home, work, "-Xmx512m",
                                       ["-Xms256m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                                        "-XX:InitiatingHeapOccupancyPercent=35"],
                                       "kafka.Kafka", str(properties)),
                          "cwd": str(work)}
        log = broker.log_path.read_text()
        format_line = " ".join([str(java), *fmt["argv"]])
        assert f"\n--- stormpy: {format_line}\nstand-in StorageTool ok\n" in log
        # the probe: one admin client, quiet, on the broker's address
        assert probe.confs == [{"bootstrap.servers": f"127.0.0.1:{port}", "log_level": 0}]
        assert probe.timeouts and set(probe.timeouts) == {2.0}
    assert not work.exists()


def test_the_heap_jvm_options_settings_and_a_home_without_log_config(
        probe: Probe, tmp_path: Path, java: Path) -> None:
    home = _home(tmp_path / "bare", "kafka_2.13-4.1.0.jar", log4j=False)
    options = ["-XX:+UseParallelGC"]
    broker = _broker(probe, kafka_home=home, java=str(java), heap_mb=128, jvm_options=options,
                     settings={"num.partitions": 3, "message.max.bytes": 2048}, log_dir=tmp_path / "w")
    options.append("-XX:+ChangedLater")  # the broker kept its own copy
    with broker:
        work = (tmp_path / "w").resolve()
        assert broker.work_dir == work
        properties = work / "server.properties"
        lines = properties.read_text().splitlines()
        assert lines[9] == "num.partitions=3"  # overridden where it stands
        assert lines[10:] == [*TEST_SETTINGS[1:], "message.max.bytes=2048"]
        fmt, server = _launches(tmp_path)
        assert fmt["argv"] == _jvm(java, home, work, "-Xmx256m", QUICK_START_JVM_OPTIONS,
                                   "kafka.tools.StorageTool", "format", "-t", broker.cluster_id or "", "-c",
                                   str(properties), log4j=False)
        assert server["argv"] == _jvm(java, home, work, "-Xmx128m", ["-Xms128m", "-XX:+UseParallelGC"],
                                      "kafka.Kafka", str(properties), log4j=False)
    assert work.is_dir()  # a given directory is kept


def test_a_failed_format_names_the_data_directory_its_status_and_log(
        probe: Probe, tmp_path: Path, kafka_home: Path, java: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STAND_IN_FORMAT", "fail")
    broker = _broker(probe, kafka_home=kafka_home, java=str(java))
    with pytest.raises(KafkaBrokerStartError) as caught:
        broker.start()
    work = broker.work_dir
    assert work is not None
    assert str(caught.value).startswith(
        f"formatting the Kafka storage in {work / 'data'} failed with status 3 "
        f"(log {work / 'broker.log'}):\n")
    tail = str(caught.value).split("\n", 1)[1]
    assert "stand-in StorageTool fail\nformat error: bad config" in tail
    assert "--- stormpy: " in tail
    assert not work.exists()
    assert len(_launches(tmp_path)) == 1  # the server was never started


def test_a_format_step_that_hangs_ends_with_the_start_timeout(
        probe: Probe, tmp_path: Path, kafka_home: Path, java: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STAND_IN_FORMAT", "hang")
    broker = _broker(probe, kafka_home=kafka_home, java=str(java), startup_timeout_secs=1.0)
    with pytest.raises(subprocess.TimeoutExpired):
        broker.start()
    assert broker.work_dir is not None and not broker.work_dir.exists()


def test_a_formatted_directory_keeps_its_cluster_id(probe: Probe, tmp_path: Path, kafka_home: Path,
                                                    java: Path) -> None:
    work = tmp_path / "kept"
    (work / "data").mkdir(parents=True)
    (work / "data" / "meta.properties").write_text(
        "version=1\ncluster.id= AbCdEfGhIjKlMnOpQrStUv \nnode.id=1\n")
    with _broker(probe, kafka_home=kafka_home, java=str(java), log_dir=work) as broker:
        assert broker.cluster_id == "AbCdEfGhIjKlMnOpQrStUv"
        [server] = _launches(tmp_path)
        assert "kafka.Kafka" in server["argv"]
    # a meta.properties without a cluster id is formatted again
    (work / "data" / "meta.properties").write_text("version=1\n")
    (tmp_path / "launches.jsonl").unlink()
    with _broker(probe, kafka_home=kafka_home, java=str(java), log_dir=work) as broker:
        assert broker.cluster_id not in (None, "AbCdEfGhIjKlMnOpQrStUv")
        formats = [("kafka.tools.StorageTool" in launch["argv"]) for launch in _launches(tmp_path)]
        assert formats == [True, False]


def test_a_server_that_exits_during_startup_fails_naming_it(
        probe: Probe, tmp_path: Path, kafka_home: Path, java: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STAND_IN_SERVER", "exit")
    broker = _broker(probe, kafka_home=kafka_home, java=str(java))
    with pytest.raises(KafkaBrokerStartError) as caught:
        broker.start()
    assert str(caught.value).startswith("the Apache Kafka broker exited with status 5 during startup (log ")
    assert "kafka.Kafka failed: bad settings" in str(caught.value)


# -- serving: only our broker counts ---------------------------------------------------------------

@pytest.mark.parametrize("answer", ["another cluster", "no brokers"])
def test_another_cluster_or_no_broker_on_the_port_is_not_serving(
        probe: Probe, tmp_path: Path, kafka_home: Path, java: Path, answer: str) -> None:
    if answer == "another cluster":
        probe.cluster_id = "SomeOtherClusterIdXXXX"
    else:
        probe.brokers = {}
    broker = _broker(probe, kafka_home=kafka_home, java=str(java), startup_timeout_secs=1.5)
    with pytest.raises(KafkaBrokerStartError) as caught:
        broker.start()
    assert str(caught.value).startswith(
        f"the Apache Kafka broker on 127.0.0.1:{broker.port} did not start serving within 1.5 s (log ")
    assert len(probe.confs) == 1  # one admin client for all the polls


def test_metadata_errors_while_it_comes_up_count_as_not_yet(
        probe: Probe, tmp_path: Path, kafka_home: Path, java: Path) -> None:
    probe.failures = 3
    with _broker(probe, kafka_home=kafka_home, java=str(java)) as broker:
        assert broker.running
        assert len(probe.timeouts) == 4 and len(probe.confs) == 1


# -- faults: kill and restart ----------------------------------------------------------------------

def test_a_killed_broker_restarts_on_its_ports_with_its_data(
        probe: Probe, tmp_path: Path, kafka_home: Path, java: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ports: list[int] = []
    real_free_port = ak.free_port

    def counted(host: str = "127.0.0.1") -> int:
        ports.append(real_free_port(host))
        return ports[-1]
    monkeypatch.setattr(ak, "free_port", counted)
    broker = _broker(probe, kafka_home=kafka_home, java=str(java))
    assert broker.kill() is None  # never started: nothing to kill
    with pytest.raises(RuntimeError) as caught:
        broker.restart()
    assert str(caught.value) == "ApacheKafkaBroker.restart: the broker was never started"
    broker.start()
    try:
        port, controller = broker.port, broker.controller_port
        cluster, work = broker.cluster_id, broker.work_dir
        assert work is not None and ports == [controller]
        with pytest.raises(RuntimeError) as caught:
            broker.restart()
        assert str(caught.value) == "ApacheKafkaBroker.restart: the broker is running; kill() it first"
        # a plain start after a crash starts afresh: a new directory (the crashed run's
        # temporary one removed, not left behind), a new controller port and cluster id
        broker.kill()
        assert work.is_dir()
        broker.start()
        assert broker.work_dir is not None and broker.work_dir != work and not work.exists()
        assert len(ports) == 2 and broker.controller_port == ports[1] != controller
        assert broker.cluster_id != cluster
        port, controller = broker.port, broker.controller_port
        cluster, work = broker.cluster_id, broker.work_dir
        pid = broker.pid
        assert pid is not None
        broker.kill()
        assert not broker.running and broker.pid is None
        assert not Path(f"/proc/{pid}").exists()  # reaped
        assert "controlled shutdown" not in (work / "broker.log").read_text()  # a crash
        assert (work / "data" / "meta.properties").is_file()
        assert broker.restart() is broker
        assert (broker.port, broker.controller_port, broker.cluster_id, broker.work_dir) == (
            port, controller, cluster, work)
        assert len(ports) == 2
        assert ["kafka.tools.StorageTool" in launch["argv"] for launch in _launches(tmp_path)] == [
            True, False, True, False, False]
        assert len(probe.confs) == 3  # a new probe for every start
        # only restart() keeps the controller port: the next plain start picks a new one
        broker.kill()
        broker.start()
        assert len(ports) == 3 and broker.controller_port == ports[2]
    finally:
        broker.stop()
    assert not work.exists()


def test_stop_shuts_the_broker_down_and_keeps_a_given_directory(
        probe: Probe, tmp_path: Path, kafka_home: Path, java: Path) -> None:
    broker = _broker(probe, kafka_home=kafka_home, java=str(java), log_dir=tmp_path / "w").start()
    pid = broker.pid
    broker.stop()
    assert broker.pid is None
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), 30, "the stand-in broker to be reaped")
    assert "controlled shutdown" in (tmp_path / "w" / "broker.log").read_text()
    assert (tmp_path / "w" / "data" / "meta.properties").is_file()
    assert os.path.isdir(tmp_path / "w")


def test_a_broker_started_again_after_stop_probes_its_new_address(
        probe: Probe, tmp_path: Path, kafka_home: Path, java: Path) -> None:
    broker = _broker(probe, kafka_home=kafka_home, java=str(java), startup_timeout_secs=10.0)
    broker.start()
    first = broker.port
    broker.stop()
    # started again on another port (as a free port chosen anew may be)
    broker._requested_port = next(port for port in iter(free_port, None) if port != first)
    with broker:
        assert broker.running
        assert [conf["bootstrap.servers"] for conf in probe.confs] == [f"127.0.0.1:{first}",
                                                                        broker.bootstrap_servers]
