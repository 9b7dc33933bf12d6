"""The wire format of tuples between workers (msgpack).

A tuple is the array ``[dest_task, stream, src_task, anchors, values]`` where ``anchors`` maps
root id → edge id (64-bit ints) or is nil for an untracked tuple. A frame is the concatenation of
many packed tuples for one destination worker; ``decode_frame`` streams them back out.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgpack

_packb = msgpack.packb


def encode_tuple(dest: int, stream: str, src: int, anchors: dict[int, int] | None,
                 values: Any) -> bytes:
    """One packed tuple; TypeError/ValueError/OverflowError when a value cannot be packed."""
    return _packb([dest, stream, src, anchors, values])


def encode_frame(packed: list[bytes]) -> bytes:
    """A frame of already packed tuples."""
    return b"".join(packed)


def decode_frame(frame: bytes) -> Iterator[list[Any]]:
    """Yield ``[dest, stream, src, anchors, values]`` for every tuple of the frame; ValueError
    when the frame is not a sequence of such arrays."""
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, use_list=True)
    unpacker.feed(frame)
    for item in unpacker:
        if type(item) is not list or len(item) != 5:
            raise ValueError(f"malformed tuple in frame: {item!r:.120}")
        yield item
