"""InflightRecordTracker: which records of one shard are in flight, which to retry, and the
checkpoint up to which every emitted record is done.

The tracker keeps the emitted records of a shard in a map from sequence number to node; the nodes
are also linked in emit order (``prev``/``next``), with the earliest and latest node at hand. An
acked record is kept only while it is needed to let the checkpoint jump over it later; acks are
resolved by looking at the two neighbours of the acked node only:

================  =====================  =====================  =====================
prev \\ next       acked                  pending                absent
================  =====================  =====================  =====================
acked             drop the node and prev drop prev, keep node   drop prev, keep node
pending           drop the node          keep the node          keep the node
absent            drop node, then next;  drop the node;         drop the node;
                  checkpoint = next      checkpoint = node      checkpoint = node
================  =====================  =====================  =====================

Dropping the earliest node moves the checkpoint to its sequence number. Two invariants follow and
make the table complete: the earliest node is never an acked one, and no two neighbours are both
acked (a run of acked records collapses into its latest one). So the checkpoint only moves over
the contiguous acked prefix of the emit order, never backwards and never past a pending record.

A failed record is queued for retry until it has been re-emitted ``max_retries`` times; failing
once more counts it out: it is logged with its shard and sequence number, counted in
``counted_out`` and treated as acked (``max_retries=0`` disables replay).

Sequence numbers are compared as integers. Not thread-safe: the spout uses it on its loop only.

It differs from the Kafka spout's :class:`~stormpy.connectors._offsets.AckedPrefix` on purpose,
though both find the contiguous acked prefix: a shard's new records arrive strictly in sequence
order (an out-of-order one is an error here, a normal case there after a seek back or a
rebalance), so the emit order is the position order and a linked list resolves each ack from its
two neighbours in constant time, moving the checkpoint at once instead of by a periodic
``commit_through``; and the tracker holds each record and its retry count for replay, which
Kafka re-fetches from the broker instead.
"""

from __future__ import annotations

import logging

from stormpy.connectors.kinesis._records import KinesisRecord, sequence_key

log = logging.getLogger(__name__)


class _Node:
    __slots__ = ("acked", "key", "next", "prev", "record", "retries")

    def __init__(self, key: int, record: KinesisRecord, prev: _Node | None) -> None:
        self.key = key
        self.record = record
        self.acked = False
        self.retries = 0
        self.prev = prev
        self.next: _Node | None = None


