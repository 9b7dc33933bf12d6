"""The smaller parts of Trident a user meets directly: ``TridentTopology``'s checks of
``new_stream``, ``merge`` and joins; the stream graph's fields; operations as the data a topology
carries (``op_doc``/``op_from_doc``), ``TridentTuple`` and ``TridentCollector``; the test spouts
(``FixedBatchSpout``, ``FeederBatchSpout``: their coordinator and emitter as the transactional
layer drives them); the Parquet state's files. No cluster: each case is milliseconds."""

from __future__ import annotations

import builtins
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from trident_kit import Double, Split, split_words

from stormpy.topology._errors import InvalidTopologyError
from stormpy.topology._streams import Stream as Declared
from stormpy.transactional._api import BatchOutputCollector
from stormpy.transactional._attempt import TransactionAttempt
from stormpy.trident import (
    Count,
    FeederBatchSpout,
    FixedBatchSpout,
    Function,
    Operation,
    Sum,
    TridentCollector,
    TridentTopology,
    TridentTuple,
)
from stormpy.trident._graph import Graph
from stormpy.trident._operation import op_doc, op_from_doc
from stormpy.trident._parquet import ParquetState


class Scaled(Function):
    """Multiplies by ``factor``; ``inner`` may be another operation (carried as one)."""

    def __init__(self, factor: int, inner: Any = None, *, offset: int = 0) -> None:
        self.factor, self.inner, self.offset = factor, inner, offset

    def execute(self, tuple_: TridentTuple, collector: TridentCollector) -> None:
        collector.emit([tuple_[0] * self.factor + self.offset])


# -- TridentTopology ----------------------------------------------------------------------------

@pytest.mark.parametrize("txid", ["", "a/b", 7, None])
def test_new_stream_refuses_a_bad_txid_naming_it(txid: Any) -> None:
    with pytest.raises(InvalidTopologyError) as err:
        TridentTopology().new_stream(txid, FixedBatchSpout(["n"], 1, []))
    assert str(err.value) == f"new_stream: txid must be a non-empty string without '/', got {txid!r}"


def test_new_stream_refuses_a_txid_used_twice_and_what_is_no_transactional_spout() -> None:
    t = TridentTopology()
    t.new_stream("a", FixedBatchSpout(["n"], 1, []))
    with pytest.raises(InvalidTopologyError) as twice:
        t.new_stream("a", FixedBatchSpout(["n"], 1, []))
    assert str(twice.value) == "new_stream: txid 'a' used twice"
    for spout in (object(), Count(), type("NoSpout", (), {"component_class": int})()):
        with pytest.raises(InvalidTopologyError) as bad:
            t.new_stream("b", spout)
        assert str(bad.value) == (f"new_stream 'b': {spout!r:.60} is not an instance of a "
                                  "transactional spout")
    # the refused txid stays free
    assert t.new_stream("b", FixedBatchSpout(["n"], 1, [])).fields == ["n"]


def test_a_stream_has_the_spouts_fields_without_the_attempt() -> None:
    t = TridentTopology()
    s = t.new_stream("a", FixedBatchSpout(["x", "y"], 1, []))
    assert s.fields == ["x", "y"]
    assert t.new_stream("f", FeederBatchSpout(f"parts-{uuid.uuid4().hex}", ["w"])).fields == ["w"]


def test_merge_is_named_after_the_first_stream_unless_told() -> None:
    t = TridentTopology()
    a = t.new_stream("a", FixedBatchSpout(["x", "y"], 1, []))
    b = a.each(["x"], Double(), ["d"]).project(["d", "y"])
    assert t.merge(a, b).fields == ["x", "y"]
    assert t.merge(a, b, output_fields=["p", "q"]).fields == ["p", "q"]
    assert t.merge(a, b, output_fields=[]).fields == ["x", "y"]


def test_joins_name_the_keys_then_each_sides_other_fields() -> None:
    t = TridentTopology()
    a = t.new_stream("a", FixedBatchSpout(["k", "x"], 1, []))
    b = t.new_stream("b", FixedBatchSpout(["k", "y"], 1, []))
    assert t.join(a, ["k"], b, ["k"], ["key", "x", "y"]).fields == ["key", "x", "y"]
    c = a.each(["x"], Double(), ["z"]).project(["k", "z"])
    assert t.multi_join([a, b, c], [["k"], ["k"], ["k"]], ["key", "x", "y", "z"]).fields == \
        ["key", "x", "y", "z"]


