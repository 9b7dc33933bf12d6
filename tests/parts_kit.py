"""The real parts the tests need (servers, tools, packages): one policy when a part is missing,
and one way to run a real server for a test.

Contract: a test that needs a part which is not installed is skipped, except in CI
(``CI=true``), where every part must be installed: there it fails, naming the part, why it is
missing and how to install it (:func:`unavailable`). :func:`running_server` starts a server
(``start``, ``stop``, ``pid``: the :class:`stormpy.host.child_server` servers), applies that
policy when its start raises the part's not-found error, and always stops it, resumed first
should the test have paused it with SIGSTOP. :func:`running_zookeeper` and :func:`running_redis`
are the two servers the tests start themselves; ``tests/conftest.py`` holds one session fixture
of each (``zookeeper``, ``redis_server``)."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
from collections.abc import Iterator
from typing import Any, NoReturn, Protocol, TypeVar

import pytest

from stormpy.cluster.zkserver import INSTALL_HINT as ZOOKEEPER_INSTALL_HINT
from stormpy.cluster.zkserver import ZooKeeperNotFound, ZooKeeperServer
from stormpy.local._redis_server import INSTALL_HINT as REDIS_INSTALL_HINT
from stormpy.local._redis_server import RedisNotFound, RedisServer
from stormpy.state._redis_store import RedisConfig, RedisStore

__all__ = ["fresh_redis_store", "in_ci", "running_redis", "running_server", "running_zookeeper",
           "unavailable"]


def in_ci() -> bool:
    """True under CI (``CI=true``), where every part must be installed."""
    return os.environ.get("CI", "").lower() == "true"


def unavailable(part: str, reason: str, hint: str = "") -> NoReturn:
    """``part`` is missing for ``reason``: skip the test, or fail it in CI, adding ``hint`` (how
    to install it) unless ``reason`` already says it."""
    if in_ci():
        extra = f"; {hint}" if hint and hint not in reason else ""
        pytest.fail(f"{part} is required in CI: {reason}{extra}", pytrace=False)
    pytest.skip(f"{part} unavailable: {reason}")


class _Server(Protocol):
    @property
    def pid(self) -> int | None: ...

    def start(self) -> Any: ...

    def stop(self) -> Any: ...


S = TypeVar("S", bound=_Server)


@contextlib.contextmanager
def running_server(server: S, part: str, not_found: type[Exception], hint: str) -> Iterator[S]:
    """``server`` started (``part`` :func:`unavailable` when its start raises ``not_found``),
    stopped on exit (resumed first, should a test have paused it with SIGSTOP)."""
    try:
        server.start()
    except not_found as exc:
        unavailable(part, str(exc), hint)
    try:
        yield server
    finally:
        if server.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(server.pid, signal.SIGCONT)
        server.stop()


def running_zookeeper(heap_mb: int, **kwargs: Any) -> contextlib.AbstractContextManager[ZooKeeperServer]:
    """A started :class:`ZooKeeperServer` with ``heap_mb`` of heap (``kwargs`` go to it)."""
    return running_server(ZooKeeperServer(heap_mb=heap_mb, **kwargs), "ZooKeeper",
                          ZooKeeperNotFound, ZOOKEEPER_INSTALL_HINT)


def running_redis(server: RedisServer | None = None,
                  **kwargs: Any) -> contextlib.AbstractContextManager[RedisServer]:
    """``server`` started (by default a :class:`RedisServer` on a free port, ``kwargs`` going to
    it; a subclass, e.g. one run inside a network namespace, where a test needs it)."""
    return running_server(server if server is not None else RedisServer(**kwargs), "Redis",
                          RedisNotFound, REDIS_INSTALL_HINT)


_stores = itertools.count()


def fresh_redis_store(server: RedisServer, *segments: str) -> RedisStore:
    """A store of its own (a key prefix no other test uses) on ``server``; the caller closes it."""
    config = RedisConfig(server.host, server.port, prefix=f"test{os.getpid()}-{next(_stores)}")
    return RedisStore(config, segments)
