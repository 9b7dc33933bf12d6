"""Dispatch: where a worker's tuples and acks go.

One ``Dispatch`` per worker, shared by its task runners (which deliver and ack through it on every
emit), the transfer (which installs the entries of tasks in other workers) and the executor loop
(which flushes the round's acks). It holds:

- ``deliver``: the delivery table, indexed by task id. A task of this worker has its queue's
  ``append``; a task of another worker an appender to that peer's outbox (``transfer.py``); a task
  with no known place ``undeliverable`` (dropped and counted; tracked tuples are replayed).
  ``deliver_many`` is the same table for a list of tuples at once (``extend``), used by
  ``emit_many``. ``deliver_batch`` is the same table for a ``ColumnBatch`` (a columnar bolt's
  task: its runner's ``put_batch``; a remote one: one wire record in the peer's outbox).
- ``queued_rows``: per task id, the tuples its queue holds beyond one per item (a queued batch of
  n tuples is one item): queue sizes and backpressure count tuples.
- ``ack_buffer``: root → XOR of the acks bolts made this round, sent once per round; and
  ``run_root`` / ``run_xor``, the open run of ``ack``s of one root not yet in it (consecutive
  acks of one tree, a sentence's words, XOR there: one buffer update per run instead of per
  tuple). ``fold_run`` puts the run into ``ack_buffer``; whatever else writes the buffer folds
  first (so its entries and their order are what one update per ack gives) and ``flush_acks``
  folds before sending.
- ``chain_depth``: how many chained executes (``BoltTask.take``) are running inside each
  other (a delivery at ``MAX_CHAIN_DEPTH`` is queued instead), and ``chained``: how many ran
  since the loop last added them to its round's work.
- ``edges``: the worker's source of random edge and root ids (``edges.EdgeIds``), and
  ``edges_for``: per task id, where the edges of tuples for that task come from: ``edges`` for
  a task of this worker, its own ``EdgeIds`` for a task of another worker (installed by the
  transfer), drawn in the order the tuples are written to the wire, so a run of them carries
  one generator state instead of an id per tuple (``transfer.py``).
- ``acker_tasks`` and ``acker_cores``: the acker task of each acker index, and its ``AckerCore``
  when that acker runs in this worker (called directly, no tuple, no queue), else None.

These containers never change identity (they are updated in place), so the task runners keep
references to them and save an attribute load per tuple. Everything here runs on the loop thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from stormpy.acker.core import AckerCore
from stormpy.acker.streams import ACK_ACK
from stormpy.topology._columns import ColumnBatch
from stormpy.topology._tuple import SYSTEM_COMPONENT, Tuple
from stormpy.worker.edges import EdgeIds


class Dispatch:
    """Delivery table, ack buffer and acker access of one worker (see the module docstring)."""

    def __init__(self, max_task: int, acker_tasks: Sequence[int]) -> None:
        self.dropped = 0
        self.deliver: list[Callable[[Tuple], None]] = [self.undeliverable] * (max_task + 1)
        #: the same per task for a list of tuples at once (a queue's ``extend``; emit_many)
        self.deliver_many: list[Callable[[list[Tuple]], None]] = \
            [self.undeliverable_many] * (max_task + 1)
        #: the same per task for a columnar batch (``ColumnBatch``: columnar bolts only)
        self.deliver_batch: list[Callable[[ColumnBatch], None]] = \
            [self.undeliverable_batch] * (max_task + 1)
        #: per task: tuples queued beyond one per queue item (the rows of queued batches, - 1)
        self.queued_rows: list[int] = [0] * (max_task + 1)
        self.ack_buffer: dict[int, int] = {}
        #: the open run of acks of one root (0: none) and their XOR, not yet in ``ack_buffer``
        self.run_root = 0
        self.run_xor = 0
        #: how many chained executes are running inside each other (``BoltTask.take``), and
        #: how many ran since the loop last counted them (a round's work)
        self.chain_depth = 0
        self.chained = 0
        self.acker_tasks: list[int] = list(acker_tasks)
        #: the worker's random edge and root ids (``edges.py``)
        self.edges = EdgeIds()
        #: per task: the generator of the edges of tuples for it (see the module docstring)
        self.edges_for: list[EdgeIds] = [self.edges] * (max_task + 1)
        self.acker_cores: list[AckerCore | None] = [None] * len(self.acker_tasks)

    def undeliverable(self, tup: Tuple) -> None:
        """Tuples for a task with no known place are dropped; tracked ones are replayed."""
        self.dropped += 1

    def undeliverable_many(self, tuples: list[Tuple]) -> None:
        """``undeliverable`` for each of ``tuples``."""
        self.dropped += len(tuples)

    def undeliverable_batch(self, batch: ColumnBatch) -> None:
        """``undeliverable`` for each tuple of ``batch``."""
        self.dropped += batch.n

    def attach_acker(self, task: int, core: AckerCore) -> None:
        """Acker ``task`` runs in this worker: messages for its roots go to ``core`` directly."""
        self.acker_cores[self.acker_tasks.index(task)] = core

    def fold_run(self) -> None:
        """Put the open run of acks (``run_root``, ``run_xor``) into ``ack_buffer``."""
        root = self.run_root
        if root:
            buf = self.ack_buffer
            buf[root] = buf.get(root, 0) ^ self.run_xor
            self.run_root = 0
            self.run_xor = 0

    def pending_acks(self) -> bool:
        """Whether this round has acks to send (in the buffer or the open run)."""
        return bool(self.run_root) or bool(self.ack_buffer)

    def flush_acks(self) -> None:
        """Send this round's aggregated acks, one (root, xor) pair per root: applied directly by
        an acker in this worker, and sent to a remote acker as ONE ``__ack_ack`` tuple per acker
        per round carrying all its pairs ``[root1, xor1, root2, xor2, ...]``."""
        self.fold_run()
        items = list(self.ack_buffer.items())
        self.ack_buffer.clear()
        direct = self.acker_cores
        n = len(direct)
        remote: dict[int, list[int]] = {}
        for root, xor in items:
            i = root % n
            acker = direct[i]
            if acker is not None:
                acker.ack_edges(root, xor)
            else:
                pairs = remote.get(i)
                if pairs is None:
                    pairs = remote[i] = []
                pairs.append(root)
                pairs.append(xor)
        for i, pairs in remote.items():
            self.deliver[self.acker_tasks[i]](Tuple(pairs, ACK_ACK, -1, SYSTEM_COMPONENT, None))