def test_build_turns_the_streams_into_a_topology() -> None:
    t = TridentTopology()
    t.new_stream("a", FixedBatchSpout(["s"], 1, [])).each(["s"], Split(), ["w"])
    spec = t.build()
    assert {"spout-a-coordinator", "spout-a", "b-0"} <= set(spec.components)
    with pytest.raises(InvalidTopologyError, match="^a Trident topology needs a new_stream$"):
        TridentTopology().build()


# -- the graph ----------------------------------------------------------------------------------

def test_graph_nodes_are_numbered_in_creation_order_and_keep_their_own_lists() -> None:
    graph = Graph()
    fields, parents = ["a", "b"], [0]
    first = graph.add("spout", ["x"], [])
    second = graph.add("op", fields, parents, name="n")
    fields.append("c")
    parents.append(1)
    assert (first.id, second.id) == (0, 1)
    assert graph[1] is second and graph[0] is first
    assert (second.kind, second.fields, second.parents, second.name) == ("op", ["a", "b"], [0], "n")
    with pytest.raises(InvalidTopologyError) as dup:
        graph.add("op", ["a", "b", "a"], [1])
    assert str(dup.value) == "duplicate field names in ['a', 'b', 'a']"
    assert len(graph.nodes) == 2


# -- operations as data -------------------------------------------------------------------------

def test_an_operation_travels_with_its_arguments_nested_operations_included() -> None:
    op = Scaled(3, Scaled(2), offset=1)
    doc = op_doc(op, "each")
    assert doc == {"cls": f"{__name__}:Scaled", "args": [3, {"$op": {
        "cls": f"{__name__}:Scaled", "args": [2], "kwargs": {}}}], "kwargs": {"offset": 1}}
    again = op_from_doc(doc)
    assert type(again) is Scaled and (again.factor, again.offset) == (3, 1)
    assert type(again.inner) is Scaled and again.inner.factor == 2
    nested_kw = op_doc(Scaled(1, inner=None, offset=Scaled(5)), "x")["kwargs"]
    assert nested_kw == {"inner": None, "offset": {"$op": {"cls": f"{__name__}:Scaled",
                                                           "args": [5], "kwargs": {}}}}
    assert op_from_doc(op_doc(Scaled(1, inner=None, offset=Scaled(5)), "x")).offset.factor == 5
    # a map that merely has a "$op" key among others is an argument like any other
    plain = {"$op": 1, "other": 2}
    assert op_from_doc(op_doc(Scaled(1, plain), "x")).inner == plain
    # arguments left out of a document are none
    assert op_from_doc({"cls": "trident_kit:Double"}).__class__ is Double
    assert op_doc(Double(), "each") == {"cls": "trident_kit:Double", "args": [], "kwargs": {}}


def test_a_function_travels_by_its_path() -> None:
    assert op_doc(split_words, "each") == {"fn": "trident_kit:split_words"}
    assert op_from_doc({"fn": "trident_kit:split_words"}) is split_words


def test_what_a_worker_cannot_import_is_refused_naming_the_call() -> None:
    with pytest.raises(InvalidTopologyError) as lam:
        op_doc(lambda t: t, "each")
    assert str(lam.value) == (
        "each: test_what_a_worker_cannot_import_is_refused_naming_the_call.<locals>.<lambda> is a "
        "lambda or nested function; workers import operations by path, so pass a module-level "
        "function or an Operation instance")
    def nested(t: Any) -> Any:
        return t

    with pytest.raises(InvalidTopologyError, match=r"^filter: test_what_a_worker_cannot_import_is_"
                                                   r"refused_naming_the_call\.<locals>\.nested is a "
                                                   r"lambda or nested function; "):
        op_doc(nested, "filter")
    with pytest.raises(InvalidTopologyError) as neither:
        op_doc("x" * 100, "map")
    assert str(neither.value) == f"map: {'x' * 100!r:.80} is neither an Operation nor a function"


def test_only_a_callable_with_an_import_path_is_taken_as_a_function() -> None:
    from types import SimpleNamespace

    named = SimpleNamespace(__qualname__="f", __module__="m")  # has a path, is not callable
    with pytest.raises(InvalidTopologyError) as not_callable:
        op_doc(named, "each")
    assert str(not_callable.value) == f"each: {named!r:.80} is neither an Operation nor a function"
    method = "".__add__  # callable with a __qualname__, but no __module__ to import it from
    with pytest.raises(InvalidTopologyError) as err:
        op_doc(method, "map")
    assert str(err.value) == f"map: {method!r:.80} is neither an Operation nor a function"
    assert op_doc(len, "each") == {"fn": "builtins:len"}


