"""Run a real ``redis-server`` as a child process, for development (``stormpy dev-redis``) and tests.

``redis-server`` is found on ``PATH`` (Debian/Ubuntu package ``redis-server``; ``make redis``
installs it) or at ``$REDIS_SERVER``.

:class:`RedisServer` contract (the process handling is
:class:`~stormpy.host.child_server.ChildServer`'s): :meth:`~RedisServer.start` returns only once
the server it launched (recognised by its run id, written to its own log) answers ``PING``, or
raises :class:`RedisStartError` with its log tail; :meth:`~RedisServer.stop` sends SIGTERM, kills
after a grace period, reaps it and removes a temporary work directory. The server binds ``host``
only (127.0.0.1 by default), keeps its data in its work directory (``appendonly`` when
``persistent``, so a restart on the same directory finds its keys again; off by default for
tests), and dies with the thread that started it on Linux. :meth:`~RedisServer.kill` crashes it
and :meth:`~RedisServer.restart` stops it, both keeping port and directory for the next
:meth:`~RedisServer.start` (tests of a Redis that went away and came back).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stormpy.host.child_server import ChildServer
from stormpy.host.daemon import child_exit_watch, serve_until_stopped

__all__ = ["INSTALL_HINT", "RedisNotFound", "RedisServer", "RedisStartError", "find_redis_server",
           "redis_ping", "run_dev_redis"]

INSTALL_HINT = ("install Redis: `sudo apt-get install redis-server` on Debian/Ubuntu (or `make "
                "redis`), or set REDIS_SERVER to a redis-server binary")


class RedisNotFound(RuntimeError):
    """``redis-server`` is not installed where stormpy looks; the message says how to install it."""


class RedisStartError(RuntimeError):
    """The Redis process failed to start or to answer in time; the message has its log tail."""


def find_redis_server() -> str:
    """The ``redis-server`` binary (``$REDIS_SERVER``, else on ``PATH``); RedisNotFound naming
    where it looked, with an install hint."""
    given = os.environ.get("REDIS_SERVER")
    if given:
        if not os.access(given, os.X_OK):
            raise RedisNotFound(f"REDIS_SERVER={given} is not an executable; {INSTALL_HINT}")
        return given
    found = shutil.which("redis-server")
    if found is None:
        raise RedisNotFound(f"redis-server was not found on PATH; {INSTALL_HINT}")
    return found


def redis_ping(host: str, port: int, timeout_secs: float = 1.0) -> bytes:
    """Send an inline ``INFO server`` to ``host:port`` and return the answer (OSError when
    nothing answers); no client library needed."""
    with socket.create_connection((host, port), timeout=timeout_secs) as sock:
        sock.sendall(b"INFO server\r\n")
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return data
            data += chunk
            if b"\r\n" not in data:
                continue
            head, _, _ = data.partition(b"\r\n")
            if not head.startswith(b"$"):  # an error or a status line
                return data
            if len(data) >= len(head) + 2 + int(head[1:]) + 2:
                return data


class RedisServer(ChildServer):
    """One ``redis-server`` on ``host:port`` (``port=0``: a free port) with its own work dir.

    ``data_dir=None`` uses a fresh temporary directory removed by :meth:`stop`; a given directory
    is created if needed and kept. ``maxmemory`` (e.g. ``"64mb"``) with ``noeviction`` makes
    writes fail with Redis's OOM error once reached (tests of a full Redis).
    """

    kind = "Redis"
    start_error = RedisStartError
    temp_prefix = "stormpy-redis-"
    log_name = "redis.log"
    stop_grace_secs = 10.0

    def __init__(self, port: int = 0, *, host: str = "127.0.0.1",
                 data_dir: str | os.PathLike[str] | None = None, persistent: bool = False,
                 maxmemory: str | None = None, password: str | None = None,
                 startup_timeout_secs: float = 30.0, die_with_parent: bool = True) -> None:
        super().__init__(port, host=host, work_dir=data_dir,
                         startup_timeout_secs=startup_timeout_secs, die_with_parent=die_with_parent)
        self.persistent = persistent
        self.maxmemory = maxmemory
        self.password = password
        self._binary = ""
        self._kept_temp: Path | None = None

    @property
    def data_dir(self) -> Path | None:
        """The work directory (set by :meth:`start`)."""
        return self.work_dir

    @property
    def url(self) -> str:
        """``redis://host:port/0``."""
        return f"redis://{self.host}:{self.port}/0"

    def provider_config(self, prefix: str | None = None) -> dict[str, object]:
        """``topology.state.provider.config`` for this server (Storm's shape)."""
        pool: dict[str, object] = {"host": self.host, "port": self.port}
        if self.password:
            pool["password"] = self.password
        config: dict[str, object] = {"jedisPoolConfig": pool}
        if prefix is not None:
            config["keyPrefix"] = prefix
        return config

    def prepare(self) -> None:
        self._binary = find_redis_server()

    def command(self) -> list[str]:
        assert self.work_dir is not None
        args = [self._binary, "--bind", self.host, "--port", str(self._port), "--dir",
                str(self.work_dir), "--save", "", "--daemonize", "no", "--protected-mode", "no",
                "--appendonly", "yes" if self.persistent else "no", "--appendfsync", "no",
                "--databases", "16", "--loglevel", "notice"]
        if self.maxmemory:
            args += ["--maxmemory", self.maxmemory, "--maxmemory-policy", "noeviction"]
        if self.password:
            args += ["--requirepass", self.password]
        return args

    def serving(self) -> bool:
        if not self.running:
            return False
        answer = redis_ping(self.host, self.port)
        # another server may hold the port: only trust one whose process id is ours
        if answer.startswith(b"-NOAUTH"):
            return True  # a password-protected server; the port bound is ours (below)
        return f"process_id:{self.pid}\r\n".encode() in answer

    def kill(self) -> None:
        """SIGKILL the server (a crash) and reap it, keeping its port and directory: a later
        :meth:`start` serves the same address with what its append-only file holds."""
        port, work = self.port, self.work_dir
        temp = self._temp_dir or self._kept_temp  # a second crash keeps the first's directory
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
        self._halt(grace_secs=0)
        self._requested_port, self._requested_work_dir = port, work
        # a temporary directory stays this server's (removed by stop), not a start's own
        self._temp_dir = None
        self._kept_temp = temp

    def restart(self) -> None:
        """Stop the server (SIGTERM) and start it again on the same port and directory."""
        port, work = self.port, self.work_dir
        temp = self._temp_dir or self._kept_temp
        self._halt()
        self._requested_port, self._requested_work_dir = port, work
        self._temp_dir = None
        self._kept_temp = temp
        self.start()

    def stop(self, grace_secs: float | None = None) -> None:
        super().stop(grace_secs)
        kept = self._kept_temp
        if kept is not None:
            shutil.rmtree(kept, ignore_errors=True)
            self._kept_temp = None

