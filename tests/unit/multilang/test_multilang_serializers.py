"""The multilang wire formats: Storm's JSON framing and pystorm's msgpack framing, each checked
against pystorm's own serializers in both directions, partial reads, garbage, and the setting
that picks one."""

from __future__ import annotations

import io
import os
import threading
from typing import Any

import pytest
from pystorm.serializers.json_serializer import JSONSerializer
from pystorm.serializers.msgpack_serializer import MsgpackSerializer

from stormpy.config import SettingError
from stormpy.multilang import _serializers as serializers
from stormpy.multilang._serializers import (
    SERIALIZER_KEY,
    GarbageError,
    JsonCodec,
    MsgpackCodec,
    codec_for,
    codec_named,
)

MESSAGES: list[Any] = [
    {"command": "emit", "anchors": ["1", "2"], "tuple": ["snow", 3, 1.5, None, True]},
    {"command": "log", "msg": "two\nlines and ünïcode", "level": 3},
    [4, 5, 6],  # task ids
    {"pid": 1234},
]


def test_json_framing_is_storms() -> None:
    assert JsonCodec().encode({"command": "sync"}) == b'{"command":"sync"}\nend\n'


@pytest.mark.parametrize("codec", [JsonCodec(), MsgpackCodec()], ids=["json", "msgpack"])
def test_messages_survive_any_split_of_the_byte_stream(codec: Any) -> None:
    data = b"".join(codec.encode(m) for m in MESSAGES)
    for step in (1, 3, 7, len(data)):
        decoder = codec.decoder()
        out: list[Any] = []
        for i in range(0, len(data), step):
            out.extend(decoder.feed(data[i:i + step]))
        assert out == MESSAGES


def test_a_json_document_may_span_lines() -> None:
    decoder = JsonCodec().decoder()
    assert decoder.feed(b'{"command":\n "sync"}\nend\n{"pid": 7}\r\nend\r\n') == [
        {"command": "sync"}, {"pid": 7}]


def test_json_garbage_is_named() -> None:
    decoder = JsonCodec().decoder()
    with pytest.raises(GarbageError, match="not JSON: 'hello there'"):
        decoder.feed(b"hello there\nend\n")


def test_msgpack_garbage_is_named() -> None:
    decoder = MsgpackCodec().decoder()
    with pytest.raises(GarbageError, match="not msgpack"):
        decoder.feed(b"\xc1\xc1\xc1")  # 0xc1 is never used by msgpack


def test_a_map_keyed_by_a_map_and_json_nested_past_the_parser_are_garbage() -> None:
    with pytest.raises(GarbageError, match="not msgpack"):
        MsgpackCodec().decoder().feed(b"\x81\x81\x01\x02\x03")  # {{1: 2}: 3}
    with pytest.raises(GarbageError, match="not JSON"):
        JsonCodec().decoder().feed(b"[" * 100_000 + b"\nend\n")


@pytest.mark.parametrize("codec", [JsonCodec(), MsgpackCodec()], ids=["json", "msgpack"])
def test_a_message_that_grows_past_the_bound_unfinished_is_garbage(
        codec: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serializers, "MAX_MESSAGE_BYTES", 1000)
    decoder = codec.decoder()
    unfinished = b"[" + b'"x",' * 100 if codec.name == "json" else b"\xdb\x00\x01\x00\x00" + b"x" * 400
    assert decoder.feed(unfinished) == []
    with pytest.raises(GarbageError, match="longer than 1000 bytes"):
        for _ in range(5):
            decoder.feed(b'"x",\n' * 100 if codec.name == "json" else b"x" * 400)
    fresh = codec.decoder()  # what the restarted subprocess is read with
    assert fresh.feed(codec.encode({"command": "sync"})) == [{"command": "sync"}]


def _pystorm_reads(serializer_cls: type, data: bytes, count: int) -> list[Any]:
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, "rb", buffering=0) as src:
        writer = threading.Thread(target=lambda: (os.write(write_fd, data), os.close(write_fd)))
        writer.start()
        ser = serializer_cls(src, io.BytesIO(), threading.RLock(), threading.RLock())
        out = [ser.read_message() for _ in range(count)]
        writer.join()
    return out


