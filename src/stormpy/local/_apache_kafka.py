"""Apache Kafka itself as a child process: one single-node KRaft broker for tests and development.

``make kafka`` copies the ``org.apache.kafka:kafka_2.13`` jar and its runtime dependencies with
Maven into ``.tools/kafka/libs`` (``tools/kafka/pom.xml``) and the broker's log4j2 configuration
into ``.tools/kafka/config`` (``tools/kafka/log4j2.properties``). The Kafka home is found through
``$STORMPY_KAFKA_HOME``, then ``.tools/kafka`` in the current directory, then ``.tools/kafka`` of
the source checkout stormpy runs from; Java through :func:`stormpy.host.java.find_java`.

::

    from stormpy.local._apache_kafka import ApacheKafkaBroker

    with ApacheKafkaBroker() as broker:           # free ports, data and log in a temp dir
        broker.create_topic("words", partitions=4)
        conf = {"bootstrap.servers": broker.bootstrap_servers}

:meth:`~ApacheKafkaBroker.start` writes ``server.properties`` (broker and controller in one process,
``process.roles=broker,controller``, listeners on ``host``: the broker's on :attr:`port`, the
controller's on a second free port), formats the storage with a random cluster id (Kafka's
``kafka-storage format``, the class ``kafka.tools.StorageTool``) unless the data directory is
already formatted, starts ``kafka.Kafka server.properties`` and returns once an admin client's
metadata request is answered with that cluster id (so another process on the port is never taken
for it). The rest is :class:`stormpy.local._kafka_broker.KafkaBroker`'s contract. :meth:`kill`
(SIGKILL, a crash) and :meth:`restart` (same ports, same data) are for fault tests.

The settings are those of a single-node test broker (internal topics with one replica, no initial
rebalance delay, small segments, topics auto-created as Kafka does by default); ``settings``
overrides or adds any broker property.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import socket
import subprocess
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stormpy.host.java import find_java, missing_java_reason
from stormpy.host.ports import free_port
from stormpy.local._kafka_broker import KafkaBroker, KafkaBrokerNotFound, KafkaBrokerStartError

__all__ = ["KAFKA_HOME_ENV", "KAFKA_INSTALL_HINT", "QUICK_START_JVM_OPTIONS", "ApacheKafkaBroker",
           "apache_kafka_missing", "find_kafka_home", "new_cluster_id"]

KAFKA_HOME_ENV = "STORMPY_KAFKA_HOME"
KAFKA_INSTALL_HINT = ("install Apache Kafka with `make kafka` (Maven copies org.apache.kafka:kafka_2.13 and "
                      "its dependencies into .tools/kafka; `make test` does it too), or set "
                      f"${KAFKA_HOME_ENV} to a directory whose libs/ holds the Kafka jars; Java 17+ is "
                      "needed")
SERVER_MAIN = "kafka.Kafka"
STORAGE_TOOL_MAIN = "kafka.tools.StorageTool"
NODE_ID = 1

#: the single-node test broker's settings (listeners and directories are added per start)
TEST_BROKER_SETTINGS: dict[str, Any] = {
    "num.partitions": 1,
    "default.replication.factor": 1,
    "auto.create.topics.enable": "true",
    "offsets.topic.replication.factor": 1,
    "offsets.topic.num.partitions": 4,
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1,
    "transaction.state.log.num.partitions": 4,
    "share.coordinator.state.topic.replication.factor": 1,
    "share.coordinator.state.topic.min.isr": 1,
    "group.initial.rebalance.delay.ms": 0,
    "log.segment.bytes": 1024 * 1024,
    "log.cleaner.dedupe.buffer.size": 4 * 1024 * 1024,
    "num.network.threads": 2,
    "num.io.threads": 4,
    "num.recovery.threads.per.data.dir": 1,
    # a restart after a kill -9 waits for the dead broker's session to expire (9 s by default)
    "broker.heartbeat.interval.ms": 1000,
    "broker.session.timeout.ms": 5000,
}


def new_cluster_id() -> str:
    """A random KRaft cluster id in Kafka's form (a UUID as 22 characters of URL-safe base64, never
    starting with ``-``, as Kafka's ``Uuid.randomUuid``)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def _source_checkout_home() -> Path:
    # src/stormpy/local/_apache_kafka.py -> the checkout's root
    return Path(__file__).resolve().parents[3] / ".tools" / "kafka"


