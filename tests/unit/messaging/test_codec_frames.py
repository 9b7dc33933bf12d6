"""The frames workers exchange (stormpy.messaging.codec): what a frame carries comes back exactly,
and a frame that is not an array of records is refused with a ValueError saying what it was.

A frame comes from another process (possibly another host): the receiver relies on
``decode_frame`` to give it lists it can unpack, str streams, integer map keys (the anchors of a
tuple in several trees) and a ValueError for anything else."""

from __future__ import annotations

import msgpack
import pytest

from stormpy.messaging.codec import BATCH_ITEMS, RUN_ITEMS, TUPLE_ITEMS, FrameEncoder, decode_frame

#: a single tuple in several trees (anchors: root id -> edge id, integer keys), a run and a batch
RECORDS = [
    [3, "default", 1, 0, 0, {2**63 + 5: 2**61, 7: 9}, ["word", b"\x00\xff", 2.5, None, [1, [2]]]],
    [4, "words", 1, 2, None, [["a", "b"]]],
    [5, "s", 2, 11, 12, None, [[1, 2], ["x", "y"]], 2],
]


def test_record_sizes_are_the_documented_ones() -> None:
    assert [len(r) for r in RECORDS] == [TUPLE_ITEMS, RUN_ITEMS, BATCH_ITEMS] == [7, 6, 8]


def test_a_frame_decodes_to_the_records_it_was_encoded_from() -> None:
    frame = FrameEncoder().encode(RECORDS)
    assert type(frame) is bytes
    decoded = decode_frame(frame)
    assert decoded == RECORDS
    # lists all the way down (the receiver indexes and extends them), str streams, int map keys
    assert type(decoded) is list and all(type(r) is list for r in decoded)
    assert type(decoded[0][6]) is list and type(decoded[0][6][4]) is list
    assert type(decoded[0][1]) is str and type(decoded[0][6][1]) is bytes
    assert list(decoded[0][5]) == [2**63 + 5, 7]


def test_one_encoder_packs_each_batch_into_a_frame_of_its_own() -> None:
    encoder = FrameEncoder()
    first, second = encoder.encode([RECORDS[0]]), encoder.encode([RECORDS[1]])
    assert decode_frame(first) == [RECORDS[0]]
    assert decode_frame(second) == [RECORDS[1]]
    assert second == msgpack.packb([RECORDS[1]])


def test_an_empty_frame_is_an_empty_batch() -> None:
    assert decode_frame(FrameEncoder().encode([])) == []


def test_a_value_that_cannot_be_packed_is_an_error_of_encode() -> None:
    with pytest.raises(TypeError):
        FrameEncoder().encode([[1, "default", 1, 0, 0, None, [object()]]])
    with pytest.raises(OverflowError):
        FrameEncoder().encode([[1, "default", 1, 0, 0, None, [2**64]]])


@pytest.mark.parametrize(("garbage", "why"), [
    (b"", "Unpack failed: incomplete input"),
    (b"\x92\x01", "Unpack failed: incomplete input"),
    (msgpack.packb([1]) + b"\x01", "unpack(b) received extra data."),
    (b"\x91\xd9\x02\xff\xfe", "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"),
    (b"\xc1", "FormatError"),  # msgpack's never-used byte: an error without a message
])
def test_bytes_that_are_not_msgpack_are_an_undecodable_frame(garbage: bytes, why: str) -> None:
    with pytest.raises(ValueError) as refused:
        decode_frame(garbage)
    assert str(refused.value) == f"undecodable frame: {why}"
    # msgpack's own error is in the message, not chained (the frame's bytes stay out of tracebacks)
    assert refused.value.__cause__ is None and refused.value.__suppress_context__


@pytest.mark.parametrize(("value", "kind"), [({"a": 1}, "dict"), (7, "int"), ("x", "str"),
                                             (None, "NoneType"), (b"raw", "bytes")])
def test_a_frame_that_is_not_an_array_is_refused_naming_what_it_is(value: object, kind: str) -> None:
    with pytest.raises(ValueError) as refused:
        decode_frame(msgpack.packb(value))
    assert str(refused.value) == f"frame is a {kind}, not an array of tuples"
