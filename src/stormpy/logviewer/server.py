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
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from stormpy.config import log_dir, setting
from stormpy.host.service import Service
from stormpy.host.web_thread import WebThread
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
        self.web = WebThread(create_app(self.log_dir, self.conf), self.host,
                             int(setting(conf, "logviewer.port")), name="stormpy-logviewer",
                             what="log server")
        self.port = self.web.port
        self.running = running or (lambda: ())
        self.age_secs = 60.0 * float(setting(conf, "logviewer.cleanup.age.mins"))
        self.cleanup = Service("logviewer-cleanup", self.clean_up_once,
                               interval=float(setting(conf, "logviewer.cleanup.interval.secs")),
                               log=self.log)

    @property
    def url(self) -> str:
        return self.web.url

    def clean_up_once(self) -> None:
        for path in clean_up(self.log_dir, self.running(), self.age_secs):
            self.log.info("logviewer cleanup: removed %s", path)

    def start(self, timeout_secs: float = 20.0) -> LogviewerServer:
        self.web.start(timeout_secs)
        self.cleanup.start()
        self.log.info("log server on %s serving %s", self.url, self.log_dir.root)
        return self

    def wait(self, stop: threading.Event) -> None:
        self.web.wait(stop)

    def stop(self) -> None:
        self.cleanup.stop(5.0)
        self.web.stop()
