"""The transport between workers: batches of encoded tuples addressed to peer workers.

A worker calls ``send``/``receive`` from its executor loop thread only; ``wake`` may be called
from any thread to cut a ``wait`` short. Implementations never drop a frame: ``send`` returns
False when the peer cannot take more now (the worker keeps the frame and applies backpressure).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any


class Transport(ABC):
    """Moves frames (bytes) between workers, each worker known by a peer key."""

    @abstractmethod
    def set_peers(self, peers: Mapping[str, str]) -> None:
        """Peer key → address of every other worker this one may send to (replaces the old map;
        connections to peers no longer listed are closed)."""

    @abstractmethod
    def send(self, peer: str, frame: bytes) -> bool:
        """Queue ``frame`` for ``peer``; False (frame not taken) when the peer's queue is full."""

    @abstractmethod
    def receive(self, max_frames: int) -> list[Any]:
        """Frames that have arrived, without blocking (at most ``max_frames``): bytes-like
        objects (``bytes``, or the transport's own frame type)."""

    def sender(self, frame: Any) -> str:
        """Where a received ``frame`` came from, as far as the transport knows ("" if not)."""
        return ""

    @abstractmethod
    def wait(self, timeout: float) -> None:
        """Block until a frame arrives, ``wake`` is called, or ``timeout`` seconds pass."""

    @abstractmethod
    def wake(self) -> None:
        """Interrupt ``wait`` (thread-safe)."""

    @abstractmethod
    def close(self) -> None:
        """Release sockets; further calls are errors."""


class NoTransport(Transport):
    """For a worker that holds every task (local mode): nothing to send, waits on an event."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set_peers(self, peers: Mapping[str, str]) -> None:
        if peers:
            raise ValueError("a worker without transport cannot have peers")

    def send(self, peer: str, frame: bytes) -> bool:
        raise RuntimeError(f"no transport to send to peer {peer!r}")

    def receive(self, max_frames: int) -> list[Any]:
        return []

    def wait(self, timeout: float) -> None:
        self._event.wait(timeout)
        self._event.clear()

    def wake(self) -> None:
        self._event.set()

    def close(self) -> None:
        self._event.set()
