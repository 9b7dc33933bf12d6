"""The two multilang wire formats and the rule that picks one from a topology's config.

* JSON (Storm's ``JsonSerializer``, the default): each message is one JSON document followed by a
  line holding only ``end`` (``{...}\\nend\\n``); the document may span several lines.
* msgpack (pystorm's ``MsgpackSerializer``): messages are msgpack maps (task-id answers: arrays)
  written back to back with no delimiter; msgpack itself frames them.

An encoder turns one message into bytes; a decoder is fed whatever bytes the pipe gave and
returns the complete messages so far, keeping a partial one for the next feed. A decoder raises
:class:`GarbageError` (naming what it could not read) on bytes that are not a message, and on a
message that grows past :data:`MAX_MESSAGE_BYTES` unfinished (memory stays bounded).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

import msgpack

from stormpy.config.multilang import JSON, MSGPACK, SERIALIZER_KEY, serializer_kind

__all__ = ["JSON", "MSGPACK", "SERIALIZER_KEY", "Codec", "GarbageError", "JsonCodec",
           "MsgpackCodec", "codec_named", "codec_for"]

#: the longest piece of a bad message quoted in an error
_QUOTE = 200
#: the most bytes one message may take (msgpack's own default buffer bound)
MAX_MESSAGE_BYTES = 100 * 1024 * 1024


class GarbageError(ValueError):
    """The subprocess wrote bytes that are not a message of the agreed format."""


class Decoder(Protocol):
    def feed(self, data: bytes) -> list[Any]:
        """The messages completed by ``data`` (possibly none)."""


class Codec(Protocol):
    name: str

    def encode(self, msg: Any) -> bytes:
        """One message as it goes on the wire."""

    def decoder(self) -> Decoder:
        """A fresh decoder for one subprocess's output."""


def _quote(data: bytes) -> str:
    text = data.decode("utf-8", "replace")
    return repr(text[:_QUOTE] + ("..." if len(text) > _QUOTE else ""))


class _JsonDecoder:
    """Each byte fed is looked at once: a line still unfinished is kept as the pieces that came
    (joined when its newline arrives), so a long line arriving in many reads costs its length,
    not its length times the number of reads."""

    def __init__(self) -> None:
        self._partial: list[bytes] = []  # the pieces of the unfinished line
        self._partial_size = 0
        self._lines: list[bytes] = []
        self._size = 0  # of self._lines, each with its newline

    def feed(self, data: bytes) -> list[Any]:
        out: list[Any] = []
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            line = data[start:nl]
            start = nl + 1
            if self._partial:
                self._partial.append(line)
                line = b"".join(self._partial)
                self._partial, self._partial_size = [], 0
            if line.rstrip(b"\r") == b"end":
                text = b"\n".join(self._lines)
                self._lines, self._size = [], 0
                try:
                    out.append(json.loads(text))
                except (ValueError, RecursionError):  # nesting too deep for the parser
                    raise GarbageError(f"not JSON: {_quote(text)}") from None
            else:
                self._lines.append(line)
                self._size += len(line) + 1
        if start < len(data):
            self._partial.append(data[start:])
            self._partial_size += len(data) - start
        if self._size + self._partial_size > MAX_MESSAGE_BYTES:
            first = (self._lines[0] if self._lines else b"") or b"".join(self._partial)
            raise GarbageError(f"a message longer than {MAX_MESSAGE_BYTES} bytes without its 'end' "
                               f"line: {_quote(first)}")
        return out


class JsonCodec:
    """Storm's JSON framing: the document, a newline, ``end``, a newline."""

    name = JSON

    def encode(self, msg: Any) -> bytes:
        return json.dumps(msg, separators=(",", ":")).encode() + b"\nend\n"

    def decoder(self) -> Decoder:
        return _JsonDecoder()


class _MsgpackDecoder:
    def __init__(self) -> None:
        self._unpacker = msgpack.Unpacker(raw=False, strict_map_key=False,
                                          max_buffer_size=MAX_MESSAGE_BYTES)

    def feed(self, data: bytes) -> list[Any]:
        try:
            self._unpacker.feed(data)
        except msgpack.exceptions.BufferFull:
            raise GarbageError(f"a message longer than {MAX_MESSAGE_BYTES} bytes: "
                               f"{_quote(data)}") from None
        try:
            return list(self._unpacker)
        except (ValueError, TypeError, msgpack.exceptions.ExtraData, msgpack.exceptions.FormatError,
                msgpack.exceptions.StackError) as exc:  # TypeError: a map key that is a map or list
            raise GarbageError(f"not msgpack ({exc}): {_quote(data)}") from None


class MsgpackCodec:
    """pystorm's msgpack framing: msgpack objects back to back."""

    name = MSGPACK

    def encode(self, msg: Any) -> bytes:
        return msgpack.packb(msg, use_bin_type=True)

    def decoder(self) -> Decoder:
        return _MsgpackDecoder()


def codec_named(name: Any) -> Codec:
    """The codec a serializer setting names: ``json`` / ``msgpack`` (pystorm's names), or a class
    name as Storm's setting holds one (``org.apache.storm.multilang.JsonSerializer``, any
    ``...MsgpackSerializer`` / ``...MessagePackSerializer``). SettingError otherwise
    (:func:`stormpy.config.multilang.serializer_kind`, the check made at submit too)."""
    return JsonCodec() if serializer_kind(name) == JSON else MsgpackCodec()


def codec_for(conf: Mapping[str, Any]) -> Codec:
    """The codec ``topology.multilang.serializer`` selects (JSON when unset)."""
    return codec_named(conf.get(SERIALIZER_KEY))
