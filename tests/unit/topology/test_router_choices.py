"""The routers of worker/routing.py: which tasks each grouping picks for an emitted tuple.

These pin the choices themselves (round robin, the stable key hash and its two-choice variant,
fixed targets, several subscribers), which the topology-level grouping tests only see as
distributions.
"""

from __future__ import annotations

import random
import zlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

import msgpack
import pytest

from stormpy import CustomStreamGrouping
from stormpy.topology import _grouping as g
from stormpy.topology._fields import Fields
from stormpy.topology._imports import class_path
from stormpy.worker import routing
from stormpy.worker.routing import (
    FieldsRouter,
    FixedRouter,
    PartialKeyRouter,
    ShuffleRouter,
    StreamRouter,
    make_router,
    stable_hash,
)

TASKS = [7, 3, 11, 5]  # deliberately unsorted
SORTED = sorted(TASKS)
FIELDS = Fields(["word", "n", "tag"])


def router_for(grouping: g.Grouping, tasks: list[int] = TASKS,
               local: frozenset[int] = frozenset()) -> routing.Router:
    return make_router(grouping, tasks, FIELDS, local_tasks=local, context=None, stream="default",
                       emitter_task=1, target_component="sink")


def test_stable_hash_is_crc32_of_the_key_bytes_and_masks_ints_to_63_bits() -> None:
    assert stable_hash("apple") == zlib.crc32(b"apple")
    assert stable_hash("ü") == zlib.crc32("ü".encode())
    assert stable_hash(b"\x00\x01") == zlib.crc32(b"\x00\x01")
    assert stable_hash(42) == 42
    assert stable_hash(2 ** 63 + 5) == 5
    assert stable_hash(-1) == 2 ** 63 - 1
    assert stable_hash(2 ** 64 - 1) == 2 ** 63 - 1
    # anything else: the crc32 of its msgpack form (True is not the int 1 here)
    assert stable_hash(True) == zlib.crc32(msgpack.packb(True))
    assert stable_hash(["a", 1]) == zlib.crc32(msgpack.packb(["a", 1]))
    assert stable_hash(1.5) == zlib.crc32(msgpack.packb(1.5))


def test_shuffle_is_a_round_robin_over_every_task() -> None:
    router = router_for(g.Grouping(g.SHUFFLE))
    picks = [router.choose(["w", 1, None]) for _ in range(3 * len(TASKS))]
    assert all(len(p) == 1 for p in picks)
    flat = [p[0] for p in picks]
    for start in range(0, len(flat), len(TASKS)):  # every window of n picks is each task once
        assert sorted(flat[start:start + len(TASKS)]) == SORTED
    assert flat[:len(TASKS)] == flat[len(TASKS):2 * len(TASKS)]  # the same order each lap


def test_a_single_task_shuffle_always_picks_it() -> None:
    router = ShuffleRouter([9])
    assert [router.choose([])[0] for _ in range(3)] == [9, 9, 9]


def test_local_or_shuffle_keeps_to_local_tasks_and_falls_back_to_all() -> None:
    local = router_for(g.Grouping(g.LOCAL_OR_SHUFFLE), local=frozenset({5, 11, 99}))
    assert Counter(local.choose([])[0] for _ in range(6)) == {5: 3, 11: 3}
    none_local = router_for(g.Grouping(g.LOCAL_OR_SHUFFLE), local=frozenset({99}))
    assert sorted(none_local.choose([])[0] for _ in range(4)) == SORTED


@pytest.mark.parametrize("key", ["apple", "", "ü-key", 12345, -3, True, 2.5, b"raw", None])
def test_fields_routes_one_key_by_its_stable_hash_over_the_sorted_tasks(key: Any) -> None:
    for position, name in enumerate(FIELDS):  # the key first, in the middle, last
        router = router_for(g.Grouping(g.FIELDS, fields=(name,)))
        values: list[Any] = ["x", 0, "y"]
        values[position] = key
        expected = [SORTED[stable_hash(key) % len(SORTED)]]
        assert router.choose(values) == expected
        assert router.choose(list(values)) == expected  # again (cached for str keys)