def _pystorm_writes(serializer_cls: type, messages: list[Any]) -> bytes:
    sink = io.BytesIO()
    ser = serializer_cls(io.BytesIO(), sink, threading.RLock(), threading.RLock())
    for m in messages:
        ser.send_message(m)
    ser.output_stream.flush()
    return sink.getvalue()


@pytest.mark.parametrize(("codec", "pystorm_cls"), [(JsonCodec(), JSONSerializer),
                                                     (MsgpackCodec(), MsgpackSerializer)],
                         ids=["json", "msgpack"])
def test_pystorm_reads_what_the_host_writes(codec: Any, pystorm_cls: type) -> None:
    msgs = [m for m in MESSAGES if isinstance(m, dict)]
    data = b"".join(codec.encode(m) for m in msgs)
    assert _pystorm_reads(pystorm_cls, data, len(msgs)) == msgs


@pytest.mark.parametrize(("codec", "pystorm_cls"), [(JsonCodec(), JSONSerializer),
                                                     (MsgpackCodec(), MsgpackSerializer)],
                         ids=["json", "msgpack"])
def test_the_host_reads_what_pystorm_writes(codec: Any, pystorm_cls: type) -> None:
    msgs = [m for m in MESSAGES if isinstance(m, dict)]
    assert codec.decoder().feed(_pystorm_writes(pystorm_cls, msgs)) == msgs


@pytest.mark.parametrize(("name", "codec"), [
    (None, "json"), ("json", "json"), ("JSON", "json"),
    ("org.apache.storm.multilang.JsonSerializer", "json"),
    ("msgpack", "msgpack"), ("org.example.multilang.MsgpackSerializer", "msgpack"),
    ("com.example.MessagePackSerializer", "msgpack"),
])
def test_the_serializer_setting_names_a_codec(name: Any, codec: str) -> None:
    assert codec_named(name).name == codec
    assert codec_for({SERIALIZER_KEY: name} if name else {}).name == codec


def test_an_unknown_serializer_is_refused_naming_the_setting() -> None:
    with pytest.raises(SettingError, match=r"^topology\.multilang\.serializer: unknown .*'xml'"):
        codec_for({SERIALIZER_KEY: "xml"})


def test_garbage_is_quoted_whole_up_to_200_characters_and_cut_after() -> None:
    with pytest.raises(GarbageError) as bad:
        JsonCodec().decoder().feed(b"hello\nthere\nend\n")
    assert str(bad.value) == "not JSON: 'hello\\nthere'"  # the document's lines, as sent
    with pytest.raises(GarbageError) as bad:
        JsonCodec().decoder().feed(b"y" * 201 + b"\nend\n")
    assert str(bad.value) == f"not JSON: {'y' * 200 + '...'!r}"
    with pytest.raises(GarbageError) as bad:
        JsonCodec().decoder().feed(b"y" * 200 + b"\nend\n")
    assert str(bad.value) == f"not JSON: {'y' * 200!r}"
    with pytest.raises(GarbageError) as bad:
        MsgpackCodec().decoder().feed(b"\xc1ab")
    assert str(bad.value).startswith("not msgpack (") and str(bad.value).endswith("): '\ufffdab'")


def test_a_json_message_may_take_exactly_the_bound_and_not_a_byte_more(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serializers, "MAX_MESSAGE_BYTES", 10)
    decoder = JsonCodec().decoder()
    assert decoder.feed(b'"abcdefg"') == []  # 9 bytes so far
    assert decoder.feed(b"\n") == []  # 10: the bound
    assert decoder.feed(b"end\n") == ["abcdefg"]
    with pytest.raises(GarbageError) as bad:
        decoder.feed(b'"abcdefg"\n"h')  # the next message: 12 bytes so far
    assert str(bad.value) == ("a message longer than 10 bytes without its 'end' line: "
                              "'\"abcdefg\"'")  # its first line
    with pytest.raises(GarbageError) as bad:
        JsonCodec().decoder().feed(b"z" * 11)  # no line yet: the partial one is quoted
    assert str(bad.value) == f"a message longer than 10 bytes without its 'end' line: {'z' * 11!r}"


def test_a_msgpack_message_past_the_bound_is_garbage_quoting_the_bytes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serializers, "MAX_MESSAGE_BYTES", 10)
    decoder = MsgpackCodec().decoder()
    data = b"\xdb\x00\x00\x00\x20" + b"q" * 20
    with pytest.raises(GarbageError) as bad:
        decoder.feed(data)
    assert str(bad.value) == f"a message longer than 10 bytes: {data.decode('utf-8', 'replace')!r}"


