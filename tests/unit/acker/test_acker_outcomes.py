"""What the acker decides and how long it remembers: outcomes in every message order, the number
of rotations an undecided root survives, and the limits of the ledger and the RotatingMap."""

from __future__ import annotations

import pytest

from stormpy.acker import AckerBolt, AckerCore, AckLedger, Outcome, RotatingMap
from stormpy.acker.ledger import COMPLETED, FAILED
from stormpy.acker.streams import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET_TIMEOUT

Reply = tuple[int, str, list[int]]


def _core() -> tuple[AckerCore, list[Reply]]:
    replies: list[Reply] = []
    return AckerCore(lambda task, stream, values: replies.append((task, stream, values))), replies


def test_a_fail_that_arrives_before_the_init_fails_the_root_at_the_init() -> None:
    core, replies = _core()
    core.handle(ACK_FAIL, [5])  # the spout's init is still on its way from another worker
    assert replies == []
    core.handle(ACK_INIT, [5, 0b11, 4])
    assert replies == [(4, ACK_FAIL, [5])]
    assert len(core.ledger) == 0


def test_a_fail_after_the_acks_completed_the_tree_but_before_the_init_still_fails() -> None:
    core, replies = _core()
    core.ack_edges(5, 0b11)
    core.handle(ACK_FAIL, [5])
    core.init(5, 0b11, 4)
    assert replies == [(4, ACK_FAIL, [5])]


def test_a_fail_after_the_init_fails_the_root_once() -> None:
    core, replies = _core()
    core.init(5, 0b11, 4)
    core.handle(ACK_FAIL, [5])
    core.handle(ACK_FAIL, [5])  # a second failing tuple of the same tree: the root is gone
    core.handle(ACK_ACK, [5, 0b11])
    assert replies == [(4, ACK_FAIL, [5])]


def test_a_round_of_ack_pairs_leaves_nothing_pending() -> None:
    core, replies = _core()
    core.init(1, 0b0110, 7)
    core.init(2, 0b1000, 8)
    core.handle(ACK_ACK, [1, 0b0110, 2, 0b1000])
    assert sorted(replies) == [(7, ACK_ACK, [1]), (8, ACK_ACK, [2])]
    assert len(core.ledger) == 0


def test_a_reset_for_an_unknown_root_is_not_forwarded() -> None:
    core, replies = _core()
    core.handle(ACK_RESET_TIMEOUT, [99])
    assert replies == []


def test_the_acker_bolt_replies_to_the_spout_task_with_emit_direct() -> None:
    bolt = AckerBolt()
    sent: list[tuple[int, list[int], str]] = []

    def emit_direct(task: int, values: list[int], stream: str = "default") -> None:
        sent.append((task, values, stream))

    bolt.emit_direct = emit_direct  # type: ignore[method-assign]  # the runtime binds it so
    bolt.core.init(3, 0b1, 6)
    bolt.core.ack_edges(3, 0b1)
    bolt.core.init(4, 0b1, 6)
    bolt.core.handle(ACK_RESET_TIMEOUT, [4])
    assert sent == [(6, [3], ACK_ACK), (6, [4], ACK_RESET_TIMEOUT)]
    assert bolt.ledger is bolt.core.ledger


def test_a_core_without_a_reply_says_so_when_it_has_to_reply() -> None:
    core = AckerCore()
    core.ack_edges(1, 0b1)  # nothing to tell yet
    with pytest.raises(RuntimeError, match=r"^AckerCore\.reply was not set$"):
        core.init(1, 0b1, 2)


def test_the_ledger_reports_who_to_tell_for_a_root_completed_by_its_init() -> None:
    ledger = AckLedger()
    assert ledger.ack(8, 0b101) is None
    assert ledger.init(8, 0b101, spout_task=3) == Outcome(COMPLETED, 8, 3)
    assert ledger.fail(9) is None
    assert ledger.init(9, 0b1, spout_task=2) == Outcome(FAILED, 9, 2)


def test_an_undecided_root_is_forgotten_after_three_rotations_by_default() -> None:
    ledger = AckLedger()
    ledger.init(1, 0xF, spout_task=1)
    assert ledger.rotate() == [] and ledger.rotate() == []
    assert 1 in ledger
    assert ledger.rotate() == [1]


def test_an_early_ack_is_remembered_as_long_as_an_init() -> None:
    ledger = AckLedger(buckets=3)
    ledger.ack(1, 0b11)
    ledger.rotate()
    ledger.rotate()
    assert ledger.init(1, 0b11, spout_task=5) == Outcome(COMPLETED, 1, 5)


@pytest.mark.parametrize("cls, article", [(AckLedger, "an"), (RotatingMap, "a")])
def test_two_buckets_is_the_least_allowed(cls: type, article: str) -> None:
    assert len(cls(2)) == 0
    with pytest.raises(ValueError, match=rf"^{article} {cls.__name__} needs at least 2 buckets$"):
        cls(1)


def test_rotating_map_expires_entries_after_three_rotations_by_default() -> None:
    m: RotatingMap[str, int] = RotatingMap()
    m.put("a", 1)
    assert m.rotate() == {} and m.rotate() == {}
    assert "a" in m and "b" not in m
    assert m.rotate() == {"a": 1}
    assert "a" not in m


def test_putting_a_key_again_keeps_one_entry_with_the_new_value() -> None:
    m: RotatingMap[str, int] = RotatingMap(3)
    m.put("a", 1)
    m.rotate()
    m.put("a", 2)
    assert len(m) == 1 and list(m) == ["a"]
    assert m.rotate() == {} and m.rotate() == {}
    assert m.rotate() == {"a": 2}


def test_touching_an_absent_key_reports_it_and_adds_nothing() -> None:
    m: RotatingMap[str, int] = RotatingMap(2)
    assert m.touch("a") is False
    assert len(m) == 0
    m.put("a", 1)
    assert m.pop("a") == 1 and m.pop("a", -1) == -1


def test_popping_finds_a_key_in_any_bucket_and_removes_only_it() -> None:
    m: RotatingMap[str, int] = RotatingMap(3)
    m.put("old", 1)
    m.rotate()
    m.put("mid", 2)
    m.rotate()
    m.put("new", 3)
    assert m.pop("old") == 1 and m.pop("mid", -1) == 2 and m.pop("new", -1) == 3
    assert len(m) == 0 and m.pop("old") is None and m.pop("mid", -1) == -1


def test_popping_a_stored_none_returns_it_not_the_default() -> None:
    """A stored None is a value like any other: ``pop`` returns it (not ``default``) and
    removes the key, from the newest bucket as from an older one."""
    m: RotatingMap[str, int | None] = RotatingMap(2)
    m.put("older", None)
    m.rotate()
    m.put("newer", None)
    m.put("other", 5)
    assert m.pop("newer", -1) is None and "newer" not in m
    assert m.pop("older", -1) is None and "older" not in m
    assert m.pop("older", -1) == -1 and list(m) == ["other"]
