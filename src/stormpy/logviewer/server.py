"""Running the log server: :class:`LogviewerServer` (uvicorn on a thread, plus the cleanup loop).

Contract: it binds ``logviewer.host`` (default ``supervisor.host``):``logviewer.port`` (0 picks a
free port, see :attr:`LogviewerServer.port`) and serves :func:`~stormpy.logviewer.app.create_app`
on the log directory; every ``logviewer.cleanup.interval.secs`` it deletes the logs of workers
that no longer run, untouched for ``logviewer.cleanup.age.mins``
(:func:`~stormpy.logviewer.files.clean_up`; ``running`` says which ``(topology, port)`` run: the
supervisor's workers; a log server of its own, ``stormpy logviewer``, knows none and judges by
age alone). :meth:`LogviewerServer.stop` stops both.

Built on the UI's stack (starlette and uvicorn): the same access rules and one web server to
know, where a standard-library server would need its own threading, parsing and auth code.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import uvicorn

from stormpy.config import log_dir, setting
from stormpy.host.service import Service
from stormpy.host.waiting import WaitTimeout, wait_for
from stormpy.logviewer.app import create_app
from stormpy.logviewer.files import LogDir, clean_up

__all__ = ["LogviewerServer"]

log = logging.getLogger(__name__)


class LogviewerServer:
    """The log server on a background thread."""

    def __init__(self, conf: Mapping[str, Any], *, logs: Path | None = None,
                 running: Callable[[], Iterable[tuple[str, int]]] | None = None,
                 logger: logging.Logger | None = None) -> None:
        self.conf = dict(conf)
        self.log = logger or log
        self.log_dir = LogDir(logs if logs is not None else log_dir(self.conf))
        self.log_dir.root.mkdir(parents=True, exist_ok=True)
        self.host = str(setting(conf, "logviewer.host") or setting(conf, "supervisor.host"))
        wanted = setting(conf, "logviewer.port")
        self._sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._sock.bind((self.host, int(wanted)))
        except OSError:
            self._sock.close()
            raise
        self.port = int(self._sock.getsockname()[1])
        self.server = uvicorn.Server(uvicorn.Config(create_app(self.log_dir, self.conf),
                                                    log_level="warning", access_log=False,
                                                    lifespan="off"))
        self.running = running or (lambda: ())
        self.age_secs = 60.0 * float(setting(conf, "logviewer.cleanup.age.mins"))
        self.cleanup = Service("logviewer-cleanup", self.clean_up_once,
                               interval=float(setting(conf, "logviewer.cleanup.interval.secs")),
                               log=self.log)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}"

    def clean_up_once(self) -> None:
        for path in clean_up(self.log_dir, self.running(), self.age_secs):
            self.log.info("logviewer cleanup: removed %s", path)

    def start(self, timeout_secs: float = 20.0) -> LogviewerServer:
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self._sock]},
                                        name="stormpy-logviewer", daemon=True)
        self._thread.start()
        thread = self._thread

        def check() -> None:
            if not thread.is_alive():
                raise WaitTimeout("the log server's thread ended")

        try:
            wait_for(lambda: self.server.started, timeout_secs,
                     f"the log server to serve on {self.url}", interval=0.05, check=check)
        except WaitTimeout as exc:
            self.stop()
            raise RuntimeError(f"the log server did not start on {self.url} ({exc})") from None
        self.cleanup.start()
        self.log.info("log server on %s serving %s", self.url, self.log_dir.root)
        return self

    def wait(self, stop: threading.Event) -> None:
        while not stop.wait(0.5):
            if self._thread is None or not self._thread.is_alive():
                return

    def stop(self) -> None:
        self.cleanup.stop(5.0)
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=15)
            self._thread = None
        self._sock.close()
