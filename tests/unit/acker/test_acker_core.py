"""AckerCore: acker messages in, replies to spout tasks out."""

from __future__ import annotations

from stormpy.acker import AckerCore
from stormpy.acker.streams import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET_TIMEOUT


def _core() -> tuple[AckerCore, list[tuple[int, str, list[int]]]]:
    replies: list[tuple[int, str, list[int]]] = []
    core = AckerCore(lambda task, stream, values: replies.append((task, stream, values)))
    return core, replies


def test_one_ack_message_may_carry_a_round_of_pairs_for_several_roots() -> None:
    core, replies = _core()
    core.init(11, 0b0110, 7)
    core.init(22, 0b1000, 8)
    core.handle(ACK_INIT, [33, 0b1, 9])
    core.handle(ACK_ACK, [11, 0b0010, 22, 0b1000, 11, 0b0100, 33, 0b0])
    assert replies == [(8, ACK_ACK, [22]), (7, ACK_ACK, [11])]
    core.handle(ACK_ACK, [33, 0b1])
    assert replies[-1] == (9, ACK_ACK, [33])


def test_acks_before_the_init_complete_at_the_init() -> None:
    core, replies = _core()
    core.ack_edges(5, 0b11)
    assert replies == []
    core.init(5, 0b11, 3)
    assert replies == [(3, ACK_ACK, [5])]


def test_fail_and_reset_timeout_reach_the_spout_task() -> None:
    core, replies = _core()
    core.init(5, 0b11, 3)
    core.handle(ACK_RESET_TIMEOUT, [5])
    core.handle(ACK_FAIL, [5])
    assert replies == [(3, ACK_RESET_TIMEOUT, [5]), (3, ACK_FAIL, [5])]
    core.handle("some-other-stream", [5])
    assert len(replies) == 2
