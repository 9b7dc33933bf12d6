"""Trident state of the three kinds: the map state's rules (Storm's TransactionalMap, OpaqueMap,
NonTransactionalMap), and whole topologies whose batch fails after its state update and is
replayed: applied once for transactional and opaque state (opaque also when the replay differs),
twice for non-transactional state."""

from __future__ import annotations

import os
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from trident_kit import FAILS, Collect, FailOnWord, ListOf, ShortFirstAttemptSpout, forget, seen

from stormpy.state import MemoryBackend, SqliteStore
from stormpy.testing import LocalCluster
from stormpy.topology._errors import InvalidTopologyError
from stormpy.transactional import TransactionalState
from stormpy.trident import (
    NON_TRANSACTIONAL,
    OPAQUE,
    TRANSACTIONAL,
    Count,
    FeederBatchSpout,
    FixedBatchSpout,
    MapPutUpdater,
    MapState,
    ParquetWrite,
    StateFactory,
    Sum,
    TridentTopology,
    TupleCollectionGet,
)
from stormpy.trident._state import encode_key

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def _fresh_records() -> None:
    forget()  # what an earlier session in this process recorded under the same names


def memory_state(kind: str) -> MapState:
    return MapState(MemoryBackend().at("t"), kind)


def adder(n: int) -> Callable[[Any], Any]:
    return lambda old: (old or 0) + n


def apply(state: MapState, txid: int, adds: dict[str, int]) -> list[Any]:
    state.begin_commit(txid)
    keys = [[k] for k in adds]
    out = state.multi_update(keys, [adder(n) for n in adds.values()])
    state.commit(txid)
    return out


@pytest.mark.parametrize("kind, after_replay", [
    (TRANSACTIONAL, 3), (OPAQUE, 3), (NON_TRANSACTIONAL, 5)])
def test_a_replayed_batch_applies_once_unless_non_transactional(kind: str,
                                                                after_replay: int) -> None:
    state = memory_state(kind)
    apply(state, 1, {"a": 1})
    apply(state, 2, {"a": 2})
    assert apply(state, 2, {"a": 2}) == [after_replay]  # the same batch again
    assert state.multi_get([["a"], ["b"]]) == [after_replay, None]


def test_opaque_state_recomputes_a_replay_that_differs_from_the_previous_value() -> None:
    state = memory_state(OPAQUE)
    apply(state, 1, {"a": 10})
    apply(state, 2, {"a": 1})           # first attempt of batch 2
    apply(state, 2, {"a": 5})           # its replay had other tuples
    assert state.multi_get([["a"]]) == [15]
    opaque = state.get_opaque(["a"])
    assert opaque is not None and (opaque.txid, opaque.previous, opaque.current) == (2, 10, 15)
    transactional = memory_state(TRANSACTIONAL)
    apply(transactional, 1, {"a": 10})
    apply(transactional, 2, {"a": 1})
    apply(transactional, 2, {"a": 5})   # a transactional map cannot take a different replay
    assert transactional.multi_get([["a"]]) == [11]


