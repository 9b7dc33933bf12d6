"""An ASGI application served by uvicorn on a background thread: the one way the UI and the log
server run their web server.

Contract of :class:`WebThread`: the constructor binds ``host``:``port`` (port 0 picks a free one,
:attr:`WebThread.port`; IPv6 when the host has a colon) and raises ``OSError`` when it cannot,
closing the socket. :meth:`start` serves ``app`` on a daemon thread named ``name`` and returns
once uvicorn accepts requests; when it does not within ``timeout_secs`` (or its thread ends) it
stops and raises ``RuntimeError`` naming ``what`` and the URL. :meth:`wait` blocks until ``stop``
is set or the server ends; :meth:`stop` (idempotent) ends serving and closes the socket.
:attr:`url` is where a client on this host reaches it (``127.0.0.1`` / ``::1`` when it binds
every interface). uvicorn is imported here only, so the package that needs it (the ``ui`` extra)
is the one that imports this module.
"""

from __future__ import annotations

import socket
import threading
from typing import Any

import uvicorn

from stormpy.host.waiting import WaitTimeout, wait_for

__all__ = ["WebThread"]

_EVERY_INTERFACE = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}


class WebThread:
    """See the module contract."""

    def __init__(self, app: Any, host: str, port: int, *, name: str, what: str) -> None:
        self.host = host
        self.name = name
        self.what = what
        self._sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._sock.bind((host, int(port)))
        except OSError:
            self._sock.close()
            raise
        self.port = int(self._sock.getsockname()[1])
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False,
                                                    lifespan="off"))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = _EVERY_INTERFACE.get(self.host, self.host)
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    def start(self, timeout_secs: float = 20.0) -> None:
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self._sock]},
                                        name=self.name, daemon=True)
        self._thread.start()
        thread = self._thread

        def check() -> None:
            if not thread.is_alive():
                raise WaitTimeout(f"the {self.what}'s server thread ended")

        try:
            wait_for(lambda: self.server.started, timeout_secs,
                     f"the {self.what} to serve on {self.url}", interval=0.05, check=check)
        except WaitTimeout as exc:
            self.stop()
            raise RuntimeError(f"the {self.what} did not start on {self.url} ({exc})") from None

    def wait(self, stop: threading.Event) -> None:
        while not stop.wait(0.5):
            if self._thread is None or not self._thread.is_alive():
                return

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=15)
            self._thread = None
        self._sock.close()
