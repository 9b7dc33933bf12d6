"""In-process transport: several workers in one process exchanging real encoded frames.

LocalCluster uses it to run a topology as several workers (Storm's local mode with "real
messaging"): tuples between workers are serialised exactly as over ZeroMQ, but travel through
thread-safe deques instead of sockets.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping

from stormpy.messaging.transport import Transport


class InprocHub:
    """The shared mailboxes; one per peer key."""

    def __init__(self, high_water_mark: int = 1000) -> None:
        self.high_water_mark = high_water_mark
        self._inboxes: dict[str, deque[bytes]] = {}
        self._events: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def transport(self, key: str) -> InprocTransport:
        """The transport of the worker known to its peers as ``key``."""
        with self._lock:
            if key in self._inboxes:
                raise ValueError(f"peer key {key!r} is already in use")
            self._inboxes[key] = deque()
            self._events[key] = threading.Event()
        return InprocTransport(self, key)

    def inbox(self, key: str) -> tuple[deque[bytes], threading.Event]:
        try:
            return self._inboxes[key], self._events[key]
        except KeyError:
            raise KeyError(f"no in-process worker {key!r}") from None


class InprocTransport(Transport):
    """One worker's end of an ``InprocHub``."""

    def __init__(self, hub: InprocHub, key: str) -> None:
        self._hub = hub
        self.key = key
        self._inbox, self._event = hub.inbox(key)

    def set_peers(self, peers: Mapping[str, str]) -> None:
        """Nothing to connect: every worker of the hub is reached by its key."""

    def send(self, peer: str, frame: bytes) -> bool:
        inbox, event = self._hub.inbox(peer)
        if len(inbox) >= self._hub.high_water_mark:
            return False
        inbox.append(frame)
        event.set()
        return True

    def receive(self, max_frames: int) -> list[bytes]:
        inbox = self._inbox
        out: list[bytes] = []
        while inbox and len(out) < max_frames:
            out.append(inbox.popleft())
        return out

    def wait(self, timeout: float) -> None:
        if not self._inbox:
            self._event.wait(timeout)
        self._event.clear()

    def wake(self) -> None:
        self._event.set()

    def close(self) -> None:
        self._event.set()
