"""InflightRecordTracker input checks: max_retries must be a real integer, a sequence number must
be a non-negative decimal number (the error names it)."""

from __future__ import annotations

import pytest

from stormpy.connectors.kinesis import InflightRecordTracker, KinesisRecord


def rec(seq: str) -> KinesisRecord:
    return KinesisRecord("s0", seq, "k", b"")


@pytest.mark.parametrize("bad", [True, False, -1, "3", 1.0, None])
def test_max_retries_must_be_an_integer_at_least_zero(bad: object) -> None:
    with pytest.raises(ValueError, match=f"max_retries must be an integer >= 0, got {bad!r}"):
        InflightRecordTracker("s0", bad)  # type: ignore[arg-type]


def test_a_negative_sequence_number_is_refused_on_a_fresh_shard() -> None:
    tracker = InflightRecordTracker("s0", 1)
    with pytest.raises(ValueError, match="-1"):
        tracker.on_emit(rec("-1"), False)
    assert tracker.in_flight == 0
    tracker.on_emit(rec("0"), False)
    assert tracker.latest_emitted == "0"


def test_a_sequence_number_that_is_not_a_number_is_named() -> None:
    tracker = InflightRecordTracker("s0", 1)
    with pytest.raises(ValueError, match="sequence number 'abc' is not a decimal number"):
        tracker.on_emit(rec("abc"), False)
    assert tracker.in_flight == 0 and len(tracker) == 0