def run_dev_redis(port: int = 6379, data_dir: str | os.PathLike[str] = "stormpy-local/dev-redis", *,
                  host: str = "127.0.0.1", echo: Callable[[str], Any] = print,
                  stop_event: threading.Event | None = None,
                  on_ready: Callable[[RedisServer], Any] | None = None) -> int:
    """``stormpy dev-redis``: run a Redis on ``host:port`` keeping its data in ``data_dir``
    (append-only file, so a restart finds the state again) until SIGINT/SIGTERM (handlers installed
    only on the main thread) or ``stop_event``, then return 0; if it dies on its own, echo its log
    tail and return its status (1 when unknown). Raises RedisNotFound / RedisStartError when it
    cannot start."""
    server = RedisServer(port, host=host, data_dir=data_dir, persistent=True)

    def start() -> None:
        server.start()
        echo(f"Redis serving on {server.address} (data {server.data_dir}, log {server.log_path}); "
             f"topology.state.provider: redis, topology.state.provider.config: "
             f"{json.dumps(server.provider_config())}; Ctrl-C to stop")
        if on_ready is not None:
            on_ready(server)

    exited = child_exit_watch(server, "Redis", echo)
    return serve_until_stopped(start, server.stop, exited, stopping="stopping Redis", echo=echo,
                               stop_event=stop_event)
