"""``choose_many`` of the routers gives, for each values of a list, what ``choose`` would have:
fields keys of every kind (strings through the key cache, ints, lists and None around it), the
two-choice grouping (whose choice depends on the load so far), several subscribers."""

from __future__ import annotations

from typing import Any

from stormpy.topology._fields import Fields
from stormpy.worker.routing import FieldsRouter, FixedRouter, PartialKeyRouter, StreamRouter

TASKS = [7, 3, 11, 5]
FIELDS = Fields(["word", "n"])
VALUES: list[Any] = [["a", 1], [[1, 2], 2], ["b", 3], [None, 4], [7, 5], ["a", 6],
                     [{"k": 1}, 7], [[1, 2], 8], [2.5, 9], [b"x", 10]]


def test_fields_choose_many_routes_every_key_kind_as_choose() -> None:
    for key in (["word"], ["n"], ["word", "n"]):
        expected = [FieldsRouter(TASKS, FIELDS, key).choose(v) for v in VALUES]
        router = FieldsRouter(TASKS, FIELDS, key)
        assert router.choose_many(VALUES) == expected
        assert router.choose_many(VALUES) == expected  # with a warm key cache
        assert router.choose_many([tuple(v) for v in VALUES]) == expected  # any sequence


def test_partial_key_choose_many_follows_the_load_as_choose() -> None:
    one = PartialKeyRouter(TASKS, FIELDS, ["word"])
    expected = [one.choose(v) for v in VALUES * 3]
    assert PartialKeyRouter(TASKS, FIELDS, ["word"]).choose_many(VALUES * 3) == expected


def test_a_stream_with_several_subscribers_chooses_many_as_one_by_one() -> None:
    def stream() -> StreamRouter:
        return StreamRouter("s", FIELDS, False,
                            [FieldsRouter(TASKS, FIELDS, ["word"]), FixedRouter([20, 21])],
                            frozenset())
    expected = [list(stream().choose(v)) for v in VALUES]
    assert [list(t) for t in stream().choose_many(VALUES)] == expected
    assert all(t[-2:] == [20, 21] and t[0] in TASKS for t in expected)
