"""The ``__acker`` system bolt: applies ack messages to its ledger and tells spout tasks.

Inputs (values): ``__ack_init`` [root, xor, spout_task], ``__ack_ack`` [root, xor],
``__ack_fail`` [root], ``__ack_reset_timeout`` [root]; tick tuples rotate the ledger.
Outputs, direct to the spout task: ``__ack_ack`` [root], ``__ack_fail`` [root],
``__ack_reset_timeout`` [root].
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy.acker.ledger import COMPLETED, AckLedger
from stormpy.acker.streams import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET_TIMEOUT
from stormpy.topology import Bolt, TopologyContext, Tuple


class AckerBolt(Bolt):
    """One acker task. Roots are spread over ackers by ``root % n_ackers``."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.ledger = AckLedger()

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            self.ledger.rotate()
        else:
            self.handle(tup.stream, tup.values)

    def ack_edges(self, root: int, xor: int) -> None:
        """Apply an (aggregated) ``__ack_ack`` for ``root``; the worker calls this directly with
        the XOR of all acks of a loop round for acker tasks it runs itself."""
        spout_task = self.ledger.ack_completed(root, xor)
        if spout_task is not None:
            self.emit_direct(spout_task, [root], stream=ACK_ACK)

    def handle(self, stream: str, values: list[int]) -> None:
        """Apply one acker message; the worker calls this directly for same-worker senders."""
        ledger = self.ledger
        if stream == ACK_ACK:
            outcome = ledger.ack(values[0], values[1])
        elif stream == ACK_INIT:
            outcome = ledger.init(values[0], values[1], values[2])
        elif stream == ACK_FAIL:
            outcome = ledger.fail(values[0])
        elif stream == ACK_RESET_TIMEOUT:
            spout_task = ledger.reset_timeout(values[0])
            if spout_task is not None:
                self.emit_direct(spout_task, [values[0]], stream=ACK_RESET_TIMEOUT)
            return
        else:
            return
        if outcome is not None:
            self.emit_direct(outcome.spout_task, [outcome.root],
                             stream=ACK_ACK if outcome.kind == COMPLETED else ACK_FAIL)
