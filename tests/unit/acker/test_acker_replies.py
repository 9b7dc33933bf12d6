"""The acker's reply to a spout in another worker for every order of its messages.

A spout whose acker runs in another worker reaches it only through acker messages (its init is an
``__ack_init`` tuple, not a direct call), and those may arrive in any order relative to the bolts'
acks, fails and timeout resets. For every permutation the spout task must get exactly the reply
the rules below give, and never a second decision.

Rules (Storm's acker): a root is decided at the first moment its init has arrived and it has
either failed (``fail``) or every edge is acked (``ack``); one reply carries the decision, later
messages about it get none. A reset before the decision is forwarded to the spout task when the
init has arrived (the acker knows the task only from the init), dropped otherwise.
"""

from __future__ import annotations

import itertools

import pytest

from stormpy.acker import AckerCore
from stormpy.acker.streams import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET_TIMEOUT

ROOT = 0x1234_5678_9ABC
SPOUT_TASK = 7
#: the spout tuple went to two bolts: edges e1 and e2; each bolt acks its own edge
E1, E2 = 0x0F0F_0001, 0x00F0_0F02
MESSAGES = {
    "init": (ACK_INIT, [ROOT, E1 ^ E2, SPOUT_TASK]),
    "ack1": (ACK_ACK, [ROOT, E1]),
    "ack2": (ACK_ACK, [ROOT, E2]),
    "fail": (ACK_FAIL, [ROOT]),
    "reset": (ACK_RESET_TIMEOUT, [ROOT]),
}


def expected_replies(order: tuple[str, ...]) -> list[tuple[int, str, list[int]]]:
    """The replies the module docstring's rules give for messages arriving in ``order``."""
    replies = []
    init = failed = decided = False
    acked: set[str] = set()
    for msg in order:
        if decided:
            continue
        if msg == "init":
            init = True
        elif msg == "fail":
            failed = True
        elif msg == "reset":
            if init:
                replies.append((SPOUT_TASK, ACK_RESET_TIMEOUT, [ROOT]))
            continue
        else:
            acked.add(msg)
        if init and failed:
            replies.append((SPOUT_TASK, ACK_FAIL, [ROOT]))
            decided = True
        elif init and acked == {"ack1", "ack2"}:
            replies.append((SPOUT_TASK, ACK_ACK, [ROOT]))
            decided = True
    return replies


SCENARIOS = [
    ("init", "ack1", "ack2"),
    ("init", "fail"),
    ("init", "ack1", "fail"),
    ("init", "ack1", "ack2", "fail"),
    ("init", "ack1", "ack2", "reset"),
    ("init", "ack1", "fail", "reset"),
]
ORDERS = sorted({order for s in SCENARIOS for order in itertools.permutations(s)})


@pytest.mark.parametrize("order", ORDERS, ids=["-".join(o) for o in ORDERS])
def test_acker_reply_to_a_remote_spout_for_every_message_order(order: tuple[str, ...]) -> None:
    """Guarantee: whatever the order in which init, acks, fail and reset reach the acker, the
    spout task gets one decision (fail wins over a later ack, a completed tree is acked) and
    resets only while the root is pending and known."""
    replies: list[tuple[int, str, list[int]]] = []
    core = AckerCore(lambda task, stream, values: replies.append((task, stream, list(values))))
    for msg in order:
        stream, values = MESSAGES[msg]
        core.handle(stream, list(values))
    assert replies == expected_replies(order)
    decided = [r for r in replies if r[1] != ACK_RESET_TIMEOUT]
    assert len(decided) == 1, "exactly one decision per root"


def test_rules_cover_the_cases_the_issue_names() -> None:
    """The reference rules themselves: a fail before the init still fails; acks before the
    init complete at the init; a reset before the init is dropped."""
    assert expected_replies(("fail", "init")) == [(SPOUT_TASK, ACK_FAIL, [ROOT])]
    assert expected_replies(("ack1", "ack2", "init")) == [(SPOUT_TASK, ACK_ACK, [ROOT])]
    assert expected_replies(("reset", "init", "fail")) == [(SPOUT_TASK, ACK_FAIL, [ROOT])]
    assert expected_replies(("init", "reset", "ack1", "ack2")) == [
        (SPOUT_TASK, ACK_RESET_TIMEOUT, [ROOT]), (SPOUT_TASK, ACK_ACK, [ROOT])]
