"""Runs on the receiving side (``worker/inbound.py``), path by path: an untracked run of one
field and of several, a tracked run of one field, every Tuple field of each; a run naming an id
state at the edges of ``STATE_LIMITS`` is read, one beyond them or with ids of the wrong shape is
one "malformed run" (never an error out of ``take``, the rest of the frame delivered); and a
dropped run's log line says what was wrong, who sent it and which source task it claimed."""

from __future__ import annotations

import logging
from typing import Any

import msgpack
import pytest

from stormpy.topology._fields import Fields
from stormpy.worker.edges import STATE_LIMITS, EdgeIds
from stormpy.worker.inbound import Inbound

ONE, TWO = Fields(["w"]), Fields(["w", "n"])
#: dest 10 takes "one" (one field) and "two" (two fields) from task 1 of "src"
TABLE: dict[int, dict[int, Any]] = {10: {1: {"one": (1, "src", ONE), "two": (2, "src", TWO)}}}


class Harness:
    def __init__(self) -> None:
        self.queued: list[Any] = []
        self.inbound = Inbound(TABLE, {10: self.queued.append},
                               lambda frame: f"tcp://peer:{len(frame)}", "w-1")
        self.frame = b""

    def take(self, *records: Any) -> int:
        self.frame = msgpack.packb(list(records), use_bin_type=True)
        return self.inbound.take([self.frame])


def fields_of(t: Any) -> tuple[Any, ...]:
    return (t.values, t.stream, t.task, t.component, t.fields, t.root, t.edge, t.anchors)


def draws(x: int, c: int, n: int) -> list[int]:
    ids = EdgeIds(0)
    ids.restart(x, c)
    return [ids.next() for _ in range(n)]


def test_an_untracked_run_of_one_field_queues_every_tuple_whole() -> None:
    h = Harness()
    assert h.take([10, "one", 1, 3, None, [["a", "b", "c"]]]) == 3
    assert [fields_of(t) for t in h.queued] == [
        ([v], "one", 1, "src", ONE, 0, 0, None) for v in "abc"]
    assert h.inbound.rejected == {}


def test_an_untracked_run_of_several_fields_queues_every_tuple_whole() -> None:
    h = Harness()
    assert h.take([10, "two", 1, 2, None, [["a", "b"], [1, 2]]]) == 2
    assert [fields_of(t) for t in h.queued] == [
        (["a", 1], "two", 1, "src", TWO, 0, 0, None), (["b", 2], "two", 1, "src", TWO, 0, 0, None)]


def test_a_tracked_run_of_one_field_queues_every_tuple_with_its_root_and_edge() -> None:
    h = Harness()
    assert h.take([10, "one", 1, 3, [5, 6, 71, 2, 72, 1], [["a", "b", "c"]]]) == 3
    ea, eb, ec = draws(5, 6, 3)
    assert [fields_of(t) for t in h.queued] == [
        (["a"], "one", 1, "src", ONE, 71, ea, None), (["b"], "one", 1, "src", ONE, 71, eb, None),
        (["c"], "one", 1, "src", ONE, 72, ec, None)]


@pytest.mark.parametrize("x, c", [(0, 9), (9, 0), (STATE_LIMITS[0], STATE_LIMITS[1])])
def test_a_run_naming_a_state_at_the_limits_is_read(x: int, c: int) -> None:
    h = Harness()
    assert h.take([10, "one", 1, 2, [x, c, 40, 2], [["a", "b"]]]) == 2
    assert [(t.root, t.edge) for t in h.queued] == [(40, e) for e in draws(x, c, 2)]
    assert h.inbound.rejected == {}


GOOD = [10, "one", 1, 1, None, [["ok"]]]


@pytest.mark.parametrize("ids", [
    [STATE_LIMITS[0] + 1, 9, 40, 2],     # the digit beyond its limit
    [9, STATE_LIMITS[1] + 1, 40, 2],     # the carry beyond its limit
    [1, 2, 40, 1, 41],                   # an odd length, four or more
    [1, 2, 40],                          # an odd length under four
    7,                                   # not a list at all
    {"x": 1, "c": 2, "r": 3, "k": 2},    # a map of four
])
def test_a_run_with_ids_of_the_wrong_shape_or_range_is_one_malformed_run(ids: Any) -> None:
    h = Harness()
    assert h.take(GOOD, [10, "one", 1, 2, ids, [["a", "b"]]], GOOD) == 2
    assert h.inbound.rejected == {"malformed run": 1}
    assert [t.values for t in h.queued] == [["ok"], ["ok"]]


@pytest.mark.parametrize("run, reason, detail", [
    ([99, "one", 1, 1, None, [["a"]]], "unknown destination task", "task 99"),
    ([10, "three", 1, 1, None, [["a"]]], "unexpected stream", "stream 'three' from task 1 to task 10"),
    ([10, "two", 1, 2, [1, 2, 3], [["a", "b"], [1]]], "malformed run",
     "stream 'two' to task 10 expects n > 0, 2 value(s) as columns of n values and nil or "
     "[x, c, root, count, ...] ids (an id state, roots with counts adding up to n), got n 2, "
     "columns [['a', 'b'], [1]], ids [1, 2, 3]"),
])
def test_a_dropped_run_is_logged_with_what_was_wrong_the_sender_and_the_claimed_source(
        run: list[Any], reason: str, detail: str, caplog: pytest.LogCaptureFixture) -> None:
    h = Harness()
    with caplog.at_level(logging.WARNING, logger="stormpy.worker"):
        assert h.take(run) == 0
    assert h.inbound.rejected == {reason: 1}
    (line,) = [r.getMessage() for r in caplog.records]
    assert line == ("worker w-1: dropped 1 invalid inbound tuple(s)/frame(s) since the last report "
                    f"(1 in all); latest from tcp://peer:{len(h.frame)}, claiming source task 1: "
                    f"{reason}: {detail}")