def test_documents_share_the_transactional_layer_layout(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite", "t")
    state = MapState(store, TRANSACTIONAL)
    apply(state, 7, {"w": 3})
    value = TransactionalState(store).get(encode_key(["w"]))
    assert value is not None and (value.txid, value.value) == (7, 3)
    with pytest.raises(RuntimeError, match="outside a commit"):
        state.multi_put([["w"]], [1])
    state.close()


def sqlite_counts(path: Path, name: str, kind: str) -> dict[str, int]:
    if not path.exists():
        return {}
    state = MapState(SqliteStore(path, "trident_state", segments=(name,)), kind)
    try:
        return {key[0]: value for key, value in state.items()}
    finally:
        state.close()


WORDS = [["apple"], ["pear"], ["apple"], ["fig"], ["boom"], ["pear"], ["apple"], ["fig"],
         ["kiwi"], ["apple"], ["pear"], ["fig"]]
EXACT = Counter(w for (w,) in WORDS)


def run_failing_word_count(tmp_path: Path, kind: str, spout: Any, fail_name: str
                           ) -> dict[str, int]:
    """Counts words into SQLite; the new value of ``boom`` fails its batch once after the
    state update (in the commit); returns the counts when the topology went quiet."""
    db = tmp_path / f"{kind}.sqlite"
    t = TridentTopology()
    t.new_stream("words", spout).group_by(["word"]) \
        .persistent_aggregate(StateFactory.sqlite(str(db), "counts", kind), Count(), ["count"]) \
        .new_values_stream().filter(FailOnWord(fail_name, "boom"))
    with LocalCluster() as cluster:
        cluster.submit_topology("fail", {"topology.max.spout.pending": 1}, t.build())
        cluster.wait_for(lambda: sqlite_counts(db, "counts", kind).get("kiwi") == 1, 60,
                         "the last batch")
        cluster.wait_until_quiet("fail")
    assert FAILS[fail_name] == 1  # the injected failure happened
    return sqlite_counts(db, "counts", kind)


@pytest.mark.parametrize("kind", [TRANSACTIONAL, OPAQUE])
def test_batch_failed_after_its_state_update_is_applied_once(tmp_path: Path, kind: str) -> None:
    counts = run_failing_word_count(tmp_path, kind, FixedBatchSpout(["word"], 4, WORDS),
                                    f"once-{kind}")
    assert counts == dict(EXACT)


def test_non_transactional_state_applies_the_replayed_batch_again(tmp_path: Path) -> None:
    counts = run_failing_word_count(tmp_path, NON_TRANSACTIONAL,
                                    FixedBatchSpout(["word"], 4, WORDS), "again")
    # the second batch (boom pear apple fig) was applied by the failed attempt and its replay
    assert counts == dict(EXACT + Counter(["boom", "pear", "apple", "fig"]))


def test_opaque_state_is_exact_when_the_replayed_batch_differs(tmp_path: Path) -> None:
    # batch 2's first attempt has only "boom" (then fails after its update); the replay has all 4
    spout = ShortFirstAttemptSpout(WORDS, 4, short_txid=2, short=1)
    counts = run_failing_word_count(tmp_path, OPAQUE, spout, "opaque-differs")
    assert counts == dict(EXACT)


def test_partition_persist_and_tuple_collection_get() -> None:
    t = TridentTopology()
    # a batch of several keys: each key stores its own value, not the batch's last one
    rows = [["a", 1], ["b", 2], ["a", 3], ["c", 4]]
    state = t.new_stream("kv", FixedBatchSpout(["k", "v"], 2, rows)) \
        .partition_persist(StateFactory.memory("kv"), ["k", "v"], MapPutUpdater(), ["k", "v"])
    state.new_values_stream().peek(Collect("kv-new"))
    queries = FeederBatchSpout(f"kv-queries-{uuid.uuid4().hex}", ["q"])  # feeds are process-wide
    t.new_stream("kv-query", queries) \
        .state_query(state, [], TupleCollectionGet(), ["k", "v"]).peek(Collect("kv-all"))
    with LocalCluster() as cluster:
        cluster.submit_topology("kv", {"topology.max.spout.pending": 1}, t.build())
        cluster.wait_for(lambda: len(seen("kv-new")) == 4, 60, "the writes")
        queries.feed([["go"]])
        cluster.wait_for(lambda: len(seen("kv-all")) == 3, 60, "the query")
        cluster.wait_until_quiet("kv")
    assert sorted(seen("kv-new")) == sorted(rows)
    assert sorted(seen("kv-all")) == [["go", "a", 3], ["go", "b", 2], ["go", "c", 4]]


@pytest.mark.parametrize("kind", [TRANSACTIONAL, OPAQUE, NON_TRANSACTIONAL])
def test_multi_put_stores_each_keys_own_value(kind: str) -> None:
    state = memory_state(kind)
    state.begin_commit(1)
    state.multi_put([["a"], ["b"], ["c"]], [1, 0, 3])
    state.commit(1)
    assert state.multi_get([["a"], ["b"], ["c"]]) == [1, 0, 3]


def test_global_reducer_persistent_aggregate_answers_an_empty_batch_with_the_initial_value() -> None:
    """Storm's global persistentAggregate: every batch, an empty one too, updates the one value
    and emits it on the new-values stream; a reducer never fed reads its ``init()``."""
    t = TridentTopology()
    feeder = FeederBatchSpout(f"empty-{uuid.uuid4().hex}", ["n"])
    t.new_stream("empty", feeder) \
        .persistent_aggregate(StateFactory.memory("empty"), ["n"], ListOf(), ["l"]) \
        .new_values_stream().peek(Collect("empty-new"))
    with LocalCluster() as cluster:
        cluster.submit_topology("empty", {"topology.max.spout.pending": 1}, t.build())
        for n, batch in enumerate(([], [[2], [1]], []), start=1):
            feeder.feed(batch)
            cluster.wait_for(lambda n=n: len(seen("empty-new")) == n, 60, f"batch {n}")
        cluster.wait_until_quiet("empty")
    assert seen("empty-new") == [[[]], [[1, 2]], [[1, 2]]]


def test_global_persistent_aggregate_keeps_one_value(tmp_path: Path) -> None:
    db = tmp_path / "g.sqlite"
    t = TridentTopology()
    t.new_stream("g", FixedBatchSpout(["n"], 3, [[n] for n in range(1, 11)])) \
        .persistent_aggregate(StateFactory.sqlite(str(db), "total", OPAQUE), ["n"], Sum(),
                              ["total"])
    with LocalCluster() as cluster:
        cluster.submit_topology("g", {"topology.max.spout.pending": 2}, t.build())

        def total() -> Any:
            if not db.exists():
                return None
            state = MapState(SqliteStore(db, "trident_state", segments=("total",)), OPAQUE)
            try:
                return state.multi_get([[]])[0]
            finally:
                state.close()
        cluster.wait_for(lambda: total() == 55, 60, "the sum")
        cluster.wait_until_quiet("g")
    assert total() == 55


def test_parquet_state_writes_each_committed_batch_once(tmp_path: Path) -> None:
    if os.environ.get("CI", "").lower() == "true":  # the [spark] extra is installed in CI
        import pyarrow.parquet as pq
    else:
        pq = pytest.importorskip("pyarrow.parquet")
    table = tmp_path / "table"
    rows = [[f"w{i}", i] for i in range(10)]
    t = TridentTopology()
    t.new_stream("pq", FixedBatchSpout(["word", "n"], 4, rows)) \
        .partition_persist(StateFactory.parquet(str(table)), ["word", "n"], ParquetWrite(),
                           ["rows"]) \
        .new_values_stream().filter(FailOnWord("parquet", 2)).peek(Collect("pq-rows"))
    with LocalCluster() as cluster:
        cluster.submit_topology("pq", {"topology.max.spout.pending": 1}, t.build())
        cluster.wait_for(lambda: len(seen("pq-rows")) == 3, 60, "three committed batches")
        cluster.wait_until_quiet("pq")
    assert FAILS["parquet"] == 1  # the last batch (2 rows) failed after its write
    assert sorted(seen("pq-rows")) == [[0], [4], [4]]  # its replayed commit wrote nothing
    parts = sorted(table.glob("txid=*/task=*/*.parquet"))
    assert len(parts) == 3 and not list(table.glob("txid=*/.tmp-*"))
    got = sorted(r for p in parts for r in zip(*pq.read_table(p).to_pydict().values(),
                                               strict=True))
    assert [list(r) for r in got] == sorted(rows)
    with pytest.raises(InvalidTopologyError, match="needs a map state"):
        TridentTopology().new_stream("x", FixedBatchSpout(["n"], 1, [[1]])) \
            .persistent_aggregate(StateFactory.parquet(str(table)), Count(), ["c"])