class NotAnOperation:
    """A plain object (it has a ``__module__``, from its class, but is neither callable nor an
    Operation)."""


def test_an_object_that_is_no_operation_is_refused() -> None:
    obj = NotAnOperation()
    with pytest.raises(InvalidTopologyError) as err:
        op_doc(obj, "filter")
    assert str(err.value) == f"filter: {obj!r:.80} is neither an Operation nor a function"


def test_an_operation_made_without_arguments_carries_none() -> None:
    op = Sum()
    assert op._init_args == ((), {})
    assert op_doc(op, "x")["args"] == [] and op_doc(op, "x")["kwargs"] == {}
    assert Operation.prepare(op, {}, None) is None and Operation.cleanup(op) is None


def test_a_trident_tuple_reads_fields_by_name_or_position() -> None:
    t = TridentTuple([1, "a", None], ["n", "w", "z"])
    assert (t[0], t["w"], t[-1], t[0:2]) == (1, "a", None, (1, "a"))
    assert t.get("n") == 1 and t.get("z", 5) is None and t.get("q") is None and t.get("q", 7) == 7
    assert t.values == [1, "a", None] and t.fields == ["n", "w", "z"]
    with pytest.raises(KeyError) as err:
        t["q"]
    assert err.value.args == ("no field 'q' (fields: ['n', 'w', 'z'])",)
    with pytest.raises(IndexError):
        t[3]


def test_a_trident_collector_emits_into_its_sink_and_raises_what_is_reported() -> None:
    out: list[Any] = []
    collector = TridentCollector(out.append)
    collector.emit([1, 2])
    assert out == [[1, 2]]
    boom = ValueError("boom")
    with pytest.raises(ValueError) as err:
        collector.report_error(boom)
    assert err.value is boom


# -- the test spouts ----------------------------------------------------------------------------

class Batch:
    def __init__(self) -> None:
        self.rows: list[list[Any]] = []
        self.collector = BatchOutputCollector(lambda values, stream: self.rows.append(values) or [],
                                              lambda *a: None, lambda e: None)


def test_a_fixed_batch_spout_keeps_its_rows_fields_and_batch_size() -> None:
    rows = [["a"], ["b"], ["c"]]
    spout = FixedBatchSpout(["w"], 2, rows)
    rows.append(["d"])
    assert spout.component_kwargs == {"fields": ["w"], "max_batch_size": 2,
                                      "rows": [["a"], ["b"], ["c"]]}
    assert spout.component_class.declare_outputs(spout.component_kwargs) == \
        {"default": Declared(["tx", "w"])}


def test_a_feeder_spout_emits_each_fed_batch_once_in_order() -> None:
    name = f"parts-feed-{uuid.uuid4().hex}"  # feeds live as long as the process
    spout = FeederBatchSpout(name, ["w", "n"])
    assert spout.component_class is FeederBatchSpout
    assert spout.component_kwargs == {"name": name, "fields": ["w", "n"]}
    assert FeederBatchSpout.declare_outputs(spout.component_kwargs) == \
        {"default": Declared(["tx", "w", "n"])}
    coordinator = spout.get_coordinator({}, None)
    emitter = spout.get_emitter({}, None)
    assert coordinator.number_partitions() == 1
    assert not coordinator.is_ready()  # nothing fed yet
    row = ["b", 2]
    spout.feed([("a", 1), row])
    row.append("changed after the feed")
    spout.feed([])
    assert coordinator.is_ready() and coordinator.is_ready() and not coordinator.is_ready()
    first, second = Batch(), Batch()
    meta = emitter.emit_partition_batch_new(TransactionAttempt(1, 0), first.collector, 0, None)
    assert meta == {"batch": 0}
    assert first.rows == [[[1, 0], "a", 1], [[1, 0], "b", 2]]
    meta2 = emitter.emit_partition_batch_new(TransactionAttempt(2, 0), second.collector, 0, meta)
    assert meta2 == {"batch": 1} and second.rows == []
    # a replay emits the same batch again; a batch not fed (yet) is empty
    replay = Batch()
    emitter.emit_partition_batch(TransactionAttempt(1, 3), replay.collector, 0, {"batch": 0})
    assert replay.rows == [[[1, 3], "a", 1], [[1, 3], "b", 2]]
    for index in (2, 5):
        emitter.emit_partition_batch(TransactionAttempt(9, 0), replay.collector, 0, {"batch": index})
    assert len(replay.rows) == 2
    # another spout of the same name (another task) sees the same feed; a new coordinator
    # starts from the first batch
    again = FeederBatchSpout(name, ["w", "n"])
    assert again.get_coordinator({}, None).is_ready()
    other = FeederBatchSpout(f"parts-other-{uuid.uuid4().hex}", ["w"])
    assert not other.get_coordinator({}, None).is_ready()
    unknown = Batch()
    other.get_emitter({}, None).emit_partition_batch(TransactionAttempt(1, 0), unknown.collector, 0,
                                                     {"batch": 0})
    assert unknown.rows == []


