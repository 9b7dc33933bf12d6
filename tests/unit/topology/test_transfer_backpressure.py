"""Transfer: tuples for other workers leave in batches of ``topology.transfer.batch.size`` (or at
the end of the round), frames the transport refuses wait in order and hold the spouts back, and
a full local queue holds them back too."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

import pytest
from transport_fakes import ScriptedTransport

import stormpy._native as native
from stormpy.messaging.codec import decode_frame
from stormpy.topology._errors import EmitError
from stormpy.topology._tuple import Tuple
from stormpy.worker.dispatch import Dispatch
from stormpy.worker.inbound import wire_tuples
from stormpy.worker.transfer import Transfer

COMPONENTS = {1: "spout", 2: "bolt", 3: "bolt", 4: "far", 5: "far", 6: "other"}


def make(batch: int = 100, queue_cap: int = 10, queues: int = 2,
         peers: Mapping[int, str] | None = None,
         local: frozenset[int] = frozenset({1, 2, 3})) -> tuple[Transfer, ScriptedTransport,
                                                               Dispatch, list[deque[Tuple]]]:
    transport = ScriptedTransport()
    dispatch = Dispatch(6, [])
    qs: list[deque[Tuple]] = [deque() for _ in range(queues)]
    transfer = Transfer(transport, dispatch, batch, COMPONENTS, qs, queue_cap)
    transfer.route({4: "b", 5: "b", 6: "c"} if peers is None else peers, local)
    return transfer, transport, dispatch, qs


def tup(value: object, stream: str = "default", src: int = 1, root: int = 0, edge: int = 0,
        anchors: dict[int, int] | None = None) -> Tuple:
    return Tuple([value], stream, src, COMPONENTS.get(src, "?"), None, root, edge, anchors)


def sent_values(transport: ScriptedTransport) -> list[tuple[str, int, object]]:
    """(peer, destination task, first value) of every tuple sent, in order."""
    return [(peer, t[0], t[6][0]) for peer, frame in transport.sent for t in wire_tuples(decode_frame(frame))]


def test_remote_tuples_go_out_in_wire_form_at_the_end_of_the_round() -> None:
    transfer, transport, dispatch, _qs = make()
    dispatch.deliver[4](tup("a", stream="s", src=2, root=11, edge=22))
    dispatch.deliver[6](tup("b", anchors={5: 6}))
    assert transport.sent == []
    transfer.flush()
    frames = {peer: wire_tuples(decode_frame(frame)) for peer, frame in transport.sent}
    assert frames == {"b": [[4, "s", 2, 11, 22, None, ["a"]]],
                      "c": [[6, "default", 1, 0, 0, {5: 6}, ["b"]]]}
    transfer.flush()  # empty outboxes send nothing
    assert len(transport.sent) == 2


def test_a_full_outbox_is_sent_at_once_as_one_frame() -> None:
    transfer, transport, dispatch, _qs = make(batch=3)
    for i in range(2):
        dispatch.deliver[4](tup(i))
    assert transport.sent == []
    dispatch.deliver[5](tup(2))  # same peer "b": the third tuple fills the box
    assert len(transport.sent) == 1
    assert sent_values(transport) == [("b", 4, 0), ("b", 4, 1), ("b", 5, 2)]
    dispatch.deliver[4](tup(3))
    assert len(transport.sent) == 1
    transfer.flush()
    assert sent_values(transport)[-1] == ("b", 4, 3)


@pytest.mark.parametrize("batch", [1, 0, -5])
def test_a_batch_size_of_one_or_less_sends_every_tuple_at_once(batch: int) -> None:
    _transfer, transport, dispatch, _qs = make(batch=batch)
    dispatch.deliver[4](tup("x"))
    assert sent_values(transport) == [("b", 4, "x")]


def test_routing_points_remote_tasks_at_their_peer_and_the_rest_nowhere() -> None:
    # a local task listed among the peers first must not stop the others from being routed
    peers = {2: "b", 4: "b", 5: "c"}
    transfer, transport, dispatch, _qs = make(peers=peers)
    dispatch.deliver[6](tup("nowhere"))
    assert dispatch.dropped == 1
    dispatch.deliver[4](tup("to b"))
    dispatch.deliver[5](tup("to c"))
    transfer.flush()
    assert sorted(sent_values(transport)) == [("b", 4, "to b"), ("c", 5, "to c")]
    # reassigned: task 5 has no place any more, task 6 moved to "b"
    transfer.route({4: "b", 6: "b"}, frozenset({1, 2, 3}))
    dispatch.deliver[5](tup("gone"))
    dispatch.deliver[6](tup("moved"))
    transfer.flush()
    assert dispatch.dropped == 2
    assert sent_values(transport)[-1] == ("b", 6, "moved")


def test_routing_leaves_local_tasks_entries_alone() -> None:
    transport = ScriptedTransport()
    dispatch = Dispatch(6, [])
    got: list[Tuple] = []
    dispatch.deliver[2] = got.append
    dispatch.deliver[3] = got.append
    transfer = Transfer(transport, dispatch, 10, COMPONENTS, [], 5)
    transfer.route({3: "b", 4: "b", 0: "b"}, frozenset({2, 3}))
    dispatch.deliver[2](tup("here"))
    dispatch.deliver[3](tup("here too"))
    dispatch.deliver[0](tup("task 0 is remote"))
    dispatch.deliver[1](tup("no peer"))
    transfer.flush()
    assert [t.values for t in got] == [["here"], ["here too"]]
    assert sent_values(transport) == [("b", 0, "task 0 is remote")]
    assert dispatch.dropped == 1


def test_refused_frames_wait_in_order_and_newer_frames_queue_behind_them() -> None:
    transfer, transport, dispatch, _qs = make(batch=1)
    transport.accept = False
    dispatch.deliver[4](tup(0))
    assert transfer.backpressured()
    transport.accept = True
    dispatch.deliver[4](tup(1))  # the peer takes frames again, but frame 0 waits: 1 goes behind
    dispatch.deliver[6](tup("c"))  # another peer is not held up
    assert sent_values(transport) == [("c", 6, "c")]
    assert transfer.backpressured()
    transfer.flush()
    assert sent_values(transport)[1:] == [("b", 4, 0), ("b", 4, 1)]
    assert not transfer.backpressured()


def test_a_partly_accepted_retry_keeps_the_rest_in_order() -> None:
    transfer, transport, dispatch, _qs = make(batch=1)
    transport.accept = False
    for i in range(4):
        dispatch.deliver[4](tup(i))
    transport.accept = 2
    transfer.flush()
    assert [v for _p, _d, v in sent_values(transport)] == [0, 1]
    assert transfer.backpressured()
    transport.accept = True
    transfer.flush()
    assert [v for _p, _d, v in sent_values(transport)] == [0, 1, 2, 3]
    assert not transfer.backpressured()


def test_a_full_local_queue_is_backpressure_and_a_cap_below_one_means_one() -> None:
    transfer, _transport, _dispatch, qs = make(queue_cap=2)
    assert not transfer.backpressured()
    qs[1].append(tup(1))
    assert not transfer.backpressured()
    qs[1].append(tup(2))
    assert transfer.backpressured()  # holds queue_cap tuples
    qs[1].popleft()
    assert not transfer.backpressured()
    transfer, _transport, _dispatch, qs = make(queue_cap=0)
    assert not transfer.backpressured()
    qs[0].append(tup(1))
    assert transfer.backpressured()
    transfer, _transport, _dispatch, qs = make(queue_cap=1)
    qs[0].append(tup(1))
    assert transfer.backpressured()


def test_unserialisable_values_name_the_component_stream_and_task() -> None:
    transfer, transport, dispatch, _qs = make()
    dispatch.deliver[4](tup("fine"))
    dispatch.deliver[5](tup(object(), stream="events", src=2))
    with pytest.raises(EmitError) as info:
        transfer.flush()
    message = str(info.value)
    assert message.startswith("component 'bolt', stream 'events': cannot serialise values for "
                              "task 5: "), message
    assert info.value.__cause__ is None
    assert transport.sent == []


def test_unserialisable_values_from_an_unknown_task_are_the_systems() -> None:
    transfer, _transport, dispatch, _qs = make()
    dispatch.deliver[4](tup(object(), src=99))
    with pytest.raises(EmitError, match="^component '__system', stream 'default': cannot "
                                        "serialise values for task 4"):
        transfer.flush()


@pytest.mark.skipif(native.COMPILED, reason="drives the code with duck-typed fakes, which the "
                    "compiled build's type checks refuse; the unit run on the pure-Python path covers it")
def test_a_batch_that_fails_as_a_whole_says_so() -> None:
    transfer, _transport, dispatch, _qs = make()
    dispatch.deliver[4](Tuple(["ok"], object(), 1, "spout", None))  # type: ignore[arg-type]
    with pytest.raises(EmitError, match="^cannot serialise a batch of tuples: can not serialize "
                                        "'object' object$"):  # msgpack's own words
        transfer.flush()


def test_refusals_held_frames_full_queues_and_backpressure_time_are_counted() -> None:
    now = [100.0]
    transport = ScriptedTransport()
    dispatch = Dispatch(6, [])
    qs: list[deque[Tuple]] = [deque(), deque()]
    transfer = Transfer(transport, dispatch, 1, COMPONENTS, qs, 2, clock=lambda: now[0])
    transfer.route({4: "b"}, frozenset({1, 2, 3}))
    assert not transfer.backpressured()
    assert transfer.stats() == {"frames_refused": 0.0, "frames_held": 0.0,
                                "backpressure_rounds": 0.0, "backpressure_secs": 0.0}
    transport.accept = False
    dispatch.deliver[4](tup(0))  # refused
    dispatch.deliver[4](tup(1))  # queued behind it, not offered: held, not refused
    assert transfer.backpressured()  # a spell starts at 100
    now[0] = 100.5
    transfer.flush()  # the retry is refused again
    assert transfer.backpressured()
    assert transfer.stats()["frames_refused"] == 2 and transfer.stats()["frames_held"] == 2
    transport.accept = True
    transfer.flush()
    now[0] = 101.5
    assert not transfer.backpressured()  # the spell ends: 1.5 s
    qs[1].extend([tup(2), tup(3)])
    assert transfer.backpressured()  # a full queue: another spell, from 101.5
    now[0] = 102.0
    qs[1].clear()
    assert not transfer.backpressured()
    assert transfer.queue_full == [0, 1]
    assert transfer.stats() == {"frames_refused": 2.0, "frames_held": 0.0,
                                "backpressure_rounds": 3.0, "backpressure_secs": 2.0}


def test_a_list_of_tuples_for_a_remote_task_fills_the_outbox_in_order_and_sends_full_boxes() -> None:
    transfer, transport, dispatch, _qs = make(batch=3)
    dispatch.deliver[4](tup("first"))
    dispatch.deliver_many[5]([tup(i) for i in range(4)])  # the box fills after two of them
    assert sent_values(transport) == [("b", 4, "first"), ("b", 5, 0), ("b", 5, 1)]
    dispatch.deliver_many[6]([tup("c", root=7, edge=8)])
    transfer.flush()
    assert sent_values(transport)[3:] == [("b", 5, 2), ("b", 5, 3), ("c", 6, "c")]
    assert [t for peer, f in transport.sent if peer == "c" for t in wire_tuples(decode_frame(f))] == \
        [[6, "default", 1, 7, 8, None, ["c"]]]


def test_lists_for_tasks_with_no_place_are_dropped_and_counted_and_local_ones_are_untouched() -> None:
    _transfer, transport, dispatch, _qs = make(peers={4: "b"})
    got: list[Tuple] = []
    dispatch.deliver_many[2] = got.extend  # the worker installs its queues' extend
    dispatch.deliver_many[5]([tup("x"), tup("y")])
    dispatch.deliver_many[2]([tup("here")])
    assert dispatch.dropped == 2 and transport.sent == []
    assert [t.values for t in got] == [["here"]]