def find_kafka_home(home: str | os.PathLike[str] | None = None) -> Path:
    """The Kafka home (a directory with ``libs/*.jar``), by the module's search order, or
    ``home`` when given. Raises :class:`KafkaBrokerNotFound` naming where it looked."""
    if home is not None:
        candidates = [Path(home)]
    elif os.environ.get(KAFKA_HOME_ENV):
        candidates = [Path(os.environ[KAFKA_HOME_ENV])]
    else:
        candidates = [Path.cwd() / ".tools" / "kafka", _source_checkout_home()]
    for candidate in candidates:
        if any((candidate / "libs").glob("kafka_2.13-*.jar")):
            return candidate.resolve()
    where = ", ".join(str(c / "libs") for c in candidates)
    raise KafkaBrokerNotFound(f"Apache Kafka was not found (no kafka_2.13-*.jar in {where}); "
                              f"{KAFKA_INSTALL_HINT}")


def apache_kafka_missing(home: str | os.PathLike[str] | None = None) -> str | None:
    """Why Apache Kafka cannot be started here (no Java, no jars), or None when it can."""
    try:
        find_kafka_home(home)
    except KafkaBrokerNotFound as exc:
        return str(exc)
    if find_java() is None:
        return f"Java was not found ({missing_java_reason()}); {KAFKA_INSTALL_HINT}"
    return None


def kafka_version(home: Path) -> str:
    """The version of the ``kafka_2.13-<version>.jar`` in ``home/libs`` ("?" when unclear)."""
    jars = sorted((home / "libs").glob("kafka_2.13-*.jar"))
    return jars[-1].name[len("kafka_2.13-"):-len(".jar")] if jars else "?"


#: JVM options for a broker that should start soon rather than run fast (the tests' brokers): the
#: quick-start JIT alone and the serial GC cost less CPU while the JVM starts on a busy machine
QUICK_START_JVM_OPTIONS = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]


