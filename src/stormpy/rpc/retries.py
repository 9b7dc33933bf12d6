"""Answering a client's retries of a request without executing the request twice.

:class:`RetryAnswers` contract (used by the server's one I/O thread; not thread-safe): a request
id whose answer is among the recent ones is answered from the cache (:meth:`~RetryAnswers.cached`);
a request id still being executed collects the reply envelope of every further attempt
(:meth:`~RetryAnswers.join`), and :meth:`~RetryAnswers.finished` caches the answer and returns
every envelope waiting for it. The cache keeps at most ``max_entries`` answers and ``max_bytes``
bytes, evicting the oldest; an answer larger than ``max_bytes`` is not cached. This holds within
one server process only.
"""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["ResponseCache", "RetryAnswers"]

#: The routing frames of one ZeroMQ request (whom to send the reply to).
Envelope = list[bytes]


class ResponseCache:
    """Recent encoded responses by request id, bounded by count and total bytes (oldest evicted)."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self._entries: OrderedDict[str, bytes] = OrderedDict()
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._bytes = 0

    def get(self, request_id: str) -> bytes | None:
        return self._entries.get(request_id)

    def put(self, request_id: str, data: bytes) -> None:
        if len(data) > self._max_bytes:
            return
        old = self._entries.pop(request_id, None)
        if old is not None:
            self._bytes -= len(old)
        self._entries[request_id] = data
        self._bytes += len(data)
        while len(self._entries) > self._max_entries or self._bytes > self._max_bytes:
            _, evicted = self._entries.popitem(last=False)
            self._bytes -= len(evicted)

    def __len__(self) -> int:
        return len(self._entries)


class RetryAnswers:
    """Recent answers and the requests in flight, by request id (see the module docstring)."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self._cache = ResponseCache(max_entries, max_bytes)
        self._inflight: dict[str, list[Envelope]] = {}

    def cached(self, request_id: str) -> bytes | None:
        """The recent answer to ``request_id``, or None."""
        return self._cache.get(request_id)

    def join(self, request_id: str, envelope: Envelope) -> bool:
        """True when ``request_id`` is being executed: ``envelope`` then gets its answer too."""
        waiting = self._inflight.get(request_id)
        if waiting is None:
            return False
        waiting.append(envelope)
        return True

    def started(self, request_id: str, envelope: Envelope) -> None:
        """``request_id`` is now executed for ``envelope``."""
        self._inflight[request_id] = [envelope]

    def finished(self, request_id: str, data: bytes) -> list[Envelope]:
        """Cache ``data`` as the answer to ``request_id``; the envelopes waiting for it."""
        self._cache.put(request_id, data)
        return self._inflight.pop(request_id, [])
