"""The ``__acker`` system bolt: applies ack messages to its ledger and tells spout tasks.

Inputs (values): ``__ack_init`` [root, xor, spout_task], ``__ack_ack`` [root, xor],
``__ack_fail`` [root], ``__ack_reset_timeout`` [root]; tick tuples rotate the ledger.
Outputs, direct to the spout task: ``__ack_ack`` [root], ``__ack_fail`` [root],
``__ack_reset_timeout`` [root]. The work is done by its ``core`` (see ``acker/core.py``).
"""

from __future__ import annotations

from stormpy.acker.core import AckerCore, Reply
from stormpy.acker.ledger import AckLedger
from stormpy.topology import Bolt, Tuple


class AckerBolt(Bolt):
    """One acker task. Its replies go out with ``emit_direct`` unless the worker that runs it
    calls ``attach``."""

    def __init__(self) -> None:
        self.core = AckerCore(self._emit_reply)

    def attach(self, reply: Reply) -> AckerCore:
        """Let the worker that runs this acker bypass the bolt: replies go to ``reply(spout_task,
        stream, [root])`` instead of ``emit_direct``, and the returned core takes the worker's
        acker messages directly (``ack_edges``, ``init``, ``handle``), with no tuple or queue."""
        self.core.reply = reply
        return self.core

    @property
    def ledger(self) -> AckLedger:
        return self.core.ledger

    def _emit_reply(self, task: int, stream: str, values: list[int]) -> None:
        self.emit_direct(task, values, stream=stream)

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            self.core.rotate()
        else:
            self.core.handle(tup.stream, tup.values)