def test_fields_routes_a_key_of_several_fields_by_the_hash_of_the_list() -> None:
    router = router_for(g.Grouping(g.FIELDS, fields=("tag", "word")))
    for word, tag in [("a", "b"), ("b", "a"), ("apple", 1), ("x", None)]:
        expected = SORTED[stable_hash([tag, word]) % len(SORTED)]
        assert router.choose([word, 0, tag]) == [expected]


def test_int_and_bool_keys_that_compare_equal_still_route_by_their_own_hash() -> None:
    router = FieldsRouter(list(range(1000)), FIELDS, ["word"])
    assert router.choose([1, 0, 0]) == [1]
    assert router.choose([True, 0, 0]) == [stable_hash(True) % 1000]
    assert router.choose([1.0, 0, 0]) == [stable_hash(1.0) % 1000]
    assert router.choose([1, 0, 0]) == [1]


def test_fields_key_cache_is_bounded_and_routing_survives_clearing_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(routing, "KEY_CACHE_SIZE", 3)
    router = router_for(g.Grouping(g.FIELDS, fields=("word",)))
    assert isinstance(router, FieldsRouter)
    keys = [f"k{i}" for i in range(10)]
    for _ in range(2):
        for k in keys:
            assert router.choose([k, 0, 0]) == [SORTED[zlib.crc32(k.encode()) % len(SORTED)]]
            assert len(router.cache) <= 3
    assert len(router.cache) >= 1
    # filled to exactly the bound, the next new key starts the cache over
    router.cache.clear()
    for k in keys[:3]:
        router.choose([k, 0, 0])
    assert len(router.cache) == 3
    router.choose(["new", 0, 0])
    assert list(router.cache) == ["new"]


def test_partial_key_sends_a_key_to_its_two_candidates_alternately_first_choice_first() -> None:
    tasks = list(range(20, 36))
    for key in ["hot", "other", "k3", "k4"]:
        router = PartialKeyRouter(tasks, FIELDS, ["word"])
        first = tasks[stable_hash([key]) % len(tasks)]
        second = tasks[zlib.crc32(msgpack.packb([key]), 0x9E3779B9) % len(tasks)]
        picks = [router.choose([key, 0, 0])[0] for _ in range(6)]
        if first == second:
            assert picks == [first] * 6
        else:
            assert picks == [first, second] * 3, (key, first, second, picks)


def test_partial_key_prefers_the_less_loaded_candidate_across_keys() -> None:
    tasks = list(range(20, 36))
    router = PartialKeyRouter(tasks, FIELDS, ["word", "tag"])

    def candidates(key: list[Any]) -> tuple[int, int]:
        return (tasks[stable_hash(key) % len(tasks)],
                tasks[zlib.crc32(msgpack.packb(key), 0x9E3779B9) % len(tasks)])

    # a key whose candidates differ; load its first candidate through other keys first
    key = next([f"k{i}", i] for i in range(100) if len(set(candidates([f"k{i}", i]))) == 2)
    first, second = candidates(key)
    loader = next([f"l{i}", i] for i in range(1000) if candidates([f"l{i}", i])[0] == first
                  and second not in candidates([f"l{i}", i]))
    router.choose([loader[0], 0, loader[1]])
    assert router.choose([key[0], 0, key[1]]) == [second]


def test_all_targets_every_task_in_id_order_and_global_the_lowest() -> None:
    assert router_for(g.Grouping(g.ALL)).choose([]) == SORTED
    assert router_for(g.Grouping(g.GLOBAL)).choose([]) == [3]
    assert FixedRouter([4, 2]).choose(["anything"]) == [4, 2]


def test_none_grouping_picks_one_task_at_random() -> None:
    router = router_for(g.Grouping(g.NONE))
    random.seed(11)
    picks = [router.choose([]) for _ in range(200)]
    assert all(len(p) == 1 for p in picks)
    assert set(p[0] for p in picks) == set(TASKS)


ONE_TASK_GROUPINGS = [g.Grouping(g.SHUFFLE), g.Grouping(g.LOCAL_OR_SHUFFLE),
                      g.Grouping(g.FIELDS, fields=("word",)),
                      g.Grouping(g.FIELDS, fields=("tag", "n")),
                      g.Grouping(g.PARTIAL_KEY, fields=("word",)), g.Grouping(g.ALL),
                      g.Grouping(g.GLOBAL), g.Grouping(g.NONE)]


