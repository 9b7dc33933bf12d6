"""Transfer's runs and outboxes, counted: a tuple in the middle of a run whose edge was not
drawn for its task goes single and counts toward the batch size like any other (the frame
leaves at exactly ``topology.transfer.batch.size`` tuples); a first tracked tuple not drawn
here goes single too and the next one opens the run; a root that comes back to back after
another root is counted in one segment; a sent frame's outbox starts counting (and, with a
flush interval, waiting) from nothing."""

from __future__ import annotations

from collections import deque

from transfer_kit import COMPONENTS, make_transfer
from transport_fakes import ScriptedTransport

from stormpy.messaging.codec import RUN_ITEMS, decode_frame
from stormpy.topology._fields import Fields
from stormpy.topology._tuple import Tuple
from stormpy.worker.dispatch import Dispatch
from stormpy.worker.transfer import Transfer

ONE = Fields(["v"])


def tup(value: object, root: int = 0, edge: int = 0) -> Tuple:
    return Tuple([value], "default", 1, COMPONENTS[1], ONE, root, edge, None)


def frames(transport: ScriptedTransport) -> list[list[list[object]]]:
    return [decode_frame(f) for _p, f in transport.sent]


def test_a_tuple_not_drawn_here_counts_toward_the_batch_size_in_and_after_a_run() -> None:
    _transfer, transport, dispatch, _qs = make_transfer(batch=3)
    d4, edges = dispatch.deliver[4], dispatch.edges_for[4]
    d4(tup("a", 7, edges.next()))
    d4(tup("b", 7, 99))                 # not drawn for task 4: single, the second tuple
    assert transport.sent == []
    d4(tup("c", 7, edges.next()))       # the third: the frame leaves now
    (first,) = frames(transport)
    assert [len(r) for r in first] == [RUN_ITEMS, 7, RUN_ITEMS]
    assert first[1][2:5] == [1, 7, 99]
    d4(tup("d", 8, edges.next()))
    d4(tup("e", 8, edges.next()))
    assert len(transport.sent) == 1
    d4(tup("f", 8, 98))                 # single, and the third of the new frame
    second = frames(transport)[1]
    assert [len(r) for r in second] == [RUN_ITEMS, 7]
    assert second[0][3] == 2 and second[1][6] == ["f"]


def test_a_first_tracked_tuple_not_drawn_here_goes_single_and_the_next_opens_the_run() -> None:
    transfer, transport, dispatch, _qs = make_transfer()
    d4, edges = dispatch.deliver[4], dispatch.edges_for[4]
    d4(tup("a", 7, 12345))
    x, c = edges.x, edges.c
    d4(tup("b", 7, edges.next()))
    transfer.flush()
    (records,) = frames(transport)
    assert records == [[4, "default", 1, 7, 12345, None, ["a"]],
                       [4, "default", 1, 1, [x, c, 7, 1], [["b"]]]]


def test_a_root_back_to_back_after_another_is_counted_in_one_segment() -> None:
    transfer, transport, dispatch, _qs = make_transfer()
    d4, edges = dispatch.deliver[4], dispatch.edges_for[4]
    x, c = edges.x, edges.c
    for value, root in (("a", 5), ("b", 6), ("c", 6), ("d", 6), ("e", 5)):
        d4(tup(value, root, edges.next()))
    transfer.flush()
    (records,) = frames(transport)
    assert records == [[4, "default", 1, 5, [x, c, 5, 1, 6, 3, 5, 1], [["a", "b", "c", "d", "e"]]]]


def test_every_frame_holds_batch_size_tuples_after_the_first_one_left() -> None:
    _transfer, transport, dispatch, _qs = make_transfer(batch=3)
    for v in "abcdefg":
        dispatch.deliver[4](tup(v))
    assert [r[0][5][0] for r in frames(transport)] == [["a", "b", "c"], ["d", "e", "f"]]


def test_after_a_frame_left_the_next_tuples_wait_a_whole_interval_again() -> None:
    now = [0.0]  # binary fractions: the differences below are exact
    transport = ScriptedTransport()
    dispatch = Dispatch(6, [])
    transfer = Transfer(transport, dispatch, 100, COMPONENTS, [deque()], 10,
                        clock=lambda: now[0], flush_interval=0.25)
    transfer.route({4: "b"}, frozenset({1, 2, 3}))
    dispatch.deliver[4](tup("a"))
    transfer.flush()                   # held from 0.0
    now[0] = 0.25
    transfer.flush()                   # exactly the interval: sent, the box is empty again
    assert len(transport.sent) == 1
    now[0] = 0.5
    dispatch.deliver[4](tup("b"))
    transfer.flush()                   # held from 0.5
    now[0] = 0.625
    transfer.flush()
    assert len(transport.sent) == 1
    now[0] = 0.75
    transfer.flush()
    assert [r[0][5] for r in frames(transport)] == [[["a"]], [["b"]]]
