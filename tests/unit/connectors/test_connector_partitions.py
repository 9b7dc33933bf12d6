"""The round-robin share of a log's partitions that both log spouts use (connectors/partitions)."""

from __future__ import annotations

import pytest

from stormpy.connectors._partitions import round_robin_share


def test_every_item_goes_to_exactly_one_task_in_sorted_order() -> None:
    items = [5, 1, 4, 2, 3, 0, 6]
    shares = [round_robin_share(items, i, 3) for i in range(3)]
    assert shares == [[0, 3, 6], [1, 4], [2, 5]]
    assert round_robin_share(["b", "a"], 0, 5) == ["a"] and round_robin_share(["b", "a"], 4, 5) == []


def test_a_key_orders_items_that_do_not_sort_themselves() -> None:
    items = [{"id": "s2"}, {"id": "s0"}, {"id": "s1"}]
    assert round_robin_share(items, 1, 2, key=lambda d: d["id"]) == [{"id": "s1"}]


@pytest.mark.parametrize(("task_index", "num_tasks"), [(3, 3), (-1, 3), (0, 0)])
def test_a_task_index_out_of_range_is_an_error(task_index: int, num_tasks: int) -> None:
    with pytest.raises(ValueError, match=f"task index {task_index} out of range"):
        round_robin_share([1, 2], task_index, num_tasks)
