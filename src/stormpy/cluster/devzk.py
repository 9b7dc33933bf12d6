"""``stormpy dev-zookeeper``: run one real ZooKeeper in the foreground for development.

Like Storm's ``storm dev-zookeeper``: a standalone server on ``storm.zookeeper.port`` whose data
survives restarts in a directory (default ``<storm.local.dir>/dev-zookeeper``). The CLI command only
parses options and calls :func:`run_dev_zookeeper`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from stormpy.cluster.zkserver import ZooKeeperServer
from stormpy.config import DEFAULTS, local_dir
from stormpy.host.daemon import child_exit_watch, serve_until_stopped

__all__ = ["default_dev_data_dir", "run_dev_zookeeper"]


def default_dev_data_dir(conf: Mapping[str, Any]) -> Path:
    """``<storm.local.dir>/dev-zookeeper`` (``storm.local.dir``'s default from :mod:`stormpy.config`)."""
    return local_dir(conf) / "dev-zookeeper"


def run_dev_zookeeper(port: int | None = None, data_dir: str | os.PathLike[str] | None = None, *,
                      host: str = "127.0.0.1", heap_mb: int = 256,
                      echo: Callable[[str], Any] = print,
                      stop_event: threading.Event | None = None,
                      on_ready: Callable[[ZooKeeperServer], Any] | None = None) -> int:
    """Run ZooKeeper on ``host:port`` with persistent ``data_dir`` until stopped; return an exit code.

    Stops on SIGINT/SIGTERM (handlers are installed only when called from the main thread) or when
    ``stop_event`` is set: then returns 0. If the server dies on its own, prints its log tail and
    returns its exit status (1 when unknown). ``echo`` receives human-readable status lines;
    ``on_ready`` is called with the running server. Raises ZooKeeperNotFound / ZooKeeperStartError
    when it cannot start. ``port`` and ``data_dir`` default to ``storm.zookeeper.port``'s default
    and :func:`default_dev_data_dir` of the defaults.
    """
    if port is None:
        port = int(DEFAULTS["storm.zookeeper.port"])
    if data_dir is None:
        data_dir = default_dev_data_dir({})
    server = ZooKeeperServer(port, host=host, data_dir=data_dir, heap_mb=heap_mb, die_with_parent=True)

    def start() -> None:
        server.start()
        echo(f"ZooKeeper serving on {server.connect_string} (data {server.data_dir}, log {server.log_path}); "
             "Ctrl-C to stop")
        if on_ready is not None:
            on_ready(server)

    exited = child_exit_watch(server, "ZooKeeper", echo)
    return serve_until_stopped(start, server.stop, exited, stopping="stopping ZooKeeper", echo=echo,
                               stop_event=stop_event)