class ApacheKafkaBroker(KafkaBroker):
    """One single-node Apache Kafka (KRaft) on ``host:port`` (see the module doc).

    ``log_dir`` (the work directory: ``server.properties``, ``data/``, ``broker.log``) is a temporary
    directory removed by :meth:`stop` when None; a given directory is kept, and a formatted one is
    started with its data. ``heap_mb`` is the JVM heap; ``jvm_options`` replace the GC and JIT
    options (the default is Kafka's G1 settings; the tests pass :data:`QUICK_START_JVM_OPTIONS`).
    """

    kind = "the Apache Kafka broker"
    temp_prefix = "stormpy-kafka-"
    poll_secs = 0.25
    stop_grace_secs = 15.0

    def __init__(self, port: int = 0, *, host: str = "127.0.0.1",
                 log_dir: str | os.PathLike[str] | None = None, startup_timeout_secs: float = 120.0,
                 kafka_home: str | os.PathLike[str] | None = None, java: str | None = None,
                 heap_mb: int = 512, jvm_options: list[str] | None = None,
                 settings: Mapping[str, Any] | None = None, die_with_parent: bool = True) -> None:
        super().__init__(port, host=host, log_dir=log_dir, startup_timeout_secs=startup_timeout_secs,
                         die_with_parent=die_with_parent)
        self._kafka_home = kafka_home
        self._java = java
        self.heap_mb = heap_mb
        self.jvm_options = list(jvm_options) if jvm_options is not None else [
            "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35"]
        self.settings = dict(settings or {})
        self.home: Path | None = None
        self.version = "?"
        self.cluster_id: str | None = None
        self.controller_port: int | None = None
        self._keep_controller_port = False
        self._launch_java = ""
        self._probe: Any = None

    @property
    def flavour(self) -> str:
        return f"Apache Kafka {self.version} (KRaft)"

    @property
    def data_dir(self) -> Path | None:
        """The broker's log (data) directory, also its KRaft metadata directory."""
        return self.work_dir / "data" if self.work_dir is not None else None

    # -- ChildServer -------------------------------------------------------------------------
    def prepare(self) -> None:
        if self._temp_dir is not None and self._requested_work_dir != self._temp_dir:
            # a start after kill() that is not a restart() starts afresh: the crashed run's
            # temporary directory goes, as stop() would have removed it
            self._cleanup_dirs()
        self.home = find_kafka_home(self._kafka_home)
        self.version = kafka_version(self.home)
        java = self._java or find_java()
        if java is None:
            raise KafkaBrokerNotFound(f"Java was not found ({missing_java_reason()}); {KAFKA_INSTALL_HINT}")
        self._launch_java = java
        self._probe = None

    def _java_command(self, main: str, *args: str, heap_mb: int, options: list[str]) -> list[str]:
        assert self.home is not None and self.work_dir is not None
        log4j = self.home / "config" / "log4j2.properties"
        logging = [f"-Dlog4j2.configurationFile={log4j}"] if log4j.is_file() else []
        return [self._launch_java, f"-Xmx{heap_mb}m", *options, "-XX:-UsePerfData",
                "-Djava.awt.headless=true", f"-Dkafka.logs.dir={self.work_dir}", *logging,
                "-cp", str(self.home / "libs" / "*"), main, *args]

    def _write_properties(self) -> Path:
        assert self.work_dir is not None and self.data_dir is not None
        if not self._keep_controller_port or self.controller_port is None:
            self.controller_port = free_port(self.host)
        listeners = {"PLAINTEXT": f"{self.host}:{self._port}",
                     "CONTROLLER": f"{self.host}:{self.controller_port}"}
        settings: dict[str, Any] = {
            "process.roles": "broker,controller",
            "node.id": NODE_ID,
            "controller.quorum.voters": f"{NODE_ID}@{listeners['CONTROLLER']}",
            "listeners": ",".join(f"{name}://{address}" for name, address in listeners.items()),
            "advertised.listeners": f"PLAINTEXT://{listeners['PLAINTEXT']}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir),
            **TEST_BROKER_SETTINGS,
            **self.settings,
        }
        path = self.work_dir / "server.properties"
        path.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
        return path

    def _format_storage(self, properties: Path) -> None:
        """Format the data directory with a new cluster id, unless it is formatted already (a
        restart, or a kept directory): then its cluster id is read back."""
        assert self.data_dir is not None and self.log_path is not None
        meta = self.data_dir / "meta.properties"
        if meta.is_file():
            for line in meta.read_text().splitlines():
                if line.startswith("cluster.id="):
                    self.cluster_id = line.split("=", 1)[1].strip()
                    return
        self.cluster_id = new_cluster_id()
        # a short-lived JVM: the quick-start JIT and the serial GC start it sooner
        cmd = self._java_command(STORAGE_TOOL_MAIN, "format", "-t", self.cluster_id, "-c", str(properties),
                                 heap_mb=256, options=QUICK_START_JVM_OPTIONS)
        with open(self.log_path, "ab") as log:
            log.write(f"\n--- stormpy: {' '.join(cmd)}\n".encode())
            log.flush()
            done = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                  cwd=self.work_dir, timeout=self.startup_timeout_secs, check=False)
        if done.returncode != 0:
            raise KafkaBrokerStartError(f"formatting the Kafka storage in {self.data_dir} failed with status "
                                        f"{done.returncode} (log {self.log_path}):\n{self.log_tail()}")

    def command(self) -> list[str]:
        properties = self._write_properties()
        self._format_storage(properties)
        return self._java_command(SERVER_MAIN, str(properties), heap_mb=self.heap_mb,
                                  options=[f"-Xms{min(self.heap_mb, 256)}m", *self.jvm_options])

    def serving(self) -> bool:
        # a TCP probe first: librdkafka would log every refused connection
        with socket.create_connection((self.host, self.port), timeout=1.0):
            pass
        if self._probe is None:
            from confluent_kafka.admin import AdminClient

            self._probe = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0})
        try:
            meta = self._probe.list_topics(timeout=2.0)
        except Exception:  # noqa: BLE001 - KafkaException while the broker comes up: not yet
            return False
        # only our broker counts: another process that took the port has another cluster id
        return bool(meta.cluster_id == self.cluster_id and meta.brokers)

    # -- faults ------------------------------------------------------------------------------
    def kill(self) -> None:
        """SIGKILL the broker (a crash, no controlled shutdown) and reap it; the data directory,
        the ports and the cluster id are kept for :meth:`restart` (a plain :meth:`start` after it
        starts afresh, and removes the crashed run's temporary directory)."""
        pid = self.pid
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        self._halt(5.0)
        self._probe = None

    def restart(self) -> ApacheKafkaBroker:
        """Start again on the same ports with the same data after :meth:`kill` (the directory's
        clean-up stays with :meth:`stop`); returns self once it serves."""
        if self.work_dir is None:
            raise RuntimeError("ApacheKafkaBroker.restart: the broker was never started")
        if self.running:
            raise RuntimeError("ApacheKafkaBroker.restart: the broker is running; kill() it first")
        self._requested_port = self.port
        self._requested_work_dir = self.work_dir
        self._keep_controller_port = True
        try:
            return self.start()
        finally:
            self._keep_controller_port = False