class InflightRecordTracker:
    """In-flight records of one shard (see the module docstring for the ack rules).

    ``checkpoint`` starts at the given resume point (``None``: nothing done yet) and afterwards is
    the sequence number of the latest record such that it and every record emitted before it
    were acked (or counted out).
    """

    def __init__(self, shard_id: str, max_retries: int, checkpoint: str | None = None) -> None:
        if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
            raise ValueError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        self.shard_id = shard_id
        self.max_retries = max_retries
        self._checkpoint = checkpoint
        # every new record must be above this: the latest emitted, or the resume checkpoint
        self._high = sequence_key(checkpoint) if checkpoint is not None else -1
        self._nodes: dict[int, _Node] = {}
        self._first: _Node | None = None
        self._last: _Node | None = None
        self._retry: dict[int, None] = {}  # insertion-ordered set of keys queued for retry
        self._pending = 0
        self.retries = 0
        """Retry emissions so far."""
        self.counted_out = 0
        """Records failed more than ``max_retries`` times and then treated as acked."""

    # --- state -------------------------------------------------------------------------------
    @property
    def checkpoint(self) -> str | None:
        """Sequence number up to which every emitted record is acked, or ``None``."""
        return self._checkpoint

    @property
    def in_flight(self) -> int:
        """Records emitted and neither acked nor counted out yet."""
        return self._pending

    @property
    def latest_emitted(self) -> str | None:
        """Sequence number of the latest record emitted that is still tracked, or ``None``."""
        return self._last.record.sequence_number if self._last is not None else None

    def held(self) -> list[tuple[str, bool]]:
        """(sequence number, acked) of every node held, in emit order (for tests and metrics)."""
        out = []
        node = self._first
        while node is not None:
            out.append((node.record.sequence_number, node.acked))
            node = node.next
        return out

    def __len__(self) -> int:
        """Nodes held (pending records plus the acked ones kept to bridge gaps)."""
        return len(self._nodes)

    # --- emit --------------------------------------------------------------------------------
    def on_emit(self, record: KinesisRecord, is_retry: bool) -> None:
        """Record that ``record`` was emitted (``is_retry``: re-emitted after a fail).

        A new record must come after every record emitted before it and after the checkpoint;
        ValueError naming the shard and both sequence numbers otherwise.
        """
        try:
            key = int(record.sequence_number)
        except (TypeError, ValueError):
            key = sequence_key(record.sequence_number)  # raises, naming it
        node = self._nodes.get(key)
        if node is None:
            if key <= self._high:
                raise ValueError(
                    f"shard {self.shard_id}: record {record.sequence_number} emitted out of order "
                    f"(not after {self._high})")
            self._high = key
            last = self._last
            node = _Node(key, record, last)
            if last is None:
                self._first = node
            else:
                last.next = node
            self._last = node
            self._nodes[key] = node
            self._pending += 1
        if is_retry:
            node.retries += 1
            self.retries += 1
            self._retry.pop(key, None)

    # --- ack ---------------------------------------------------------------------------------
    def on_ack(self, seq: str | int) -> bool:
        """The record ``seq`` was fully processed. Returns False (and changes nothing) when it
        is not in flight: unknown, or already acked."""
        try:
            node = self._nodes.get(int(seq))
        except (TypeError, ValueError):
            node = self._nodes.get(sequence_key(seq))  # raises, naming it
        if node is None or node.acked:
            return False
        node.acked = True
        self._pending -= 1
        if self._retry:
            self._retry.pop(node.key, None)
        prev, nxt = node.prev, node.next
        if prev is None:
            # the earliest record: drop it (and an acked successor), moving the checkpoint over
            # them (inlined _drop: the common in-order case)
            nodes = self._nodes
            del nodes[node.key]
            if nxt is not None and nxt.acked:
                del nodes[nxt.key]
                node = nxt
                nxt = nxt.next
            self._first = nxt
            if nxt is None:
                self._last = None
            else:
                nxt.prev = None
            self._checkpoint = node.record.sequence_number
        else:
            if prev.acked:
                self._drop(prev)
            if nxt is not None and nxt.acked:
                self._drop(node)
        return True

    def _drop(self, node: _Node) -> None:
        """Unlink ``node``; dropping the earliest node moves the checkpoint to it."""
        prev, nxt = node.prev, node.next
        if prev is None:
            self._first = nxt
            self._checkpoint = node.record.sequence_number
        else:
            prev.next = nxt
        if nxt is None:
            self._last = prev
        else:
            nxt.prev = prev
        del self._nodes[node.key]

    # --- fail and retry ----------------------------------------------------------------------
    def on_fail(self, seq: str | int) -> bool:
        """The record ``seq`` failed. Returns True when it was queued for retry; False when it is
        not in flight, or when it was counted out (failed after ``max_retries`` retries: logged,
        counted and then treated as acked)."""
        key = sequence_key(seq)
        node = self._nodes.get(key)
        if node is None or node.acked:
            return False
        if node.retries < self.max_retries:
            self._retry[key] = None
            return True
        self.counted_out += 1
        log.warning("shard %s: record %s failed %d time(s), more than max_retries=%d; giving up on "
                    "it and treating it as acked", self.shard_id, node.record.sequence_number,
                    node.retries + 1, self.max_retries)
        self.on_ack(key)
        return False

    def should_retry(self) -> bool:
        """True when a failed record waits to be re-emitted."""
        return bool(self._retry)

    def record_to_retry(self) -> KinesisRecord | None:
        """The failed record to re-emit next (earliest failure first), or ``None``. It stays
        queued until it is passed to ``on_emit(record, is_retry=True)``."""
        for key in self._retry:
            return self._nodes[key].record
        return None
