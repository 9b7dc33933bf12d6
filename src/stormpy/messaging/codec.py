"""The wire format of tuples between workers (msgpack).

A tuple is the array ``[dest_task, stream, src_task, root, edge, anchors, values]``: a tuple in
one spout tuple's tree carries that tree's ``root`` id (64-bit) and its ``edge`` id (62-bit,
``worker/edges.py``) and nil ``anchors``; a tuple in several trees has ``root`` 0 and
``anchors`` mapping root id → edge id; an untracked tuple has ``root`` 0 and nil ``anchors``.
A columnar batch (``stormpy.topology._columns.ColumnBatch``: tuples of one stream sharing one
tree node) is ONE record of 8 items, ``[dest_task, stream, src_task, root, edge, anchors,
columns, n]``: its values as one list per field, each of its ``n`` tuples' values in order.
A run (``RUN_ITEMS`` items) is ``n`` tuples of one (destination task, stream, source task), all
of a stream with declared fields, each in at most one tree, in emit order: ``[dest_task,
stream, src_task, n, ids, columns]``. ``ids`` is nil when none of them is tracked (root and
edge 0), else ``[x, c, root1, k1, root2, k2, ...]``: the tuples' edge ids are the next ``n``
draws of the sender's edge id generator for the destination task from the state ``(x, c)``
(``stormpy.worker.edges``: two ints below 2**30), and their roots are run-length coded (the
first ``k1`` tuples have ``root1``, the next ``k2`` ``root2``, ...; the counts add up to ``n``).
``columns`` holds one list of ``n`` values per field (the i-th tuple's values are the i-th item
of each). Stream, source and destination travel once per run, and every tuple costs msgpack its
values alone (a sentence's words, one root, add two objects between them): msgpack's packing
costs about the same per object whatever it is, so a per-tuple array of seven, a values array
and two ids per tuple cost several times a run's share. A tracked tuple whose edge is not the
generator's next draw goes as a single tuple.
A sender writes the tuples of one source task to one destination task as runs (a tuple in
several trees, or of the acker's streams, as a single tuple), so their order is the order of
the records and, within a run, of its rows.
A frame is ONE msgpack array of such records, all for the same destination worker: packed by one
C call per batch and unpacked by one C call per frame.
"""

from __future__ import annotations

from typing import Any

import msgpack

WireTuple = list[Any]

#: items of a record: a single tuple, a run of tuples, a columnar batch
TUPLE_ITEMS = 7
RUN_ITEMS = 6
BATCH_ITEMS = 8


class FrameEncoder:
    """Packs batches of wire tuples. Reuses one msgpack Packer, so it is not thread-safe: each
    worker (executor loop) owns its own."""

    def __init__(self) -> None:
        self._pack = msgpack.Packer(autoreset=True).pack

    def encode(self, batch: list[WireTuple]) -> bytes:
        """One frame; TypeError/ValueError/OverflowError when a value cannot be packed."""
        return self._pack(batch)


def decode_frame(frame: bytes) -> list[WireTuple]:
    """The wire tuples of a frame; ValueError when it is not msgpack or not an array. The items
    are not checked one by one here (the receiver unpacks each into five names anyway and must
    treat a malformed one as a malformed frame)."""
    try:
        batch = msgpack.unpackb(frame, raw=False, strict_map_key=False, use_list=True)
    except Exception as exc:  # msgpack raises several types for garbage
        # msgpack's message, or its error's name when it has none (an unused type byte)
        raise ValueError(f"undecodable frame: {str(exc) or type(exc).__name__}") from None
    if type(batch) is not list:
        raise ValueError(f"frame is a {type(batch).__name__}, not an array of tuples")
    return batch
