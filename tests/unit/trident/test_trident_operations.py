"""Every stream operation and built-in aggregator, as branches of one topology over three
batches of four numbers (1-4, 5-8, 9-12) run once in a LocalCluster (Storm's
TridentTopologyTest and the aggregator tests, in meaning).

The topology runs once, in the one test function, which checks every branch and reports every
branch that went wrong: a test that only reads what a shared fixture ran would not be the one
reaching the operations (mutation runs pick, for each function, the tests that reach it)."""


from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from trident_kit import (
    Collect,
    CountAndSum,
    Double,
    Even,
    ListOf,
    Parity,
    Square,
    forget,
    is_odd,
    seen,
    times_ten,
    twice,
)

from stormpy.testing import LocalCluster
from stormpy.trident import (
    Count,
    Debug,
    FirstN,
    FixedBatchSpout,
    Max,
    Min,
    Sum,
    TridentTopology,
)

pytestmark = pytest.mark.timeout(120)
BATCHES = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
ALL = [n for batch in BATCHES for n in batch]
P = "ops-"
ZEROS = [[5, 0, 3], [0, -3, -5], [2.5, 0.0, 1.5]]


def build() -> TridentTopology:
    t = TridentTopology()
    s = t.new_stream("ops", FixedBatchSpout(["n"], 4, [[n] for n in ALL])).parallelism_hint(2)

    def sink(stream: Any, name: str) -> None:
        stream.peek(Collect(P + name))

    sink(s.each(["n"], Double(), ["d"]), "each")
    sink(s.map(times_ten, ["m"]), "map")
    sink(s.flat_map(twice), "flat_map")
    sink(s.filter(Even()), "filter")
    sink(s.filter(["n"], is_odd), "filter_fn")
    sink(s.each(["n"], Even()), "each_filter")
    sink(s.each(["n"], Double(), ["d"]).project(["d"]), "project")
    sink(s.partition_by(["n"]).parallelism_hint(3).each(["n"], Square(), ["sq"]), "partition_by")
    sink(s.shuffle().parallelism_hint(2), "shuffle")
    sink(s.global_().parallelism_hint(3), "global")
    sink(s.batch_global().parallelism_hint(2).partition_aggregate(["n"], Count(), ["c"]),
         "batch_global")
    sink(s.broadcast().parallelism_hint(2), "broadcast")
    sink(s.filter(Debug("ops")), "debug")
    sink(s.aggregate(Count(), ["c"]), "count")
    sink(s.aggregate(["n"], Sum(), ["s"]), "sum")
    sink(s.aggregate(["n"], Min(), ["min"]), "min")
    sink(s.aggregate(["n"], Max("n"), ["max"]), "max")
    sink(s.aggregate(["n"], CountAndSum(), ["c", "s"]), "aggregator")
    sink(s.aggregate(["n"], ListOf(), ["l"]), "reducer")
    sink(s.partition_aggregate(["n"], Count(), ["c"]), "partition_aggregate")
    parity = s.each(["n"], Parity(), ["p"])
    sink(parity.group_by(["p"]).aggregate(["n"], Sum(), ["s"]), "group_sum")
    sink(parity.group_by(["p"]).aggregate(["n"], ListOf(), ["l"]), "group_reducer")
    sink(s.chained_agg().aggregate(Count(), ["c"]).aggregate(["n"], Sum(), ["s"]).chain_end(),
         "chained")
    sink(parity.group_by(["p"]).chained_agg().aggregate(["n"], Min(), ["lo"])
         .aggregate(["n"], Max(), ["hi"]).chain_end(), "group_chained")
    sink(s.apply_assembly(FirstN(2, "n", reverse=True)), "first_n")
    # values that are falsy: Min/Max must not take 0, 0.0 or '' for "no value yet"
    z = t.new_stream("zeros", FixedBatchSpout(["v"], 3, [[v] for batch in ZEROS for v in batch]))
    sink(z.aggregate(["v"], Min(), ["min"]), "z_min")
    sink(z.aggregate(["v"], Max(), ["max"]), "z_max")
    sink(z.apply_assembly(FirstN(2)), "z_first_n")
    w = t.new_stream("words", FixedBatchSpout(["w"], 3, [["b"], [""], ["a"]]))
    sink(w.aggregate(["w"], Min(), ["min"]), "w_min")
    sink(t.merge(s.filter(Even()), s.filter(["n"], is_odd).name("odd")), "merge")
    sink(t.join(s.each(["n"], Double(), ["d"]), ["n"], s.each(["n"], Square(), ["sq"]), ["n"],
                ["n", "d", "sq"]), "join")
    # a join whose inputs the user repartitioned (shuffled; by another field), at parallelism 3:
    # both sides still meet on the join key
    sink(t.join(s.shuffle().parallelism_hint(3).each(["n"], Double(), ["d"]), ["n"],
                parity.partition_by(["p"]).parallelism_hint(3), ["n"], ["n", "d", "p"]),
         "join_repartitioned")
    return t


