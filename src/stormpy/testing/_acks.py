"""Ack tracking for tests (Storm's ``AckFailMapTracker``, ``AckTracker`` and the ``checker``
helpers of its acking tests): which message ids a spout saw acked or failed, with assertions."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any, Protocol

__all__ = ["AckFailDelegate", "AckFailMapTracker"]


class AckFailDelegate(Protocol):
    """Anything told of a spout's acks and fails (Storm's ``IAckFailDelegate``)."""

    def ack(self, msg_id: Any) -> None: ...

    def fail(self, msg_id: Any) -> None: ...


class AckFailMapTracker:
    """Thread-safe record of the message ids acked and failed, in order (an id acked twice is
    listed twice). An ``AckFailDelegate``: give it to ``FeederSpout.set_ack_fail_delegate`` or to
    ``AckTracker``; each ``FeederSpout`` also has one (``feeder.tracker``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._acked: list[Any] = []
        self._failed: list[Any] = []
        self._acks_checked = 0

    # -- the delegate side (called on the executor loop) ------------------------------------
    def ack(self, msg_id: Any) -> None:
        with self._lock:
            self._acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        with self._lock:
            self._failed.append(msg_id)

    # -- the test side ----------------------------------------------------------------------
    @property
    def acked(self) -> list[Any]:
        with self._lock:
            return list(self._acked)

    @property
    def failed(self) -> list[Any]:
        with self._lock:
            return list(self._failed)

    def is_acked(self, msg_id: Any) -> bool:
        with self._lock:
            return msg_id in self._acked

    def is_failed(self, msg_id: Any) -> bool:
        with self._lock:
            return msg_id in self._failed

    @property
    def num_acks(self) -> int:
        """Acks so far (Storm's ``AckTracker.getNumAcks``)."""
        with self._lock:
            return len(self._acked)

    def reset(self) -> None:
        """Forget every ack and fail."""
        with self._lock:
            self._acked.clear()
            self._failed.clear()
            self._acks_checked = 0

    def assert_acked(self, *msg_ids: Any) -> None:
        """AssertionError naming the ids not acked (and what was acked and failed)."""
        self._assert("acked", msg_ids)

    def assert_failed(self, *msg_ids: Any) -> None:
        """AssertionError naming the ids not failed (and what was acked and failed)."""
        self._assert("failed", msg_ids)

    def assert_not_completed(self, *msg_ids: Any) -> None:
        """AssertionError naming the ids that were acked or failed (still-pending check)."""
        with self._lock:
            done = [m for m in msg_ids if m in self._acked or m in self._failed]
        if done:
            raise AssertionError(f"expected {done!r} to be neither acked nor failed; acked "
                                 f"{self.acked!r}, failed {self.failed!r}")

    def check_acks(self, n: int) -> None:
        """Assert that exactly ``n`` acks arrived since the previous ``check_acks`` (Storm's
        ``checker`` of ``ack-tracking-feeder``); AssertionError saying how many did."""
        with self._lock:
            got = len(self._acked) - self._acks_checked
            self._acks_checked = len(self._acked)
        if got != n:
            raise AssertionError(f"expected {n} acks since the last check, got {got} "
                                 f"(acked so far: {self.acked!r})")

    def _assert(self, what: str, msg_ids: Iterable[Any]) -> None:
        with self._lock:
            seen = self._acked if what == "acked" else self._failed
            missing = [m for m in msg_ids if m not in seen]
            acked, failed = list(self._acked), list(self._failed)
        if missing:
            raise AssertionError(f"expected {missing!r} to be {what}; acked {acked!r}, failed "
                                 f"{failed!r}")
