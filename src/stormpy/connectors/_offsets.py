"""The contiguous acked prefix: what a partitioned-log spout may checkpoint.

For a log spout whose positions may be emitted in any order (the Kafka spout's offsets; a spout
of another log may use it too): a spout emits records of one partition at *positions*, the
topology acks them in any order, and the spout may only checkpoint (commit) a position once every
record it emitted before that position has been acked. Positions are any totally ordered hashable
values (ints for Kafka offsets) and need not be contiguous: a gap where nothing was emitted (a
compacted record, a transaction marker) does not block the prefix. Emits need not increase
either: after a retry seeks back, or a rebalance hands a partition over, lower offsets are
emitted again, and an ack may come for a position this instance never saw emitted; so positions
are kept sorted (bisect) and the prefix is cut by ``commit_through`` once per commit period.

The Kinesis spout keeps its own :class:`~stormpy.connectors.kinesis._tracker.InflightRecordTracker`
on purpose: a shard's records are emitted strictly in sequence order (a replay re-emits a record
the tracker holds), so an emit-order linked list moves the checkpoint on every ack in constant
time, holds the records to replay and counts their retries, which this class does not.

:class:`AckedPrefix` contract (one instance per partition, not thread-safe):

* ``emit(p)`` records an emitted position; emitting it again (a replay) changes nothing.
  ``emit_run(ps)`` records several at once (the batch path: one call per run of new positions).
* ``ack(p)`` marks ``p`` acked (an ack implies the emit). Positions at or below the last commit
  are ignored (late acks after a commit or a replay) and ``ack`` returns False for them.
  ``ack_emitted(p)`` is ``ack`` for a position known to be emitted (the spout's in-flight
  tuples): one set insertion instead of a search; ``ack_emitted_many(ps)`` for several.
* ``committable()`` is the last position of the longest run of uncommitted emitted positions,
  taken in order, that are all acked; None when the first uncommitted one is not acked.
* ``commit_through(p)`` forgets every position ``<= p`` and returns how many of them were acked.
* ``pending`` is the number of emitted, uncommitted positions (acked or not); ``nth(n)`` the
  n-th smallest of them (1-based); ``latest`` the largest position ever emitted.

``committable`` scans only what it has not seen acked before, so calling it often is cheap.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import islice
from typing import Any

__all__ = ["AckedPrefix"]


class AckedPrefix:
    """Emitted and acked positions of one partition since the last commit (see module doc)."""

    __slots__ = ("_acked", "_emitted", "_floor", "_latest", "_run")

    def __init__(self) -> None:
        self._emitted: list[Any] = []   # sorted, uncommitted emitted positions
        self._acked: set[Any] = set()   # acked, uncommitted positions (a subset of _emitted)
        self._run = 0                   # _emitted[:_run] are known to be acked
        self._floor: Any = None         # last committed position (None before the first commit)
        self._latest: Any = None

    def emit(self, position: Any) -> None:
        """Record an emitted position (idempotent)."""
        if self._floor is not None and position <= self._floor:
            return
        emitted = self._emitted
        if not emitted or position > emitted[-1]:
            emitted.append(position)
        else:
            i = bisect_left(emitted, position)
            if i < len(emitted) and emitted[i] == position:
                return
            emitted.insert(i, position)
            if i < self._run:
                self._run = i  # an unacked position now lies inside the scanned run
        if self._latest is None or position > self._latest:
            self._latest = position

    def emit_run(self, positions: list[Any]) -> None:
        """``emit`` each of ``positions``. When they increase strictly and all lie above every
        position recorded so far (new records, as a fetch returns them) they are appended in one
        step; otherwise they are recorded one by one."""
        if not positions:
            return
        prev = positions[0]
        latest, floor = self._latest, self._floor
        if (latest is None or prev > latest) and (floor is None or prev > floor):
            for p in islice(positions, 1, None):
                if p <= prev:
                    break
                prev = p
            else:
                self._emitted.extend(positions)
                self._latest = prev
                return
        for p in positions:
            self.emit(p)

    def ack_emitted(self, position: Any) -> bool:
        """``ack`` for a position recorded by ``emit`` and not acked since (no search)."""
        floor = self._floor
        if floor is not None and position <= floor:
            return False
        self._acked.add(position)
        return True

    def ack_emitted_many(self, positions: list[Any]) -> None:
        """``ack_emitted`` each of ``positions`` (one set update when all lie above the floor)."""
        floor = self._floor
        if floor is None or min(positions) > floor:
            self._acked.update(positions)
        else:
            self._acked.update(p for p in positions if p > floor)

    def ack(self, position: Any) -> bool:
        """Mark ``position`` acked (emitting it first if needed); False when it is at or below
        the last commit and so was ignored."""
        if self._floor is not None and position <= self._floor:
            return False
        self.emit(position)
        self._acked.add(position)
        return True

    def is_acked(self, position: Any) -> bool:
        return position in self._acked

    def is_emitted(self, position: Any) -> bool:
        """True when ``position`` is emitted and not yet committed."""
        emitted = self._emitted
        i = bisect_left(emitted, position)
        return i < len(emitted) and emitted[i] == position

    def committable(self) -> Any:
        """The last position of the acked prefix, or None (see module doc)."""
        emitted, acked, run = self._emitted, self._acked, self._run
        n = len(emitted)
        while run < n and emitted[run] in acked:
            run += 1
        self._run = run
        return emitted[run - 1] if run else None

    def commit_through(self, position: Any) -> int:
        """Forget every position ``<= position``; returns how many acked ones were dropped."""
        emitted = self._emitted
        k = bisect_right(emitted, position)
        dropped = 0
        if k:
            acked = self._acked
            before = len(acked)
            acked.difference_update(emitted[:k])
            dropped = before - len(acked)
            del emitted[:k]
        self._run = max(0, self._run - k)
        if self._floor is None or position > self._floor:
            self._floor = position
        return dropped

    @property
    def pending(self) -> int:
        """Emitted positions not yet committed (acked or not)."""
        return len(self._emitted)

    @property
    def acked_count(self) -> int:
        """Acked positions not yet committed."""
        return len(self._acked)

    def nth(self, n: int) -> Any:
        """The ``n``-th smallest uncommitted emitted position (1-based); IndexError when there are
        fewer than ``n``."""
        if n < 1 or n > len(self._emitted):
            raise IndexError(f"asked for uncommitted position #{n}, there are {len(self._emitted)}")
        return self._emitted[n - 1]

    def first(self) -> Any:
        """The smallest uncommitted emitted position, or None."""
        return self._emitted[0] if self._emitted else None

    @property
    def latest(self) -> Any:
        """The largest position ever emitted (None before the first emit)."""
        return self._latest

    @property
    def floor(self) -> Any:
        """The last position passed to ``commit_through`` (None before the first commit)."""
        return self._floor

    def __repr__(self) -> str:
        return (f"AckedPrefix(pending={len(self._emitted)}, acked={len(self._acked)}, "
                f"floor={self._floor!r}, latest={self._latest!r})")
