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
from typing import Any, Final

COMPLETED: Final = "ack"
FAILED: Final = "fail"


@dataclass(frozen=True)
class Outcome:
    """A decided root: tell ``spout_task`` that ``root`` was acked (``COMPLETED``) or ``FAILED``."""

    kind: str
    root: int
    spout_task: int


# An entry is a list [xor value, spout task or None, failed flag]: cheaper than an object on
# the hot path, where every ack touches one.
_VAL: Final = 0
_TASK: Final = 1
_FAILED: Final = 2


class AckLedger:
    """Tracks pending roots in rotating buckets (newest first); entries not decided within the
    rotations expire silently (the spout keeps its own timeout and fails the tuple there)."""

    def __init__(self, buckets: int = 3) -> None:
        if buckets < 2:
            raise ValueError("an AckLedger needs at least 2 buckets")
        # keyed by root ids; typed Any so that, compiled, a method boxes its root into a heap
        # integer once and every dict operation then uses that object (an int-typed key is
        # boxed again for each one, a 62-bit root into a new heap integer every time)
        self._buckets: list[dict[Any, list[Any]]] = [{} for _ in range(buckets)]

    def __len__(self) -> int:
        return sum(len(b) for b in self._buckets)

    def __contains__(self, root: int) -> bool:
        return any(root in b for b in self._buckets)

    def _find(self, root: int) -> tuple[dict[Any, list[Any]], list[Any]] | None:
        for b in self._buckets:
            e = b.get(root)
            if e is not None:
                return b, e
        return None

    def _apply(self, root: int, xor: int, spout_task: int | None, failed: bool) -> Outcome | None:
        for bucket in self._buckets:
            e = bucket.get(root)
            if e is not None:
                break
        else:
            bucket = self._buckets[0]
            e = bucket[root] = [0, None, False]
        e[_VAL] ^= xor
        if spout_task is not None:
            e[_TASK] = spout_task
        if failed:
            e[_FAILED] = True
        task = e[_TASK]
        if task is None:
            return None
        if e[_FAILED]:
            del bucket[root]
            return Outcome(FAILED, root, task)
        if e[_VAL] == 0:
            del bucket[root]
            return Outcome(COMPLETED, root, task)
        return None

    def init(self, root: int, xor: int, spout_task: int) -> Outcome | None:
        """A spout emitted ``root`` with edges whose XOR is ``xor``."""
        buckets = self._buckets
        key: Any = root  # boxed once (see __init__)
        for bucket in buckets:
            if key in bucket:  # acks (or a fail) arrived first
                return self._apply(root, xor, spout_task, False)
        if xor == 0:  # a tuple sent to no task: complete at once
            return Outcome(COMPLETED, root, spout_task)
        buckets[0][key] = [xor, spout_task, False]
        return None

    def ack(self, root: int, xor: int) -> Outcome | None:
        """A tuple of ``root``'s tree was acked: ``xor`` = its edge ^ its children's edges (or
        the XOR of several such acks: XOR is associative, so acks may be aggregated)."""
        task = self.ack_completed(root, xor)
        return None if task is None else Outcome(COMPLETED, root, task)

    def ack_completed(self, root: int, xor: int) -> int | None:
        """``ack`` without building an Outcome (an ack can only complete a root): the spout task
        to tell when ``root`` completed, else None. The acker's per-round hot path."""
        key: Any = root  # boxed once (see __init__)
        for bucket in self._buckets:
            e = bucket.get(key)
            if e is not None:
                break
        else:
            self._buckets[0][key] = [xor, None, False]
            return None
        e[_VAL] ^= xor
        if e[_VAL] == 0 and e[_TASK] is not None and not e[_FAILED]:
            del bucket[key]
            return e[_TASK]
        return None

    def fail(self, root: int) -> Outcome | None:
        """A tuple of ``root``'s tree failed: the root fails (once its spout task is known)."""
        return self._apply(root, 0, None, True)

    def reset_timeout(self, root: int) -> int | None:
        """Keep ``root`` alive; returns its spout task (to forward the reset) when known."""
        found = self._find(root)
        if found is None:
            return None
        bucket, e = found
        del bucket[root]
        self._buckets[0][root] = e
        return e[_TASK]

    def rotate(self) -> list[int]:
        """Expire the oldest bucket; returns the dropped roots."""
        expired = self._buckets.pop()
        self._buckets.insert(0, {})
        return list(expired)
