"""The wire format of tuples between workers (msgpack).

A tuple is the array ``[dest_task, stream, src_task, root, edge, anchors, values]``: a tuple in
one spout tuple's tree carries that tree's ``root`` id (64-bit) and its ``edge`` id (62-bit,
``worker/edges.py``) and nil ``anchors``; a tuple in several trees has ``root`` 0 and
``anchors`` mapping root id → edge id; an untracked tuple has ``root`` 0 and nil ``anchors``.
A columnar batch (``stormpy.topology.columns.ColumnBatch``: tuples of one stream sharing one
tree node) is ONE record of 8 items, ``[dest_task, stream, src_task, root, edge, anchors,
columns, n]``: its values as one list per field, each of its ``n`` tuples' values in order.
A frame is ONE msgpack array of such records, all for the same destination worker: packed by one
C call per batch and unpacked by one C call per frame.
"""

from __future__ import annotations

from typing import Any

import msgpack

WireTuple = list[Any]


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
        raise ValueError(f"undecodable frame: {exc}") from None
    if type(batch) is not list:
        raise ValueError(f"frame is a {type(batch).__name__}, not an array of tuples")
    return batch