def run_operations() -> None:
    forget(P)
    with LocalCluster() as cluster:
        cluster.submit_topology("ops", {"topology.max.spout.pending": 1}, build().build())
        cluster.wait_for(lambda: len(seen(P + "chained")) == 3 and len(seen(P + "join")) == 12
                         and len(seen(P + "join_repartitioned")) == 12
                         and len(seen(P + "first_n")) == 6 and len(seen(P + "z_first_n")) == 6
                         and len(seen(P + "z_max")) == 3 and len(seen(P + "w_min")) == 1,
                         60, "every batch")
        cluster.wait_until_quiet("ops")


def rows(name: str) -> list[list[Any]]:
    return sorted(seen(P + name))


def each_map_flat_map_filter_project() -> None:
    assert rows("each") == [[n, 2 * n] for n in ALL]
    assert rows("map") == [[10 * n] for n in ALL]
    assert rows("flat_map") == sorted([[n] for n in ALL] * 2)
    assert rows("filter") == rows("each_filter") == [[n] for n in ALL if n % 2 == 0]
    assert rows("filter_fn") == [[n] for n in ALL if n % 2]
    assert rows("project") == [[2 * n] for n in ALL]
    assert rows("debug") == [[n] for n in ALL]


def repartitioning_keeps_every_tuple() -> None:
    assert rows("partition_by") == [[n, n * n] for n in ALL]
    assert rows("shuffle") == rows("global") == [[n] for n in ALL]
    assert rows("broadcast") == sorted([[n] for n in ALL] * 2)
    assert sorted(c for (c,) in rows("batch_global") if c) == [4, 4, 4]


def whole_batch_aggregates() -> None:
    assert rows("count") == [[4]] * 3
    assert rows("sum") == sorted([[sum(b)] for b in BATCHES])
    assert rows("min") == [[1], [5], [9]]
    assert rows("max") == [[4], [8], [12]]
    assert rows("aggregator") == sorted([[4, sum(b)] for b in BATCHES])
    assert rows("reducer") == [[b] for b in BATCHES]
    assert rows("chained") == sorted([[4, sum(b)] for b in BATCHES])
    assert sum(c for (c,) in rows("partition_aggregate")) == 12  # each partition's part


def grouped_aggregates() -> None:
    expected_sum = sorted([[p, sum(n for n in b if n % 2 == p)] for b in BATCHES for p in (0, 1)])
    assert rows("group_sum") == expected_sum
    assert rows("group_reducer") == sorted([[p, [n for n in b if n % 2 == p]]
                                            for b in BATCHES for p in (0, 1)])
    odd_even = [[p, min(n for n in b if n % 2 == p), max(n for n in b if n % 2 == p)]
                for b in BATCHES for p in (0, 1)]
    assert rows("group_chained") == sorted(odd_even)


def first_n_merge_and_join() -> None:
    assert rows("first_n") == sorted([[n] for b in BATCHES for n in sorted(b)[-2:]])
    assert rows("merge") == [[n] for n in ALL]
    assert rows("join") == [[n, 2 * n, n * n] for n in ALL]
    assert rows("join_repartitioned") == [[n, 2 * n, n % 2] for n in ALL]


def min_and_max_count_zero_and_empty_values() -> None:
    assert seen(P + "z_min") == [[0], [-5], [0.0]]
    assert seen(P + "z_max") == [[5], [0], [2.5]]
    assert seen(P + "w_min") == [[""]]


def first_n_without_a_sort_field_keeps_the_first_tuples_of_each_batch() -> None:
    assert seen(P + "z_first_n") == [[v] for batch in ZEROS for v in batch[:2]]


CHECKS: list[Callable[[], None]] = [
    each_map_flat_map_filter_project, repartitioning_keeps_every_tuple, whole_batch_aggregates,
    grouped_aggregates, first_n_merge_and_join, min_and_max_count_zero_and_empty_values,
    first_n_without_a_sort_field_keeps_the_first_tuples_of_each_batch]


def test_every_operation_and_aggregator_of_one_topology() -> None:
    run_operations()
    failed = []
    for check in CHECKS:
        try:
            check()
        except AssertionError as error:
            failed.append(f"{check.__name__}: {error}")
    assert not failed, "\n\n".join(failed)
