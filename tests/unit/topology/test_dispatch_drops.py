"""Dispatch: whatever is delivered to a task with no known place is dropped and counted in
tuples, and the count adds up across single tuples, lists and columnar batches."""

from __future__ import annotations

from stormpy.topology._columns import ColumnBatch
from stormpy.topology._tuple import Tuple
from stormpy.worker.dispatch import Dispatch


def test_drops_add_up_over_tuples_lists_and_batches() -> None:
    dispatch = Dispatch(3, [])
    one = Tuple(["x"], "default", 1, "spout", None)
    dispatch.deliver[2](one)
    dispatch.deliver_many[3]([one, one])
    dispatch.deliver_many[2]([one, one, one])
    assert dispatch.dropped == 6
    dispatch.deliver_batch[3](ColumnBatch([["a"], ["b"]], "default", 1, "bolt", None))
    dispatch.deliver_batch[2](ColumnBatch([["c"]], "default", 1, "bolt", None))
    assert dispatch.dropped == 9
