"""Running the UI: :class:`UiServer` (uvicorn on a thread, for tests and ``dev-cluster``) and
:func:`run_ui` (the foreground ``stormpy ui``).

Contract: the server binds ``ui.host``:``ui.port`` (port 0 picks a free one, see
:attr:`UiServer.port`; ``stormpy ui`` prints the address it binds, :attr:`UiServer.bound`), starts
the heartbeat sampler, and on :meth:`UiServer.stop` (or SIGTERM / Ctrl-C for :func:`run_ui`) stops
serving, stops the sampler and closes its Nimbus and ZooKeeper connections. Neither Nimbus nor
ZooKeeper has to be up for the UI to start: until they are, the API answers 503.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from stormpy.config import setting
from stormpy.host.web_thread import WebThread
from stormpy.ui._app import create_app
from stormpy.ui._source import UiBackend

__all__ = ["UiServer", "run_ui"]

log = logging.getLogger(__name__)


class UiServer:
    """The UI on a background thread."""

    def __init__(self, conf: Mapping[str, Any], *, nimbus_address: str | None = None,
                 host: str | None = None, port: int | None = None) -> None:
        self.conf = dict(conf)
        self.host = str(host or setting(conf, "ui.host"))
        wanted = port if port is not None else setting(conf, "ui.port")
        self.backend = UiBackend(self.conf, nimbus_address=nimbus_address)
        self.web = WebThread(create_app(self.backend), self.host, int(wanted), name="stormpy-ui",
                             what="UI")
        self.port = self.web.port

    @property
    def url(self) -> str:
        """Where a browser on this host reaches the UI (127.0.0.1 / ::1 when it binds every
        interface)."""
        return self.web.url

    @property
    def bound(self) -> str:
        """The address the UI actually binds, ``host:port`` (``0.0.0.0:8080`` when it binds every
        interface)."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def start(self, timeout_secs: float = 20.0) -> UiServer:
        """Start the sampler and serve; return once the server accepts requests."""
        self.backend.start()
        try:
            self.web.start(timeout_secs)
        except RuntimeError:
            self.backend.close()
            raise
        return self

    def wait(self, stop: threading.Event) -> None:
        """Block until ``stop`` is set or the server ends."""
        self.web.wait(stop)

    def stop(self) -> None:
        """Stop serving and close everything (idempotent)."""
        self.web.stop()
        self.backend.close()

    def __enter__(self) -> UiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def run_ui(conf: Mapping[str, Any], *, nimbus_address: str | None = None,
           echo: Callable[[str], Any] = print, stop: threading.Event | None = None) -> int:
    """Serve in the foreground until ``stop`` is set (the CLI sets it on SIGTERM / Ctrl-C)."""
    stop = stop or threading.Event()
    server = UiServer(conf, nimbus_address=nimbus_address).start()
    every = server.host in ("0.0.0.0", "::", "")
    echo(f"stormpy UI serving on {server.bound}" + (f" (every interface; {server.url} from this host)"
                                                     if every else f" ({server.url})")
         + f", Nimbus {server.backend.client.address}; metrics on {server.url}/metrics")
    try:
        server.wait(stop)
    finally:
        server.stop()
    return 0
