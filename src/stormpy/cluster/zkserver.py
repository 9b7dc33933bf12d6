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

import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stormpy.host.child_server import ChildServer
from stormpy.host.java import find_java, missing_java_reason

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


class ZooKeeperServer(ChildServer):
    """One standalone ZooKeeper on ``host:port`` (``port=0``: a free port) with its own data dir.

    ``data_dir=None`` uses a fresh temporary directory removed by :meth:`stop`; a given directory is
    created if needed and kept. Use as ``with ZooKeeperServer() as zk: ... zk.connect_string``.
    The process handling is :class:`stormpy.host.child_server.ChildServer`'s.
    """

    kind = "ZooKeeper"
    start_error = ZooKeeperStartError
    temp_prefix = "stormpy-zk-"
    log_name = "zookeeper.log"

    def __init__(self, port: int = 0, *, host: str = "127.0.0.1",
                 data_dir: str | os.PathLike[str] | None = None, heap_mb: int = 256,
                 startup_timeout_secs: float = 60.0, tick_time_ms: int = 2000, fsync: bool = False,
                 classpath: list[str] | None = None, java: str | None = None,
                 die_with_parent: bool = True, extra_config: Mapping[str, Any] | None = None) -> None:
        super().__init__(port, host=host, work_dir=data_dir, startup_timeout_secs=startup_timeout_secs,
                         die_with_parent=die_with_parent)
        self.heap_mb = heap_mb
        self.tick_time_ms = tick_time_ms
        self.fsync = fsync
        self._classpath = classpath
        self._java = java
        self.extra_config = dict(extra_config or {})
        self._launch_classpath: list[str] = []
        self._launch_java = ""

    @property
    def data_dir(self) -> Path | None:
        """The data directory (set by :meth:`start`; kept after :meth:`stop` as a path)."""
        return self.work_dir

    @property
    def connect_string(self) -> str:
        """``host:port`` for kazoo / ``storm.zookeeper.servers``."""
        return self.address

    def prepare(self) -> None:
        self._launch_classpath = self._classpath or find_zookeeper_classpath()
        self._launch_java = self._java or require_java()

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

    def command(self) -> list[str]:
        cfg = self._write_config()
        return [self._launch_java, f"-Xmx{self.heap_mb}m", "-XX:+UseSerialGC", "-XX:-UsePerfData",
                "-Djava.awt.headless=true", "-Dzookeeper.admin.enableServer=false",
                "-Dzookeeper.jmx.log4j.disable=true", f"-Dzookeeper.log.dir={self.data_dir}",
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-cp", os.pathsep.join(self._launch_classpath), MAIN_CLASS, str(cfg)]

    def serving(self) -> bool:
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
