"""Run a real Apache ZooKeeper server (standalone) as a child process, for development and tests.

ZooKeeper is found through ``$ZOOKEEPER_HOME`` (an unpacked Apache release: ``lib/*.jar`` and
``conf/``) or the Debian/Ubuntu package ``zookeeper`` (``/usr/share/java/zookeeper.jar``, whose
manifest ``Class-Path`` names its dependencies; ``slf4j-simple.jar`` is added so the server logs to
its output file). Java is found by :func:`stormpy.host.java.find_java` (``$JAVA_HOME/bin/java``
when ``JAVA_HOME`` is set, else ``java`` on ``PATH``).

:class:`ZooKeeperServer` contract: :meth:`~ZooKeeperServer.start` returns only once the server it
launched (recognised by its data directory) answers ``srvr`` as serving, or raises
:class:`ZooKeeperStartError` with the tail of the server log; :meth:`~ZooKeeperServer.stop` sends
SIGTERM, kills after a grace period, reaps the process, and removes the data directory if the server
created it. The server binds ``host`` only (127.0.0.1 by
default), disables the admin HTTP server, allows unlimited client connections and, on Linux, dies
with the thread that started it (``die_with_parent``) so a killed test run leaves no JVM behind.
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
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from stormpy.host.java import find_java, missing_java_reason
from stormpy.host.ports import free_port
from stormpy.host.processes import parent_death_signal, terminate_popen

__all__ = [
    "DEBIAN_JAVA_DIR",
    "INSTALL_HINT",
    "ZooKeeperNotFound",
    "ZooKeeperServer",
    "ZooKeeperStartError",
    "require_java",
    "find_zookeeper_classpath",
    "four_letter_word",
]

DEBIAN_JAVA_DIR = Path("/usr/share/java")
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
INSTALL_HINT = ("install Apache ZooKeeper and Java: `sudo apt-get install zookeeper` on Debian/Ubuntu "
                "(or `make zookeeper`), or unpack an Apache ZooKeeper release and set ZOOKEEPER_HOME to it")
_DEBIAN_REQUIRED = ("zookeeper-jute.jar", "slf4j-api.jar", "netty-handler.jar", "netty-transport.jar")


class ZooKeeperNotFound(RuntimeError):
    """ZooKeeper or Java is not installed where stormpy looks; the message says how to install it."""


class ZooKeeperStartError(RuntimeError):
    """The ZooKeeper process failed to start or to answer in time; the message has its log tail."""


def require_java() -> str:
    """Path of the ``java`` executable (:func:`stormpy.host.java.find_java`); raise
    ZooKeeperNotFound saying why there is none, with an install hint."""
    java = find_java()
    if java is None:
        raise ZooKeeperNotFound(f"Java was not found ({missing_java_reason()}); {INSTALL_HINT}")
    return java


def find_zookeeper_classpath(zookeeper_home: str | os.PathLike[str] | None = None,
                             java_dir: str | os.PathLike[str] = DEBIAN_JAVA_DIR) -> list[str]:
    """The classpath entries that run ZooKeeper's server.

    Looks at ``zookeeper_home`` (default ``$ZOOKEEPER_HOME``) first, then the Debian layout in
    ``java_dir``. Raises ZooKeeperNotFound naming what is missing, with an install hint.
    """
    home = zookeeper_home if zookeeper_home is not None else os.environ.get("ZOOKEEPER_HOME")
    if home:
        root = Path(home)
        jars = sorted(root.glob("lib/*.jar")) + sorted(root.glob("zookeeper-*.jar"))
        if not any(j.name.startswith("zookeeper") and "jute" not in j.name for j in jars):
            raise ZooKeeperNotFound(f"ZOOKEEPER_HOME={root} holds no zookeeper-*.jar (looked in {root}/lib "
                                    f"and {root}); {INSTALL_HINT}")
        conf = [str(root / "conf")] if (root / "conf").is_dir() else []
        return conf + [str(j) for j in jars]
    jdir = Path(java_dir)
    main_jar = jdir / "zookeeper.jar"
    if not main_jar.is_file():
        raise ZooKeeperNotFound(f"Apache ZooKeeper was not found (no $ZOOKEEPER_HOME, no {main_jar}); "
                                f"{INSTALL_HINT}")
    missing = [name for name in _DEBIAN_REQUIRED if not (jdir / name).exists()]
    if missing:
        raise ZooKeeperNotFound(f"{main_jar} is installed but its dependencies {', '.join(missing)} are "
                                f"missing from {jdir}; reinstall: sudo apt-get install --reinstall zookeeper")
    classpath = [str(main_jar)]
    if (jdir / "slf4j-simple.jar").exists():
        classpath.append(str(jdir / "slf4j-simple.jar"))
    return classpath


def four_letter_word(host: str, port: int, word: str = "ruok", timeout_secs: float = 2.0) -> str:
    """Send a four-letter command (``ruok``, ``srvr``, ``stat``, ``mntr``) and return the answer.

    Raises OSError when nothing answers.
    """
    with socket.create_connection((host, port), timeout=timeout_secs) as sock:
        sock.sendall(word.encode())
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


class ZooKeeperServer:
    """One standalone ZooKeeper on ``host:port`` (``port=0``: a free port) with its own data dir.

    ``data_dir=None`` uses a fresh temporary directory removed by :meth:`stop`; a given directory is
    created if needed and kept. Use as ``with ZooKeeperServer() as zk: ... zk.connect_string``.
    """

    def __init__(self, port: int = 0, *, host: str = "127.0.0.1",
                 data_dir: str | os.PathLike[str] | None = None, heap_mb: int = 256,
                 startup_timeout_secs: float = 60.0, tick_time_ms: int = 2000, fsync: bool = False,
                 classpath: list[str] | None = None, java: str | None = None,
                 die_with_parent: bool = True, extra_config: Mapping[str, Any] | None = None) -> None:
        self.host = host
        self._requested_port = port
        self._port: int | None = None
        self._requested_data_dir = Path(data_dir) if data_dir is not None else None
        self.heap_mb = heap_mb
        self.startup_timeout_secs = startup_timeout_secs
        self.tick_time_ms = tick_time_ms
        self.fsync = fsync
        self._classpath = classpath
        self._java = java
        self.die_with_parent = die_with_parent
        self.extra_config = dict(extra_config or {})
        self.data_dir: Path | None = None
        self.log_path: Path | None = None
        self._temp_dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    # -- properties ----------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The client port (known after :meth:`start`, or when given explicitly)."""
        port = self._port or self._requested_port
        if not port:
            raise RuntimeError("ZooKeeperServer.port is known only after start()")
        return port

    @property
    def connect_string(self) -> str:
        """``host:port`` for kazoo / ``storm.zookeeper.servers``."""
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        """The server process id while it runs."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        """True while the server process is alive."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def returncode(self) -> int | None:
        """The server's exit status once it has exited, else None."""
        return self._proc.poll() if self._proc is not None else None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> ZooKeeperServer:
        """Start the server and wait until it serves; return self.

        Raises ZooKeeperNotFound (not installed) or ZooKeeperStartError (with the log tail).
        """
        if self._proc is not None:
            raise RuntimeError("ZooKeeperServer already started")
        classpath = self._classpath or find_zookeeper_classpath()
        java = self._java or require_java()
        if self._requested_data_dir is None:
            self._temp_dir = Path(tempfile.mkdtemp(prefix="stormpy-zk-"))
            self.data_dir = self._temp_dir
        else:
            self.data_dir = self._requested_data_dir.resolve()
            self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.data_dir / "zookeeper.log"
        attempts = 1 if self._requested_port else 3
        for attempt in range(attempts):
            self._port = self._requested_port or free_port(self.host)
            try:
                self._launch(java, classpath)
                self._wait_until_serving()
                return self
            except ZooKeeperStartError:
                tail = self.log_tail()
                self._halt()
                if attempt + 1 < attempts and "Address already in use" in tail:
                    continue  # another process took the free port first; pick another
                self._cleanup_dirs()
                raise
            except BaseException:
                self._halt()
                self._cleanup_dirs()
                raise
        raise AssertionError("unreachable")

    def _write_config(self) -> Path:
        assert self.data_dir is not None
        settings: dict[str, Any] = {
            "tickTime": self.tick_time_ms,
            "dataDir": self.data_dir,
            "clientPort": self._port,
            "clientPortAddress": self.host,
            "maxClientCnxns": 0,
            "admin.enableServer": "false",
            "4lw.commands.whitelist": "ruok,srvr,stat,mntr,conf,cons,envi",
            "forceSync": "yes" if self.fsync else "no",
            "preAllocSize": 4096,
            "autopurge.snapRetainCount": 3,
            "autopurge.purgeInterval": 1,
        }
        settings.update(self.extra_config)
        cfg = self.data_dir / "zoo.cfg"
        cfg.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        return cfg

    def _launch(self, java: str, classpath: list[str]) -> None:
        assert self.log_path is not None
        cfg = self._write_config()
        cmd = [java, f"-Xmx{self.heap_mb}m", "-XX:+UseSerialGC", "-XX:-UsePerfData",
               "-Djava.awt.headless=true", "-Dzookeeper.admin.enableServer=false",
               "-Dzookeeper.jmx.log4j.disable=true", f"-Dzookeeper.log.dir={self.data_dir}",
               "-Dorg.slf4j.simpleLogger.showDateTime=true",
               "-cp", os.pathsep.join(classpath), MAIN_CLASS, str(cfg)]
        self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - closed by _halt
        self._log_file.write(f"\n--- stormpy: {' '.join(cmd)}\n".encode())
        self._log_file.flush()
        self._proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=self._log_file, stderr=subprocess.STDOUT,
            cwd=self.data_dir, preexec_fn=parent_death_signal() if self.die_with_parent else None)
        self._finalizer = weakref.finalize(self, terminate_popen, self._proc, 5.0)

    def _wait_until_serving(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_secs
        assert self._proc is not None
        while True:
            code = self._proc.poll()
            if code is not None:
                raise ZooKeeperStartError(f"ZooKeeper exited with status {code} during startup "
                                          f"(log {self.log_path}):\n{self.log_tail()}")
            with contextlib.suppress(OSError):
                if self._is_ours_and_serving():
                    return
            if time.monotonic() >= deadline:
                raise ZooKeeperStartError(f"ZooKeeper on {self.connect_string} did not start serving within "
                                          f"{self.startup_timeout_secs:g} s (log {self.log_path}):\n"
                                          f"{self.log_tail()}")
            time.sleep(0.1)

    def _is_ours_and_serving(self) -> bool:
        # Another server may already hold the port: only trust an answer naming our data dir.
        conf = four_letter_word(self.host, self.port, "conf", timeout_secs=1.0)
        if f"dataDir={self.data_dir}{os.sep}" not in conf:
            return False
        return "Mode:" in four_letter_word(self.host, self.port, "srvr", timeout_secs=1.0)

    def ruok(self) -> bool:
        """True when the server answers ``imok``."""
        try:
            return four_letter_word(self.host, self.port, "ruok", timeout_secs=1.0).strip() == "imok"
        except OSError:
            return False

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of the server's log (empty when there is none yet)."""
        if self.log_path is None or not self.log_path.exists():
            return ""
        with open(self.log_path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            text = f.read().decode(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

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

    def stop(self, grace_secs: float = 10.0) -> None:
        """SIGTERM, SIGKILL after ``grace_secs``, reap, and remove a temporary data dir; idempotent."""
        self._halt(grace_secs)
        self._cleanup_dirs()

    def __enter__(self) -> ZooKeeperServer:
        if self._proc is None:
            self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
