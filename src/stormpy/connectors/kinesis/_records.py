"""One Kinesis record as the spout sees it, and the spout's message ids.

Kinesis sequence numbers are decimal strings of up to 128 digits that grow within a shard; they
are compared as integers (``"9" < "10"``), never as strings. The spout's message id of a record
is ``"<shard-id>:<sequence-number>"``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class KinesisRecord:
    """A record read from one shard.

    ``sequence_number`` is the decimal string Kinesis returned; ``arrival`` the approximate
    arrival time (seconds since the epoch) when the service gave one.
    """

    shard_id: str
    sequence_number: str
    partition_key: str
    data: bytes
    arrival: float | None = None


def sequence_key(seq: str | int) -> int:
    """The integer order key of a sequence number; ValueError naming it when it is not a
    non-negative decimal number."""
    if isinstance(seq, int) and not isinstance(seq, bool):
        if seq < 0:
            raise ValueError(f"sequence number {seq!r} is negative")
        return seq
    if isinstance(seq, str) and seq.isdigit() and seq.isascii():
        return int(seq)
    raise ValueError(f"sequence number {seq!r} is not a decimal number")


def message_id(shard_id: str, sequence_number: str) -> str:
    """The spout's message id of a record: ``"<shard-id>:<sequence-number>"``."""
    return f"{shard_id}:{sequence_number}"


def parse_message_id(msg_id: object) -> tuple[str, str]:
    """Split a message id into (shard id, sequence number); ValueError naming it when it is not
    of the form ``"<shard-id>:<sequence-number>"``."""
    if isinstance(msg_id, str):
        shard, sep, seq = msg_id.rpartition(":")
        if sep and shard and seq.isdigit():
            return shard, seq
    raise ValueError(f"message id {msg_id!r} is not of the form '<shard-id>:<sequence-number>'")
