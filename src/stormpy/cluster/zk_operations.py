"""The bounded operation runner of :class:`~stormpy.cluster.storage.ZkStorage`: how one
operation (or a watch's set-up) waits for ZooKeeper, retries after a connection loss, gives up at
its deadline, and fails fast once the storage shuts down (the contract is the storage's module
docstring).

:class:`ZkOperations` holds the storage's shutdown flags (plain booleans, so setting them is safe
in a signal handler; waits poll them every ``SLICE_SECS``) and runs single attempts under the
kazoo client's configured ``client.retry``, whose ``interrupt`` is :meth:`ZkOperations.interrupted`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError, ConnectionLoss, KazooException
from kazoo.interfaces import IAsyncResult
from kazoo.retry import InterruptedError as RetryInterrupted
from kazoo.retry import RetryFailedError

from stormpy.cluster.errors import ClusterStateError, ZkConnectionError
from stormpy.cluster.watches import Watch

__all__ = ["SLICE_SECS", "Attempt", "Wait", "ZkOperations"]

T = TypeVar("T")

#: Longest single wait for an answer; bounds how late an operation notices a shutdown or its deadline.
SLICE_SECS = 0.1

#: How an attempt waits for one kazoo request: its value, or the kazoo exception it failed with.
Wait = Callable[[IAsyncResult], Any]
#: One try of an operation, given the bounded ``wait`` of its requests.
Attempt = Callable[[Wait], T]


class ZkOperations:
    """Runs the operations of one storage on ``hosts`` within ``timeout_secs`` each.

    ``client`` is set by the storage once it built its kazoo client (whose retry's interrupt is
    :meth:`interrupted`, so it exists before the client does).
    """

    def __init__(self, hosts: str, timeout_secs: float) -> None:
        self.hosts = hosts
        self.timeout_secs = timeout_secs
        self.client: KazooClient | None = None
        #: no operation waits for a lost connection any more (begin_shutdown)
        self.shutting_down = False
        #: the storage is closing: every operation is abandoned
        self.closing = False

    def _connected(self) -> bool:
        return self.client is not None and bool(self.client.connected)

    def interrupted(self) -> bool:
        """The interrupt of ``client.retry``: stop retrying when closing, or stopping without a
        connection."""
        return self.closing or (self.shutting_down and not self._connected())

    def check_abort(self, op: str, path: str, deadline: float | None = None,
                    problem: str = "could not reach") -> None:
        """Raise ZkConnectionError when an operation must stop waiting (closed, shutting down
        without a connection, or past ``deadline``); ``problem`` completes "the operation ... hosts"."""
        if self.closing:
            raise ZkConnectionError(f"ZooKeeper {op} {path} abandoned: the storage was closed")
        if self.shutting_down and not self._connected():
            raise ZkConnectionError(f"ZooKeeper {op} {path} abandoned: no connection to {self.hosts} "
                                    "and the daemon is stopping (not waiting for it)")
        if deadline is not None and time.monotonic() >= deadline:
            raise ZkConnectionError(f"ZooKeeper {op} {path} failed: {problem} {self.hosts} within "
                                    f"{self.timeout_secs:g} s (no usable connection)")

    def run(self, op: str, path: str, attempt: Attempt[T]) -> T:
        """Run ``attempt`` (one try of the operation; it waits for its kazoo requests through the
        function it is given) under ``client.retry``: only while connected, again after a
        connection loss, within the operation timeout."""
        client = self.client
        assert client is not None, "ZkOperations.client is set by the storage"
        deadline = time.monotonic() + self.timeout_secs

        def wait(result: IAsyncResult) -> Any:
            """The request's value, or the kazoo exception it failed with, within the deadline."""
            while not result.wait(min(SLICE_SECS, max(0.0, deadline - time.monotonic()))):
                self.check_abort(op, path, deadline, "got no answer from")
            return result.get(block=False)

        def once() -> T:
            self.check_abort(op, path)
            if not client.connected:
                raise ConnectionLoss("not connected")  # client.retry backs off until it returns
            return attempt(wait)

        try:
            return client.retry(once)  # kazoo runs a fresh copy of the configured retry per call
        except RetryInterrupted:
            self.check_abort(op, path)
            raise ZkConnectionError(f"ZooKeeper {op} {path} abandoned: the daemon is stopping") from None
        except RetryFailedError as exc:
            raise ZkConnectionError(f"ZooKeeper {op} {path} failed: could not reach {self.hosts} within "
                                    f"{self.timeout_secs:g} s (no usable connection)") from exc
        except ConnectionClosedError as exc:
            raise ZkConnectionError(f"ZooKeeper {op} {path} abandoned: the storage was closed") from exc
        except KazooException as exc:
            raise ClusterStateError(f"ZooKeeper {op} {path} failed: {type(exc).__name__} {exc}") from exc

    def arm(self, op: str, handle: Watch) -> Watch:
        """Set ``handle``'s recipe up on a kazoo thread and wait (bounded) for its first callback;
        cancel the watch and raise ZkConnectionError when it does not come in time."""
        client = self.client
        assert client is not None, "ZkOperations.client is set by the storage"
        deadline = time.monotonic() + self.timeout_secs
        client.handler.spawn(handle.run)
        while not handle.first_call.wait(min(SLICE_SECS, max(0.0, deadline - time.monotonic()))):
            try:
                self.check_abort(op, handle.path, deadline)
            except ZkConnectionError:
                handle.cancel()
                raise
        return handle
