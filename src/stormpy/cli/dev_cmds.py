"""``stormpy dev-zookeeper``, ``stormpy dev-kafka``, ``stormpy dev-redis``, ``stormpy dev-spark``
and ``stormpy dev-cluster``: a development cluster on this machine."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import Any

import click

from stormpy.cli.output import CONFIG_HELP, console, error, say
from stormpy.cluster.devzk import default_dev_data_dir, run_dev_zookeeper
from stormpy.cluster.zkserver import ZooKeeperNotFound, ZooKeeperServer, ZooKeeperStartError
from stormpy.config import DEFAULTS, ConfigError, load_config_args, local_dir, parse_config_args
from stormpy.local import ProcessCluster
from stormpy.local._dev_kafka import BROKER_CHOICES, run_dev_kafka
from stormpy.local._kafka_broker import KafkaBrokerNotFound, KafkaBrokerStartError
from stormpy.local._redis_server import RedisNotFound, RedisStartError, run_dev_redis
from stormpy.local._spark_cluster import (
    SparkClusterNotFound,
    SparkClusterStartError,
    SparkStandalone,
    run_dev_spark,
)


def _conf(config_file: tuple[str, ...], overrides: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        # what the daemons started here get: the files and pairs given (not ./stormpy.yaml)
        return (load_config_args(config_file, overrides),
                parse_config_args((*config_file, *overrides)).merged())
    except ConfigError as exc:
        error(exc)
        sys.exit(2)


@click.command("dev-zookeeper")
@click.option("--port", type=int, default=None, help="Client port (default: storm.zookeeper.port, 2181).")
@click.option("--data-dir", type=click.Path(file_okay=False), default=None,
              help="Data directory kept across runs (default: <storm.local.dir>/dev-zookeeper).")
@click.option("--config", "config_file", multiple=True, metavar="FILE|KEY=VALUE",
              help=CONFIG_HELP)
@click.option("-c", "--conf", "overrides", multiple=True, metavar="KEY=VALUE|FILE", help="Config override.")
def dev_zookeeper(port: int | None, data_dir: str | None, config_file: tuple[str, ...],
                  overrides: tuple[str, ...]) -> None:
    """Run a real Apache ZooKeeper on 127.0.0.1 for development (Ctrl-C stops it)."""
    conf, _ = _conf(config_file, overrides)
    try:
        code = run_dev_zookeeper(port or int(conf["storm.zookeeper.port"]),
                                 data_dir or default_dev_data_dir(conf), echo=click.echo)
    except (ZooKeeperNotFound, ZooKeeperStartError) as exc:
        error(exc)
        sys.exit(1)
    sys.exit(code)


@click.command("dev-kafka")
@click.option("--port", type=click.IntRange(1, 65535), default=9092, show_default=True,
              help="Listener port on 127.0.0.1.")
@click.option("--log-dir", type=click.Path(file_okay=False), default=None,
              help="Where the broker's log (and Apache Kafka's data) goes "
                   "(default: <storm.local.dir>/dev-kafka).")
@click.option("--broker", type=click.Choice(BROKER_CHOICES), default="auto", show_default=True,
              help="Apache Kafka (`kafka`), tansu, or Apache Kafka when Java and its jars are "
                   "there (`auto`).")
@click.option("--config", "config_file", multiple=True, metavar="FILE|KEY=VALUE",
              help=CONFIG_HELP)
@click.option("-c", "--conf", "overrides", multiple=True, metavar="KEY=VALUE|FILE", help="Config override.")
def dev_kafka(port: int, log_dir: str | None, broker: str, config_file: tuple[str, ...],
              overrides: tuple[str, ...]) -> None:
    """Run a Kafka broker on 127.0.0.1 for development: Apache Kafka (KRaft, one node) when Java and
    its jars are there (`make kafka`), else tansu (a Kafka-protocol broker, in memory); it says which.

    Ctrl-C or SIGTERM stops it; Apache Kafka keeps its topics in the log directory across runs."""
    conf, _ = _conf(config_file, overrides)
    directory = log_dir or local_dir(conf) / "dev-kafka"
    try:
        code = run_dev_kafka(port, directory, choice=broker, echo=click.echo)
    except (KafkaBrokerNotFound, KafkaBrokerStartError) as exc:
        error(exc)
        sys.exit(1)
    sys.exit(code)


@click.command("dev-redis")
@click.option("--port", type=click.IntRange(1, 65535), default=6379, show_default=True,
              help="Port on 127.0.0.1.")
@click.option("--data-dir", type=click.Path(file_okay=False), default=None,
              help="Data and log directory kept across runs (default: <storm.local.dir>/dev-redis).")
@click.option("--config", "config_file", multiple=True, metavar="FILE|KEY=VALUE",
              help=CONFIG_HELP)
@click.option("-c", "--conf", "overrides", multiple=True, metavar="KEY=VALUE|FILE", help="Config override.")
def dev_redis(port: int, data_dir: str | None, config_file: tuple[str, ...],
              overrides: tuple[str, ...]) -> None:
    """Run a Redis (the `redis` state provider's store) on 127.0.0.1 for development; it prints
    the provider config to use. Ctrl-C or SIGTERM stops it; its data is kept across runs."""
    conf, _ = _conf(config_file, overrides)
    try:
        code = run_dev_redis(port, data_dir or local_dir(conf) / "dev-redis", echo=click.echo)
    except (RedisNotFound, RedisStartError) as exc:
        error(exc)
        sys.exit(1)
    sys.exit(code)


@click.command("dev-spark")
@click.option("-w", "--workers", type=click.IntRange(1, 16), default=1, show_default=True,
              help="Number of Spark workers.")
@click.option("--port", type=click.IntRange(0, 65535), default=7077, show_default=True,
              help="Master port on 127.0.0.1 (0: a free port).")
@click.option("--cores", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Cores each worker offers.")
@click.option("--memory", default="1g", show_default=True, help="Memory each worker offers.")
@click.option("--base-dir", type=click.Path(file_okay=False), default=None,
              help="Logs and executor work dirs (default: <storm.local.dir>/dev-spark).")
@click.option("--config", "config_file", multiple=True, metavar="FILE|KEY=VALUE",
              help=CONFIG_HELP)
@click.option("-c", "--conf", "overrides", multiple=True, metavar="KEY=VALUE|FILE", help="Config override.")
def dev_spark(workers: int, port: int, cores: int, memory: str, base_dir: str | None,
              config_file: tuple[str, ...], overrides: tuple[str, ...]) -> None:
    """Run a standalone Spark master and N workers from the installed PySpark on 127.0.0.1.

    Ctrl-C or SIGTERM stops them (and their executors)."""
    conf, _ = _conf(config_file, overrides)
    directory = base_dir or local_dir(conf) / "dev-spark"
    try:
        code = run_dev_spark(workers, directory, master_port=port, worker_cores=cores,
                             worker_memory=memory, echo=click.echo)
    except (SparkClusterNotFound, SparkClusterStartError) as exc:
        error(exc)
        sys.exit(1)
    sys.exit(code)


#: ZooKeeper session timeout (ms) of every daemon of ``dev-cluster --nimbuses N`` (N > 1) unless the
#: config sets one: a dead leader's lock goes after it, so the standby leads about this long after a
#: crash (ZooKeeper's own floor is 2 × tickTime = 4 s).
HA_SESSION_TIMEOUT_MS = 6000


def daemon_conf(conf: dict[str, Any], given: dict[str, Any], nimbuses: int) -> dict[str, Any]:
    """The config every daemon of ``dev-cluster`` gets: what was given (``given``), and with
    several Nimbuses a ZooKeeper session of :data:`HA_SESSION_TIMEOUT_MS` unless the config
    (``conf``, defaults included) sets one: the leader handover takes the dead leader's session
    timeout, so it is kept short here."""
    extra = dict(given)
    session_key = "storm.zookeeper.session.timeout"
    if nimbuses > 1 and conf[session_key] == DEFAULTS[session_key] and session_key not in extra:
        extra[session_key] = HA_SESSION_TIMEOUT_MS
    return extra


def slot_port_blocks(first_port: int, supervisors: int, slots: int) -> list[list[int]]:
    """The worker ports of each supervisor: supervisor i gets the i-th block of ``slots``
    consecutive ports from ``first_port``."""
    return [[first_port + i * slots + j for j in range(slots)] for i in range(supervisors)]


def describe_cluster(cluster: ProcessCluster, slot_ports: list[list[int]]) -> None:
    """What a started dev cluster serves: each Nimbus (leader or standby) with its port and logs,
    the UI's addresses, each supervisor's slots, logs and log server, and how to submit."""
    leader = cluster.leader_index()
    for i, port in enumerate(cluster.nimbus_ports):
        role = "leader" if i == leader else "standby"
        say("{} ({}) serving on {}:{} (logs {})", cluster.nimbuses[i].name, role, cluster.host,
            port, cluster.nimbuses[i].workdir / "logs")
    if cluster.ui is not None:
        say("UI serving on {} (REST {}/api/v1/cluster/summary, metrics {}/metrics)",
            cluster.ui_url, cluster.ui_url, cluster.ui_url)
    infos = cluster.supervisor_infos()
    for i, ports in enumerate(slot_ports):
        lv = infos[i].logviewer_port if i in infos else None
        say("supervisor-{}: slots {}-{} (logs {}, log server {})", i, ports[0], ports[-1],
            cluster.supervisors[i].workdir / "logs",
            f"http://{cluster.host}:{lv}" if lv else "none")
    say("submit with: stormpy jar DIR MODULE:ATTR --nimbus {} (DIR holds your code; from "
        "the stormpy repository: stormpy jar examples wordcount:topology)\n"
        "Ctrl-C stops the cluster", cluster.nimbus_address)


def report_exits(cluster: ProcessCluster, spark: SparkStandalone | None, reported: set[str]) -> None:
    """One line on stderr for each process of the dev cluster (a Spark daemon, Nimbus, a
    supervisor, the UI) that exited since the last call, with its exit code and where its output
    went; each is said once (``reported`` holds the names said)."""
    if spark is not None:
        for name in spark.dead_daemons():
            if f"spark-{name}" not in reported:
                reported.add(f"spark-{name}")
                say("[red]Spark {} exited[/red]; see {}", name, spark.base_dir, err=True)
    for daemon in cluster.daemons():
        if not daemon.running and daemon.name not in reported:
            reported.add(daemon.name)
            code = daemon.proc.returncode if daemon.proc else "?"
            say("[red]{} exited[/red] (code {}); see {}", daemon.name, code, daemon.out_path, err=True)


@click.command("dev-cluster")
@click.option("-s", "--supervisors", type=click.IntRange(1, 16), default=2, show_default=True,
              help="Number of supervisors.")
@click.option("-n", "--nimbuses", type=click.IntRange(1, 5), default=1, show_default=True,
              help="Number of Nimbus processes (Nimbus HA: one leads, the others stand by); Nimbus i "
                   "listens on nimbus.thrift.port + i.")
@click.option("--slots", type=click.IntRange(1, 16), default=4, show_default=True,
              help="Worker slots (ports) per supervisor; supervisor i uses the next block of ports.")
@click.option("--base-dir", type=click.Path(file_okay=False), default=None,
              help="Where daemons keep state and logs (default: <storm.local.dir>/dev-cluster).")
@click.option("--ui/--no-ui", "with_ui", default=True, show_default=True,
              help="Run `stormpy ui` beside Nimbus (needs the 'ui' extra).")
@click.option("--ui-port", type=click.IntRange(1, 65535), default=None,
              help="Port of the UI (default: ui.port, 8080).")
@click.option("--spark", "spark_workers", type=click.IntRange(0, 16), default=None, flag_value=1,
              is_flag=False, help="Also run a standalone Spark master with this many workers "
              "(--spark alone: 1); supervisors' workers get spark.master pointing at it.")
@click.option("--config", "config_file", multiple=True, metavar="FILE|KEY=VALUE",
              help=CONFIG_HELP)
@click.option("-c", "--conf", "overrides", multiple=True, metavar="KEY=VALUE|FILE",
              help="Config override passed to every daemon (repeatable): KEY=VALUE or a "
                   "YAML/JSON file.")
def dev_cluster(supervisors: int, nimbuses: int, slots: int, with_ui: bool, ui_port: int | None,
                spark_workers: int | None, base_dir: str | None, config_file: tuple[str, ...],
                overrides: tuple[str, ...]) -> None:
    """Run ZooKeeper + Nimbus (or several, --nimbuses) + N supervisors (+ the UI) on this machine
    (the docker-compose layout), with --spark also a standalone Spark cluster.

    Ctrl-C or SIGTERM stops every process it started, workers included."""
    conf, given = _conf(config_file, overrides)
    extra = daemon_conf(conf, given, nimbuses)
    base = Path(base_dir or Path(conf["storm.local.dir"]) / "dev-cluster").resolve()
    spark: SparkStandalone | None = None
    if spark_workers:
        spark = SparkStandalone(spark_workers, base_dir=base / "spark")
        try:
            spark.start()
        except (SparkClusterNotFound, SparkClusterStartError) as exc:
            spark.stop()
            error(exc)
            sys.exit(1)
        say("Spark master serving on {} with {} worker(s) (logs {})", spark.master_url,
            spark_workers, spark.base_dir)
        # The supervisors' conf: workers read spark.* from it unless the topology sets them.
        extra = {"spark.master": spark.master_url, **extra}
    slot_ports = slot_port_blocks(int(list(conf["supervisor.slots.ports"])[0]), supervisors, slots)
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    zookeeper = ZooKeeperServer(int(conf["storm.zookeeper.port"]), data_dir=base / "zookeeper")
    cluster: ProcessCluster | None = None
    try:
        zookeeper.start()
        say("ZooKeeper serving on {} (data {})", zookeeper.connect_string, zookeeper.data_dir)
        cluster = ProcessCluster(zookeeper.connect_string, supervisors=supervisors, base_dir=base,
                                 zk_root=str(conf["storm.zookeeper.root"]), conf=extra,
                                 nimbus_port=int(conf["nimbus.thrift.port"]), slot_ports=slot_ports,
                                 nimbuses=nimbuses, ui=with_ui, ui_port=ui_port or int(conf["ui.port"]))
        cluster.start(timeout_secs=90)
        describe_cluster(cluster, slot_ports)
        reported: set[str] = set()
        while not stop.wait(1.0):
            report_exits(cluster, spark, reported)
    except (ZooKeeperNotFound, ZooKeeperStartError, TimeoutError, RuntimeError) as exc:
        error(exc)
        sys.exit(1)
    finally:
        console.print("stopping the dev cluster")
        if cluster is not None:
            cluster.stop()
        zookeeper.stop()
        if spark is not None:
            spark.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
