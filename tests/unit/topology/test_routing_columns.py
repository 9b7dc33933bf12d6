"""Routers splitting tuples given as columns (``Router.partition_columns``, behind
``emit_columns``): every tuple goes where ``choose`` would send its row, in order within a task;
one pass over the key column for fields grouping; contiguous even slices for shuffle; the columns
whole for one task and for ``all``; the row-by-row fallback for the other groupings."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy.topology import CustomStreamGrouping, Fields
from stormpy.topology import _grouping as g
from stormpy.worker.routing import (
    KEY_CACHE_SIZE,
    CustomRouter,
    FieldsRouter,
    FixedRouter,
    NoneRouter,
    PartialKeyRouter,
    Router,
    ShuffleRouter,
)


def rows_by_task(router: Router, cols: list[list[Any]], n: int) -> dict[int, list[list[Any]]]:
    """partition_columns' result as rows per task (checking each part's count and widths)."""
    out: dict[int, list[list[Any]]] = {}
    for task, part, k in router.partition_columns(cols, n):
        assert task not in out  # one part per task
        assert len(part) == len(cols) and all(len(c) == k for c in part) and k > 0
        out[task] = [[c[i] for c in part] for i in range(k)]
    return out


def expected_by_choose(router: Router, cols: list[list[Any]], n: int) -> dict[int, list[list[Any]]]:
    out: dict[int, list[list[Any]]] = {}
    for i in range(n):
        row = [c[i] for c in cols]
        for t in router.choose(row):
            out.setdefault(t, []).append(row)
    return out


WORDS = [f"w{i % 17}" for i in range(100)] + [7, 3.5, None, b"raw", "w1"]


@pytest.mark.parametrize("key", [["word"], ["word", "n"]], ids=["one key", "two keys"])
def test_fields_grouping_sends_each_tuple_where_choose_sends_its_row(key: list[str]) -> None:
    cols = [list(WORDS), list(range(len(WORDS)))]
    router = FieldsRouter([5, 3, 9], Fields(["word", "n"]), key)
    twin = FieldsRouter([5, 3, 9], Fields(["word", "n"]), key)  # a fresh cache: same choices
    got = rows_by_task(router, cols, len(WORDS))
    assert got == expected_by_choose(twin, cols, len(WORDS))
    assert sorted(got) == [3, 5, 9]


def test_fields_grouping_on_the_second_field_and_a_one_column_stream() -> None:
    cols = [list(range(40)), [f"k{i % 6}" for i in range(40)]]
    router = FieldsRouter([1, 2], Fields(["n", "key"]), ["key"])
    twin = FieldsRouter([1, 2], Fields(["n", "key"]), ["key"])
    assert rows_by_task(router, cols, 40) == expected_by_choose(twin, cols, 40)
    one = FieldsRouter([1, 2, 4], Fields(["word"]), ["word"])
    words = [[f"x{i % 9}" for i in range(50)]]
    twin = FieldsRouter([1, 2, 4], Fields(["word"]), ["word"])
    assert rows_by_task(one, words, 50) == expected_by_choose(twin, words, 50)


def test_fields_grouping_fills_the_same_key_cache_as_choose() -> None:
    router = FieldsRouter([1, 2], Fields(["word"]), ["word"])
    router.partition_columns([["a", "b", "a", 5]], 4)
    assert set(router.cache) == {"a", "b"}  # str keys only
    assert router.cache["a"] == router.choose(["a"])
    router.cache.clear()
    cols = [[f"k{i}" for i in range(KEY_CACHE_SIZE + 10)]]
    router.partition_columns(cols, len(cols[0]))
    assert len(router.cache) <= KEY_CACHE_SIZE  # bounded as choose's


def test_one_target_task_gets_the_columns_whole() -> None:
    cols = [["a", "b", "c"]]
    for router in (FieldsRouter([4], Fields(["word"]), ["word"]), ShuffleRouter([4])):
        parts = router.partition_columns(cols, 3)
        assert len(parts) == 1 and parts[0][0] == 4 and parts[0][1] is cols and parts[0][2] == 3
        assert router.partition_columns([[]], 0) == []


def test_all_grouping_gives_every_task_the_whole_columns() -> None:
    cols = [["a", "b"], [1, 2]]
    parts = FixedRouter([2, 7]).partition_columns(cols, 2)
    assert [(t, k) for t, _, k in parts] == [(2, 2), (7, 2)] and all(p is cols for _, p, _ in parts)
    assert FixedRouter([2, 7]).partition_columns([[], []], 0) == []


def test_shuffle_deals_contiguous_even_slices_round_robin() -> None:
    router = ShuffleRouter([1, 2, 3])
    order = [s[0] for s in router.singles]
    cols = [list(range(10)), [f"v{i}" for i in range(10)]]
    parts = router.partition_columns(cols, 10)
    assert [t for t, _, _ in parts] == order  # one slice per task, from the rotation's start
    assert [k for _, _, k in parts] == [4, 4, 2]
    assert [v for _, p, _ in parts for v in p[0]] == list(range(10))  # in order, nothing lost
    assert [v for _, p, _ in parts for v in p[1]] == [f"v{i}" for i in range(10)]
    assert router.next == 0  # all three used: back where it started
    few = router.partition_columns([["a", "b"]], 2)  # fewer tuples than tasks
    assert [(t, p[0], k) for t, p, k in few] == [(order[0], ["a"], 1), (order[1], ["b"], 1)]
    assert router.next == 2 and router.choose(["x"]) == [order[2]]  # the rotation goes on
    assert router.partition_columns([[]], 0) == [] and router.next == 0


def test_shuffle_slices_stay_even_over_many_batches() -> None:
    router = ShuffleRouter([1, 2, 3, 4])
    load = dict.fromkeys([1, 2, 3, 4], 0)
    for size in (1, 3, 5, 7, 2, 9, 1, 1, 6):
        for t, _, k in router.partition_columns([list(range(size))], size):
            load[t] += k
    assert sum(load.values()) == 35 and max(load.values()) - min(load.values()) <= 4


@pytest.mark.parametrize("make", [
    lambda: PartialKeyRouter([1, 2, 3], Fields(["word", "n"]), ["word"]),
    lambda: NoneRouter([1, 2]),
], ids=["partial key", "none"])
def test_other_groupings_go_row_by_row(make: Any) -> None:
    cols = [[f"k{i % 4}" for i in range(30)], list(range(30))]
    got = rows_by_task(make(), cols, 30)
    rows = sorted(r for part in got.values() for r in part)
    assert rows == sorted([[f"k{i % 4}", i] for i in range(30)])
    if isinstance(make(), PartialKeyRouter):  # deterministic: the same as choose row by row
        assert got == expected_by_choose(make(), cols, 30)


class OddToBoth(CustomStreamGrouping):
    """Odd numbers to tasks 1 and 2, even ones to task 2."""

    def choose_tasks(self, task_id: int, values: Any) -> list[int]:
        return [1, 2] if values[0] % 2 else [2]


def test_the_row_fallback_keeps_order_and_several_targets() -> None:
    router = CustomRouter(g.Grouping(g.CUSTOM, custom_class=f"{__name__}:OddToBoth"), None,
                          "default", [1, 2], 9, "count")
    got = rows_by_task(router, [[1, 2, 3, 4], ["a", "b", "c", "d"]], 4)
    assert got == {1: [[1, "a"], [3, "c"]], 2: [[1, "a"], [2, "b"], [3, "c"], [4, "d"]]}



def test_a_single_tuple_reaches_its_task_on_every_whole_columns_path() -> None:
    one = [["w"], [1]]
    for router in (FieldsRouter([6], Fields(["word", "n"]), ["word"]), ShuffleRouter([6]),
                   FixedRouter([6])):
        assert router.partition_columns(one, 1) == [(6, one, 1)]


def test_fields_grouping_on_unhashable_keys_takes_the_stable_hash() -> None:
    """A key of lists (msgpack arrays) is never looked up in the str-keyed cache."""
    cols = [[[1, 2], [3], [1, 2], [4, 5, 6]], ["a", "b", "c", "d"]]
    router = FieldsRouter([1, 2, 3], Fields(["key", "v"]), ["key"])
    twin = FieldsRouter([1, 2, 3], Fields(["key", "v"]), ["key"])
    assert rows_by_task(router, cols, 4) == expected_by_choose(twin, cols, 4)
    assert router.cache == {}