@pytest.mark.timeout(60)
def test_a_long_json_line_arriving_in_small_reads_is_refused_at_the_bound_without_rescanning(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A subprocess writing one endless line a kilobyte at a time is refused once the bound is
    passed; each byte is looked at once (a decoder that joined and searched the whole unfinished
    line at every read would take minutes here: 16,385 reads of up to 16 MB each)."""
    monkeypatch.setattr(serializers, "MAX_MESSAGE_BYTES", 16 * 1024 * 1024)
    decoder = JsonCodec().decoder()
    piece = b"[" + b"7," * 511 + b"7"  # 1 KiB, no newline
    for _ in range(16 * 1024):
        assert decoder.feed(piece) == []  # exactly the bound so far: kept
    with pytest.raises(GarbageError) as bad:
        decoder.feed(b"8")
    assert str(bad.value) == ("a message longer than 16777216 bytes without its 'end' line: "
                              + repr((piece * 2)[:200].decode() + "..."))


def test_a_line_split_over_reads_is_joined_in_order_and_end_may_be_split_too() -> None:
    decoder = JsonCodec().decoder()
    assert decoder.feed(b'{"command":') == []
    assert decoder.feed(b' "log", "msg"') == []
    assert decoder.feed(b': "a\\nb"}\nen') == []
    assert decoder.feed(b"d") == []
    assert decoder.feed(b"\r\n[1,") == [{"command": "log", "msg": "a\nb"}]
    assert decoder.feed(b"2]\nend\n") == [[1, 2]]
    with pytest.raises(GarbageError) as bad:
        decoder.feed(b"\nend\n")  # an empty document
    assert str(bad.value) == "not JSON: ''"


def test_msgpack_bytes_travel_as_bytes_and_maps_may_have_any_scalar_keys() -> None:
    """Bytes go out as msgpack bin (pystorm reads them back as bytes, not text) and maps keyed
    by numbers, as a subprocess may send them (metrics params), are read."""
    msg = {"id": "1", "tuple": [b"\x00\xffraw", b"text-like", "text"]}
    data = MsgpackCodec().encode(msg)
    assert MsgpackCodec().decoder().feed(data) == [msg]
    assert _pystorm_reads(MsgpackSerializer, data, 1) == [msg]
    sent = {"command": "metrics", "name": "by-partition", "params": {1: 10, 2.5: "x", None: 0}}
    assert MsgpackCodec().decoder().feed(_pystorm_writes(MsgpackSerializer, [sent])) == [sent]


@pytest.mark.parametrize("line", [b"end ", b"endX", b"end\t", b"Xend"])
def test_only_a_line_holding_just_end_ends_a_json_message(line: bytes) -> None:
    """("end" and a carriage return, as a Windows subprocess writes it, is the only variant)."""
    decoder = JsonCodec().decoder()
    with pytest.raises(GarbageError) as bad:
        decoder.feed(b"1\n" + line + b"\nend\n")
    assert str(bad.value) == f"not JSON: {'1' + chr(10) + line.decode()!r}"


def test_the_bound_counts_each_json_message_from_its_own_first_byte(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serializers, "MAX_MESSAGE_BYTES", 10)
    decoder = JsonCodec().decoder()
    # a message, then in the same read the next one's first 9 bytes: within the bound
    assert decoder.feed(b'1\nend\n"abcdefg"') == [1]
    assert decoder.feed(b"\n") == []  # 10 bytes: the next message's first line, at the bound
    assert decoder.feed(b"end\n") == ["abcdefg"]
    assert decoder.feed(b'"abcdefg"\nend\n') == ["abcdefg"]  # 10 bytes again, after a message


def test_an_unfinished_line_arriving_in_pieces_is_quoted_as_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serializers, "MAX_MESSAGE_BYTES", 10)
    decoder = JsonCodec().decoder()
    assert decoder.feed(b"abc") == [] and decoder.feed(b"defgh") == []
    with pytest.raises(GarbageError) as bad:
        decoder.feed(b"ijk")
    assert str(bad.value) == "a message longer than 10 bytes without its 'end' line: 'abcdefghijk'"