@pytest.mark.parametrize("grouping", ONE_TASK_GROUPINGS, ids=lambda gr: str(gr.type))
def test_every_built_in_grouping_to_one_task_is_that_task_with_no_work_per_tuple(
        grouping: g.Grouping) -> None:
    """A target with one task: every tuple goes to it, whatever its key, through a fixed
    router (no hash, rotation or load count per tuple), on the local and the remote path."""
    for local in (frozenset(), frozenset([6])):
        router = router_for(grouping, [6], local)
        assert type(router) is FixedRouter
        assert [router.choose([w, n, None]) for w, n in (("a", 1), ("b", 2), ("a", 3))] == \
            [[6], [6], [6]]


@pytest.mark.parametrize("grouping", [g.Grouping(g.FIELDS, fields=("nope",)),
                                      g.Grouping(g.PARTIAL_KEY, fields=("word", "nope"))],
                         ids=["fields", "partial_key"])
def test_a_one_task_target_still_has_its_key_fields_checked(grouping: g.Grouping) -> None:
    with pytest.raises(KeyError, match="nope"):
        router_for(grouping, [6])


def test_a_custom_grouping_to_one_task_is_still_asked_and_checked() -> None:
    Recorder.prepared.clear()
    grouping = g.Grouping(g.CUSTOM, custom_class=class_path(Recorder))
    router = router_for(grouping, [6])
    assert Recorder.prepared == [(None, "default", [6], {})]
    assert router.choose(["w", 6, None]) == [6]
    with pytest.raises(ValueError, match=r"chose task 4, not a task of 'sink' \[6\]"):
        router.choose(["w", 4, None])


def test_make_router_refuses_a_grouping_it_has_no_router_for() -> None:
    with pytest.raises(ValueError, match="no router for grouping 'direct'"):
        router_for(g.Grouping(g.DIRECT))


class Recorder(CustomStreamGrouping):
    """Records how it was prepared; sends each tuple to the task named by its "n" value."""

    prepared: list[tuple[Any, str, list[int], dict[str, Any]]] = []

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs

    def prepare(self, context: Any, stream: str, target_tasks: Sequence[int]) -> None:
        Recorder.prepared.append((context, stream, list(target_tasks), self.kwargs))

    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> list[int]:
        return [values[1]]


def test_a_custom_grouping_is_prepared_with_the_emitters_context_stream_and_targets() -> None:
    Recorder.prepared.clear()
    context = object()
    grouping = g.Grouping(g.CUSTOM, custom_class=class_path(Recorder), custom_kwargs={"k": 1})
    router = make_router(grouping, TASKS, FIELDS, local_tasks=frozenset(), context=context,
                         stream="events", emitter_task=1, target_component="sink")
    assert Recorder.prepared == [(context, "events", TASKS, {"k": 1})]
    assert router.choose(["w", 11, None]) == [11]
    with pytest.raises(ValueError, match=r"chose task 4, not a task of 'sink' \[3, 5, 7, 11\]"):
        router.choose(["w", 4, None])


def test_stream_router_concatenates_its_subscribers_choices_in_order() -> None:
    fields = Fields(["a", "b"])
    by_key = FieldsRouter(TASKS, fields, ["b"])
    one = StreamRouter("s", fields, False, [by_key], frozenset())
    assert one.choose(["x", "key"]) == [SORTED[stable_hash("key") % 4]]
    assert one.n_fields == 2 and one.fields == fields
    many = StreamRouter("s", fields, False, [FixedRouter([4, 5]), by_key], frozenset())
    assert many.choose([1, "key"]) == [4, 5, SORTED[stable_hash("key") % 4]]
    assert many.choose([1, 2]) == [4, 5, SORTED[2 % 4]]  # a fresh list each time, not grown
    nobody = StreamRouter("s", fields, False, [], frozenset({2}))
    assert nobody.choose([1, 2]) == []
    assert nobody.direct is False and nobody.direct_tasks == frozenset({2})
    assert nobody.stream == "s" and nobody.emitted == 0
