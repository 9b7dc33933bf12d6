"""The batch forms of AckedPrefix (the Kafka spout's batch path): ``emit_run`` gives the state
``emit`` of each position would, whether or not the run is new and increasing; ``ack_emitted``
and ``ack_emitted_many`` ack positions known to be emitted and ignore those at or below the last
commit; ``commit_through`` of nothing drops nothing. Each is checked against the one-by-one form."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy.connectors._offsets import AckedPrefix
from stormpy.connectors.kafka import OffsetManager, TopicPartition


def state(prefix: AckedPrefix) -> tuple[Any, ...]:
    """Everything the prefix shows: its positions in order, acked ones, latest, floor."""
    positions = [prefix.nth(n) for n in range(1, prefix.pending + 1)]
    return (positions, [p for p in positions if prefix.is_acked(p)], prefix.latest, prefix.floor,
            prefix.committable())


def one_by_one(before: list[Any], floor: Any, run: list[Any]) -> AckedPrefix:
    prefix = AckedPrefix()
    for p in before:
        prefix.emit(p)
    if floor is not None:
        prefix.commit_through(floor)
    for p in run:
        prefix.emit(p)
    return prefix


@pytest.mark.parametrize(("before", "floor", "run"), [
    ([], None, [1, 2, 5]),             # new and increasing: the one-step append
    ([3], None, [4, 9]),
    ([], None, [7, 7, 8]),             # a repeat inside the run
    ([], None, [3, 2]),                # decreasing
    ([], None, [1, 3, 2, 4]),          # out of order after the first two
    ([10], None, [5, 6]),              # below what was emitted before
    ([10], None, [10, 11]),            # starting at the latest emitted
    ([], 5, [5, 6]),                   # starting at the floor
    ([], 5, [3, 6, 7]),                # starting below the floor
    ([8], 5, [6, 7]),                  # above the floor, below the latest
    ([], 5, [6, 7]),                   # above the floor, nothing emitted
])
def test_emit_run_records_what_emitting_each_position_would(before: list[Any], floor: Any,
                                                             run: list[Any]) -> None:
    prefix = one_by_one(before, floor, [])
    prefix.emit_run(run)
    assert state(prefix) == state(one_by_one(before, floor, run))


def test_emit_run_of_nothing_changes_nothing() -> None:
    prefix = one_by_one([4], None, [])
    prefix.emit_run([])
    assert state(prefix) == ([4], [], 4, None, None)


def test_ack_emitted_acks_above_the_floor_and_ignores_the_floor_and_below() -> None:
    prefix = AckedPrefix()
    prefix.emit_run([1, 2, 3])
    assert prefix.ack_emitted(1) is True and prefix.committable() == 1  # no commit yet
    prefix.commit_through(1)
    prefix.emit_run([4, 5])
    assert prefix.ack_emitted(1) is False and prefix.ack_emitted(0) is False  # at, below
    assert prefix.acked_count == 0
    assert prefix.ack_emitted(2) is True and prefix.ack_emitted(3) is True
    assert prefix.committable() == 3 and prefix.acked_count == 2


def test_ack_emitted_many_acks_only_what_lies_above_the_floor() -> None:
    fresh = AckedPrefix()
    fresh.emit_run([1, 2, 3])
    fresh.ack_emitted_many([2, 1])  # no commit yet: every one
    assert fresh.committable() == 2 and fresh.acked_count == 2
    prefix = AckedPrefix()
    prefix.emit_run([4, 5, 6, 7])
    prefix.commit_through(5)
    prefix.ack_emitted_many([6, 7])  # all above the floor
    assert prefix.acked_count == 2 and prefix.committable() == 7
    prefix.commit_through(7)
    prefix.emit_run([8, 9])
    prefix.ack_emitted_many([7, 8, 9])  # one at the floor
    assert [p for p in (7, 8, 9) if prefix.is_acked(p)] == [8, 9] and prefix.acked_count == 2
    prefix.ack_emitted_many([3, 6])  # all at or below it
    assert prefix.acked_count == 2


def test_commit_through_below_every_position_drops_nothing() -> None:
    assert AckedPrefix().commit_through(5) == 0
    prefix = AckedPrefix()
    prefix.emit_run([7, 8])
    prefix.ack(7)
    assert prefix.commit_through(6) == 0 and prefix.pending == 2 and prefix.floor == 6
    assert prefix.commit_through(7) == 1


def test_the_offset_manager_acks_emitted_offsets_through_the_prefix() -> None:
    om = OffsetManager(TopicPartition("t", 0), 10)
    om.add_emitted_run([10, 11, 12])
    assert om.ack_emitted(10) is True and om.ack_emitted(9) is False
    om.ack_emitted_many([])  # nothing: no change
    om.ack_emitted_many([12, 11])
    next_commit = om.find_next_commit_offset("m")
    assert next_commit is not None and (next_commit.offset, next_commit.metadata) == (13, "m")
    assert om.commit(next_commit) == 3
