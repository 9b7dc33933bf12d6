"""A real ZooKeeper server for a test fixture, started the one way every suite does it: skipped
when ZooKeeper is not installed, a failure in CI (where it must be), stopped at the end."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

import pytest

from stormpy.cluster.zkserver import INSTALL_HINT, ZooKeeperNotFound, ZooKeeperServer

__all__ = ["running_zookeeper"]


@contextlib.contextmanager
def running_zookeeper(heap_mb: int) -> Iterator[ZooKeeperServer]:
    """A started :class:`ZooKeeperServer` with ``heap_mb`` of heap, stopped on exit (resumed
    first, should a test have paused it with SIGSTOP). Skips the test when ZooKeeper is not
    installed; fails it instead in CI (``CI=true``), naming how to install it."""
    server = ZooKeeperServer(heap_mb=heap_mb)
    try:
        server.start()
    except ZooKeeperNotFound as exc:
        if os.environ.get("CI", "").lower() == "true":
            hint = "" if INSTALL_HINT in str(exc) else f"; {INSTALL_HINT}"
            pytest.fail(f"ZooKeeper is required in CI: {exc}{hint}", pytrace=False)
        pytest.skip(f"ZooKeeper not installed: {exc}")
    try:
        yield server
    finally:
        if server.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(server.pid, signal.SIGCONT)
        server.stop()