# -- the Parquet state --------------------------------------------------------------------------

def test_the_parquet_state_writes_each_txid_once_per_task(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    state = ParquetState(str(tmp_path / "t"), 2)
    assert state.directory(5) == str(tmp_path / "t" / "txid=5" / "task=2")
    with pytest.raises(RuntimeError) as outside:
        state.write([[1]], ["n"])
    assert str(outside.value) == "Parquet state written outside a commit (begin_commit not called)"
    state.begin_commit(5)
    assert state.write([["a", 1], ["b", 2]], ["w", "n"]) is True
    state.commit(5)
    part = tmp_path / "t" / "txid=5" / "task=2" / "part-0.parquet"
    assert pq.read_table(str(part)).to_pydict() == {"w": ["a", "b"], "n": [1, 2]}
    assert sorted(os.listdir(tmp_path / "t" / "txid=5")) == ["task=2"]  # no temporary left
    with pytest.raises(RuntimeError):
        state.write([[1]], ["n"])  # the commit ended
    state.begin_commit(5)
    assert state.write([["c", 3]], ["w", "n"]) is False  # a replayed commit writes nothing
    assert pq.read_table(str(part)).to_pydict() == {"w": ["a", "b"], "n": [1, 2]}
    other = ParquetState(str(tmp_path / "t"), 0)
    other.begin_commit(5)
    assert other.write([], ["w"]) is True
    assert sorted(os.listdir(tmp_path / "t" / "txid=5")) == ["task=0", "task=2"]
    assert pq.read_table(str(tmp_path / "t" / "txid=5" / "task=0" / "part-0.parquet")).num_rows == 0
    assert other.close() is None


def test_a_parquet_part_is_written_in_a_hidden_directory_next_to_its_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.parquet as pq

    written: list[tuple[str, list[str]]] = []
    real = pq.write_table

    def spy(table: Any, where: str, *args: Any, **kwargs: Any) -> None:
        written.append((where, sorted(os.listdir(tmp_path / "t" / "txid=4"))))
        real(table, where, *args, **kwargs)

    monkeypatch.setattr(pq, "write_table", spy)
    monkeypatch.chdir(tmp_path)
    state = ParquetState(str(tmp_path / "t"), 7)
    state.begin_commit(4)
    assert state.write([[1]], ["n"]) is True
    (where, present), = written
    temporary = Path(where).parent
    # readers (Spark, pyarrow datasets) skip names starting with '.' while the part is written
    assert temporary.parent == tmp_path / "t" / "txid=4"
    assert temporary.name.startswith(".tmp-task=7-") and present == [temporary.name]
    assert Path(where).name == "part-0.parquet"
    assert sorted(os.listdir(tmp_path / "t" / "txid=4")) == ["task=7"]
    assert sorted(os.listdir(tmp_path)) == ["t"]


def test_a_failed_parquet_write_leaves_no_temporary_directory(tmp_path: Path) -> None:
    state = ParquetState(str(tmp_path), 1)
    state.begin_commit(3)
    with pytest.raises(Exception):  # noqa: B017, PT011 - pyarrow's own error for a ragged row
        state.write([["a", 1], ["b"]], ["w", "n"])
    assert os.listdir(tmp_path / "txid=3") == []
    assert state.write([["a", 1]], ["w", "n"]) is True


def test_the_parquet_state_without_pyarrow_names_the_extra(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    real = builtins.__import__

    def no_pyarrow(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("pyarrow"):
            raise ImportError(f"No module named {name!r}")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    state = ParquetState(str(tmp_path), 0)
    state.begin_commit(1)
    with pytest.raises(ImportError) as err:
        state.write([], ["n"])
    assert str(err.value) == ("the Parquet state needs pyarrow (No module named 'pyarrow'); install "
                              "the extra: pip install 'stormpy-runtime[spark]'")
    assert err.value.__cause__ is None and err.value.__suppress_context__
    assert not (tmp_path / "txid=1").exists()
