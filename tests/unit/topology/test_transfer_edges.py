"""Transfer, at its edges: an outbox filled by batch records goes out at once to its peer; every
refused offer counts (for each peer), a frame queued behind a refused one does not; a peer whose
retry is refused holds up neither the other peers' retries nor the round's outboxes; the
backpressure time of a spell starting when the clock reads 0; a full queue counted every round;
queued batch rows left out when no queue tasks are given; a tuple whose anchors cannot be
packed named like one whose values cannot."""

from __future__ import annotations

import pytest
from transfer_kit import COMPONENTS, make_transfer, sent_records

from stormpy.topology._columns import ColumnBatch
from stormpy.topology._errors import EmitError
from stormpy.topology._fields import Fields
from stormpy.topology._tuple import Tuple


def tup(value: object, stream: str = "default", src: int = 1,
        anchors: dict[int, int] | None = None) -> Tuple:
    return Tuple([value], stream, src, COMPONENTS[src], None, 0, 0, anchors)


def test_an_outbox_filled_by_batch_records_goes_to_its_peer_at_once() -> None:
    _transfer, transport, dispatch, _qs = make_transfer(batch=2)
    fields = Fields(["w"])
    dispatch.deliver_batch[4](ColumnBatch([["a"], ["b"]], "default", 1, "spout", fields))
    assert transport.sent == []
    dispatch.deliver_batch[5](ColumnBatch([["c"]], "default", 1, "spout", fields, root=7, edge=8))
    assert sent_records(transport) == [("b", [4, "default", 1, 0, 0, None, [["a", "b"]], 2]),
                                  ("b", [5, "default", 1, 7, 8, None, [["c"]], 1])]
    assert len(transport.sent) == 1  # one frame, sent when the box was full


def test_every_refused_offer_counts_and_a_frame_queued_behind_one_does_not() -> None:
    transfer, transport, dispatch, _qs = make_transfer(batch=1)
    transport.accept = False
    dispatch.deliver[4](tup("to b"))
    dispatch.deliver[6](tup("to c"))
    assert transfer.frames_refused == 2 and transfer.frames_held == 2
    dispatch.deliver[5](tup("behind"))  # b is blocked: queued, not offered
    assert transfer.frames_refused == 2 and transfer.frames_held == 3
    assert transport.refused == 2


def test_a_refused_retry_holds_up_neither_other_peers_nor_the_outboxes() -> None:
    transfer, transport, dispatch, _qs = make_transfer()
    transport.accept = False
    dispatch.deliver[4](tup("b first"))
    dispatch.deliver[6](tup("c first"))
    transfer.flush()  # both refused: b's frame is retried first from now on
    assert transfer.frames_held == 2
    transport.accept = True
    transport.refusing = {"b"}
    dispatch.deliver[6](tup("c second"))
    transfer.flush()
    assert [(peer, r[6][0]) for peer, r in sent_records(transport)] == \
        [("c", "c first"), ("c", "c second")]
    assert transfer.frames_held == 1 and transfer.frames_refused == 3


def test_a_backpressure_spell_starting_at_clock_zero_is_timed_whole() -> None:
    now = [0.0]
    transfer, transport, dispatch, _qs = make_transfer(batch=1, clock=lambda: now[0])
    transport.accept = False
    dispatch.deliver[4](tup(0))
    assert transfer.backpressured()  # the spell starts at 0.0
    now[0] = 1.0
    assert transfer.backpressured()  # the same spell
    transport.accept = True
    transfer.flush()
    now[0] = 3.0
    assert not transfer.backpressured()
    assert transfer.stats()["backpressure_secs"] == 3.0
    assert transfer.stats()["backpressure_rounds"] == 2.0


def test_a_full_queue_counts_every_round_it_holds_the_spouts() -> None:
    transfer, _transport, _dispatch, qs = make_transfer(queue_cap=1)
    qs[1].append(tup(1))
    for _ in range(3):
        assert transfer.backpressured()
    assert transfer.queue_full == [0, 3]


def test_without_queue_tasks_queued_batch_rows_are_not_counted() -> None:
    transfer, _transport, dispatch, qs = make_transfer(queue_cap=2)
    for task in range(len(dispatch.queued_rows)):
        dispatch.queued_rows[task] = 10
    qs[0].append(tup(1))
    assert not transfer.backpressured()
    assert transfer.queue_full == [0, 0]


def test_unpackable_anchors_name_the_component_stream_and_task() -> None:
    transfer, transport, dispatch, _qs = make_transfer()
    dispatch.deliver[4](tup("fine"))
    dispatch.deliver[5](tup("fine too", stream="events", src=2, anchors={2 ** 70: 1}))
    with pytest.raises(EmitError, match="^component 'bolt', stream 'events': cannot serialise "
                                        "values for task 5: "):
        transfer.flush()
    assert transport.sent == []
