"""Dispatch: undeliverable tuples are counted, and a round's acks go out aggregated — applied
directly by an acker in this worker, one ``__ack_ack`` tuple per remote acker per round."""

from __future__ import annotations

import pytest

import stormpy._native as native
from stormpy.acker.streams import ACK_ACK
from stormpy.topology._tuple import SYSTEM_COMPONENT, Tuple
from stormpy.worker.dispatch import Dispatch


class RecordingCore:
    """Stands in for an AckerCore: records the (root, xor) pairs applied to it."""

    def __init__(self) -> None:
        self.edges: list[tuple[int, int]] = []

    def ack_edges(self, root: int, xor: int) -> None:
        self.edges.append((root, xor))


def test_the_delivery_table_covers_every_task_id_and_counts_drops() -> None:
    dispatch = Dispatch(5, [4, 5])
    assert len(dispatch.deliver) == 6  # indexed by task id, 0 to max_task
    assert dispatch.dropped == 0
    for task in (0, 5):
        dispatch.deliver[task](Tuple([1], "default", 1, "spout", None))
    dispatch.undeliverable(Tuple([2], "default", 1, "spout", None))
    assert dispatch.dropped == 3
    assert dispatch.acker_tasks == [4, 5] and dispatch.acker_cores == [None, None]
    assert dispatch.ack_buffer == {}


def test_acks_are_sent_once_per_round_aggregated_per_remote_acker() -> None:
    dispatch = Dispatch(9, [7, 8, 9])  # acker index = root % 3
    sent: dict[int, list[Tuple]] = {7: [], 8: [], 9: []}
    for task, box in sent.items():
        dispatch.deliver[task] = box.append
    dispatch.ack_buffer.update({3: 30, 4: 40, 6: 60, 10: 100})
    dispatch.flush_acks()
    assert dispatch.ack_buffer == {}
    (to_7,) = sent[7]
    assert to_7.values == [3, 30, 6, 60] and to_7.stream == ACK_ACK
    assert to_7.task == -1 and to_7.component == SYSTEM_COMPONENT and to_7.root == 0
    (to_8,) = sent[8]
    assert to_8.values == [4, 40, 10, 100]
    assert sent[9] == []
    dispatch.flush_acks()  # nothing buffered: nothing sent
    assert [len(b) for b in sent.values()] == [1, 1, 0]


@pytest.mark.skipif(native.COMPILED, reason="drives the code with duck-typed fakes, which the "
                    "compiled build's type checks refuse; the unit run on the pure-Python path covers it")
def test_acks_for_an_acker_in_this_worker_are_applied_directly() -> None:
    dispatch = Dispatch(9, [7, 8, 9])
    remote: list[Tuple] = []
    for task in (7, 8, 9):
        dispatch.deliver[task] = remote.append
    core = RecordingCore()
    dispatch.attach_acker(8, core)  # type: ignore[arg-type]
    assert dispatch.acker_cores[1] is core and dispatch.acker_cores[0] is None
    dispatch.ack_buffer.update({4: 40, 7: 70, 3: 30, 5: 50})
    dispatch.flush_acks()
    assert core.edges == [(4, 40), (7, 70)]
    assert sorted(tuple(t.values) for t in remote) == [(3, 30), (5, 50)]


@pytest.mark.skipif(native.COMPILED, reason="drives the code with duck-typed fakes, which the "
                    "compiled build's type checks refuse; the unit run on the pure-Python path covers it")
def test_a_single_local_acker_takes_every_root() -> None:
    dispatch = Dispatch(3, [3])
    core = RecordingCore()
    dispatch.attach_acker(3, core)  # type: ignore[arg-type]
    dispatch.ack_buffer.update({1: 2, 2: 3})
    dispatch.flush_acks()
    assert core.edges == [(1, 2), (2, 3)] and dispatch.dropped == 0
