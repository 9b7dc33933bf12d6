"""A real Redis server for a test fixture, started the way every suite starts its servers: skipped
when ``redis-server`` is not installed, a failure in CI (where it must be), stopped at the end."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from stormpy.local.redis_server import INSTALL_HINT, RedisNotFound, RedisServer
from stormpy.state.redis_store import RedisConfig, RedisStore

__all__ = ["fresh_redis_store", "running_redis"]


@contextlib.contextmanager
def running_redis(server: RedisServer | None = None, **kwargs: Any) -> Iterator[RedisServer]:
    """``server`` started (by default a :class:`RedisServer` on a free port, ``kwargs`` going to
    it; a subclass, e.g. one run inside a network namespace, where a test needs it), stopped on
    exit (resumed first, should a test have paused it with SIGSTOP). Skips the test when Redis
    is not installed; fails it instead in CI (``CI=true``), naming how to install it."""
    if server is None:
        server = RedisServer(**kwargs)
    try:
        server.start()
    except RedisNotFound as exc:
        if os.environ.get("CI", "").lower() == "true":
            hint = "" if INSTALL_HINT in str(exc) else f"; {INSTALL_HINT}"
            pytest.fail(f"Redis is required in CI: {exc}{hint}", pytrace=False)
        pytest.skip(f"Redis not installed: {exc}")
    try:
        yield server
    finally:
        if server.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(server.pid, signal.SIGCONT)
        server.stop()


_stores = itertools.count()


def fresh_redis_store(server: RedisServer, *segments: str) -> RedisStore:
    """A store of its own (a key prefix no other test uses) on ``server``; the caller closes it."""
    config = RedisConfig(server.host, server.port, prefix=f"test{os.getpid()}-{next(_stores)}")
    return RedisStore(config, segments)
