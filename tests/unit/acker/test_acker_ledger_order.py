"""The acker ledger when messages come out of order or degenerate: an init whose tuples went to
no task completes at once, acks or a fail that arrived before the init are kept in the newest
bucket (for the whole timeout) and decide the root when the init comes, and the core's count of
refused messages adds up whatever the order."""

from __future__ import annotations

from stormpy.acker.core import AckerCore
from stormpy.acker.ledger import COMPLETED, FAILED, AckLedger, Outcome


def test_an_init_with_nothing_sent_completes_at_once_and_keeps_nothing() -> None:
    ledger = AckLedger()
    assert ledger.init(5, 0, 7) == Outcome(COMPLETED, 5, 7)
    assert 5 not in ledger and len(ledger) == 0


def test_an_init_after_its_acks_completes_and_a_fresh_init_waits() -> None:
    ledger = AckLedger()
    assert ledger.ack(5, 0b1010) is None  # the acks first: kept, no spout task yet
    assert ledger.init(5, 0b1010, 7) == Outcome(COMPLETED, 5, 7)
    assert 5 not in ledger
    assert ledger.init(6, 0b11, 8) is None and 6 in ledger  # nothing acked yet: pending
    assert ledger.ack(6, 0b11) == Outcome(COMPLETED, 6, 8)


def test_a_fail_before_the_init_is_kept_for_the_whole_timeout() -> None:
    ledger = AckLedger(buckets=3)
    assert ledger.fail(5) is None  # no spout task known yet
    assert ledger.rotate() == [] and ledger.rotate() == []  # still within the timeout
    assert ledger.init(5, 0b111, 7) == Outcome(FAILED, 5, 7)
    assert len(ledger) == 0
    assert ledger.fail(6) is None
    for _ in range(3):
        ledger.rotate()
    assert 6 not in ledger  # past the timeout it is forgotten


def test_refused_messages_are_counted_one_by_one_in_any_order() -> None:
    replies: list[tuple[int, str, list[int]]] = []
    core = AckerCore(lambda task, stream, values: replies.append((task, stream, values)))
    core.spout_tasks = frozenset({7})
    core.handle("__ack_fail", [1, 2])       # a fail takes one root
    core.handle("__ack_ack", [1, 2, 3])     # pairs only
    core.handle("__ack_ack", [1])
    core.handle("__ack_init", [1, 2, 99])   # no such spout task
    core.handle("__ack_ack", [4, 0b1, 4, 0b1])  # two pairs of one root: accepted
    assert core.rejected == 4 and replies == []
