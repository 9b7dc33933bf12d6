"""AckLedger: the XOR bookkeeping of one acker task (pure logic, no I/O).

For each spout-tuple root the ledger keeps one 64-bit value: the XOR of every edge id it has been
told about. ``init`` contributes the XOR of the spout tuple's edges, every ``ack`` contributes the
acked edge XOR the edges of the children emitted anchored to it. Each edge id enters exactly twice
(once when created, once when acked), so the value is 0 exactly when the whole tree is acked.
Messages may arrive in any order (an ack can beat the init); a root completes only when its value
is 0 *and* its init (which names the spout task) has arrived.
"""

from __future__ import annotations

from dataclasses import dataclass

from stormpy.acker.rotating import RotatingMap

COMPLETED = "ack"
FAILED = "fail"


@dataclass
class _Entry:
    __slots__ = ("val", "spout_task", "failed")
    val: int
    spout_task: int | None
    failed: bool


@dataclass(frozen=True)
class Outcome:
    """A decided root: tell ``spout_task`` that ``root`` was acked (``COMPLETED``) or ``FAILED``."""

    kind: str
    root: int
    spout_task: int


class AckLedger:
    """Tracks pending roots; entries not decided within the rotations expire silently (the spout
    keeps its own timeout and fails the tuple there)."""

    def __init__(self, buckets: int = 3) -> None:
        self._pending: RotatingMap[int, _Entry] = RotatingMap(buckets)

    def __len__(self) -> int:
        return len(self._pending)

    def __contains__(self, root: int) -> bool:
        return root in self._pending

    def _entry(self, root: int) -> _Entry:
        e = self._pending.get(root)
        if e is None:
            e = _Entry(0, None, False)
            self._pending.put(root, e)
        return e

    def _decide(self, root: int, e: _Entry) -> Outcome | None:
        if e.spout_task is None:
            return None
        if e.failed:
            self._pending.pop(root)
            return Outcome(FAILED, root, e.spout_task)
        if e.val == 0:
            self._pending.pop(root)
            return Outcome(COMPLETED, root, e.spout_task)
        return None

    def init(self, root: int, xor: int, spout_task: int) -> Outcome | None:
        """A spout emitted ``root`` with edges whose XOR is ``xor``."""
        e = self._entry(root)
        e.val ^= xor
        e.spout_task = spout_task
        return self._decide(root, e)

    def ack(self, root: int, xor: int) -> Outcome | None:
        """A tuple of ``root``'s tree was acked: ``xor`` = its edge ^ its children's edges."""
        e = self._entry(root)
        e.val ^= xor
        return self._decide(root, e)

    def fail(self, root: int) -> Outcome | None:
        """A tuple of ``root``'s tree failed: the root fails (once its spout task is known)."""
        e = self._entry(root)
        e.failed = True
        return self._decide(root, e)

    def reset_timeout(self, root: int) -> int | None:
        """Keep ``root`` alive; returns its spout task (to forward the reset) when known."""
        e = self._pending.get(root)
        if e is None:
            return None
        self._pending.touch(root)
        return e.spout_task

    def rotate(self) -> list[int]:
        """Expire the oldest bucket; returns the dropped roots."""
        return list(self._pending.rotate())
