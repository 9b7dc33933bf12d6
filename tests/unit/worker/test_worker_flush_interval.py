"""``topology.batch.flush.interval.millis`` as a worker applies it: 0 (the default) sends a
frame for another worker at the end of the round that filled it; a longer interval holds an
outbox that is not full until that many milliseconds after it was first found waiting."""

from __future__ import annotations

import pytest
from transport_fakes import half_worker

from stormpy.testing import Capture, FeederSpout


def test_without_a_flush_interval_a_frame_leaves_at_the_end_of_its_round() -> None:
    feeder = FeederSpout(["n"])
    worker, transport, _tasks = half_worker(feeder, Capture())
    feeder.feed(["x"])  # to "all"'s task on peer "b" too
    worker.run_once()
    assert [peer for peer, _frame in transport.sent] == ["b"]


def test_a_flush_interval_holds_a_frame_that_is_not_full() -> None:
    """An hour's interval: the frame waits, round after round (the test ends long before)."""
    feeder = FeederSpout(["n"])
    worker, transport, _tasks = half_worker(
        feeder, Capture(), {"topology.batch.flush.interval.millis": 3_600_000})
    feeder.feed(["x"])
    for _ in range(5):
        worker.run_once()
    assert transport.sent == []
    assert worker._transfer._flush_interval == 3600.0  # milliseconds read as seconds / 1000


@pytest.mark.parametrize("millis, seconds", [(1, 0.001), (250, 0.25), (0, 0.0)])
def test_the_interval_is_read_in_milliseconds(millis: int, seconds: float) -> None:
    worker, _transport, _tasks = half_worker(
        FeederSpout(["n"]), Capture(), {"topology.batch.flush.interval.millis": millis})
    assert worker._transfer._flush_interval == seconds
