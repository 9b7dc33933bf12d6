"""AckerCore: what an acker task does with each acker message, over its AckLedger.

Kept apart from the ``__acker`` bolt so that the worker (compiled with it) calls it directly for
acker tasks in its own process: spout inits, the per-round aggregated acks and the replies never
go through the interpreter or a queue. Replies leave through ``reply(spout_task, stream,
[root])``, which the worker points at the acker task's direct delivery.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from stormpy.acker.ledger import COMPLETED, AckLedger
from stormpy.acker.streams import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET_TIMEOUT

#: reply(spout task, stream, values): tell a spout task about one of its roots
Reply = Callable[[int, str, list[int]], None]


def _no_reply(task: int, stream: str, values: list[int]) -> None:
    raise RuntimeError("AckerCore.reply was not set")


class AckerCore:
    """One acker task's state and message handling. Roots are spread over ackers by
    ``root % n_ackers``; every message about a root reaches the same core."""

    def __init__(self, reply: Reply | None = None) -> None:
        self.ledger = AckLedger()
        self.reply: Reply = reply or _no_reply
        #: the tasks an ``__ack_init`` may name (set by the worker; empty: any int)
        self.spout_tasks: Collection[int] = frozenset()
        #: acker messages ``handle`` refused (malformed values), never raised
        self.rejected = 0

    def ack_edges(self, root: int, xor: int) -> None:
        """Apply an (aggregated) ``__ack_ack [root, xor]``: the worker calls this directly with
        the XOR of all acks of a loop round for acker tasks it runs itself."""
        spout_task = self.ledger.ack_completed(root, xor)
        if spout_task is not None:
            self.reply(spout_task, ACK_ACK, [root])

    def init(self, root: int, xor: int, spout_task: int) -> None:
        """Apply ``__ack_init [root, xor, spout_task]`` (a spout in this worker calls it
        directly). The root completes here when all its acks arrived before the init."""
        outcome = self.ledger.init(root, xor, spout_task)
        if outcome is not None:
            self.reply(spout_task, ACK_ACK if outcome.kind == COMPLETED else ACK_FAIL, [root])

    def handle(self, stream: str, values: list[Any]) -> None:
        """Apply one acker message (``__ack_init [root, xor, spout_task]``, ``__ack_ack`` with
        one or more ``root, xor`` pairs, ``__ack_fail [root]`` or ``__ack_reset_timeout
        [root]``); other streams are ignored. Messages arrive from other workers, so values that
        do not fit (not ints, a wrong count, an unknown spout task) are counted in ``rejected``
        and ignored, never raised."""
        if type(values) is not list or not _ints(values):
            self.rejected += 1
            return
        n = len(values)
        if stream == ACK_ACK:  # [root, xor] pairs: one or several (a worker's round of acks)
            if n < 2 or n % 2:
                self.rejected += 1
                return
            for i in range(0, n - 1, 2):
                self.ack_edges(values[i], values[i + 1])
            return
        if stream == ACK_INIT:
            if n != 3 or (self.spout_tasks and values[2] not in self.spout_tasks):
                self.rejected += 1
                return
            self.init(values[0], values[1], values[2])
            return
        if stream != ACK_FAIL and stream != ACK_RESET_TIMEOUT:
            return
        if n != 1:
            self.rejected += 1
            return
        ledger = self.ledger
        if stream == ACK_RESET_TIMEOUT:
            spout_task = ledger.reset_timeout(values[0])
            if spout_task is not None:
                self.reply(spout_task, ACK_RESET_TIMEOUT, [values[0]])
            return
        outcome = ledger.fail(values[0])  # a fail can only fail its root
        if outcome is not None:
            self.reply(outcome.spout_task, ACK_FAIL, [outcome.root])

    def rotate(self) -> None:
        """Expire the ledger's oldest bucket (on the acker's tick)."""
        self.ledger.rotate()


def _ints(values: list[Any]) -> bool:
    return all(type(v) is int for v in values)
