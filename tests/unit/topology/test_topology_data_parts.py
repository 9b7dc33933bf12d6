"""The data a component handles and the runtime records: tuples (by position and field name,
trees, copies), column batches (rows, columns by name or position, copies) and the columns
``emit_columns`` takes, the events log's records, the metrics consumers' register, the state
layer's keys, areas, owners and stored documents, and classes referenced by import path."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import msgpack
import pytest

from stormpy.topology import EmitError, Fields, Tuple
from stormpy.topology import _imports as imports
from stormpy.topology._columns import ColumnBatch, column_lists, rows_of
from stormpy.topology._event_log import event_doc, event_line, sampling_pct
from stormpy.topology._metrics_consumer import ConsumerSpec, IMetricsConsumer, parse_consumer_register
from stormpy.topology._state import (
    MAX_VALUE_BYTES,
    CorruptStateError,
    StateKeyError,
    StateValueError,
    check_area,
    check_owner,
    decode_state,
    encode_state,
    key_segments,
)

FIELDS = Fields(["word", "n"])


def test_a_tuple_by_position_and_name() -> None:
    tup = Tuple(["a", 3], "s", 7, "words", FIELDS)
    assert (tup[0], tup[1], tup[-1], tup["word"], tup["n"], tup.value("n")) == ("a", 3, 3, "a", 3, 3)
    assert tup.as_dict() == {"word": "a", "n": 3}
    assert len(tup) == 2
    assert repr(tup) == "Tuple(component='words', stream='s', task=7, values=['a', 3])"
    assert (tup.root, tup.edge, tup.anchors, tup.ack_val) == (0, 0, None, 0)
    with pytest.raises(KeyError) as err:
        tup["z"]
    assert err.value.args == ("unknown field 'z'; fields are ['word', 'n']",)
    bare = Tuple(["a"], "s", 7, "words", None)
    assert bare.as_dict() == {}
    with pytest.raises(KeyError) as err:
        bare["word"]
    assert err.value.args == ("tuple from words/s has no declared fields",)


def test_tuple_trees_and_ticks() -> None:
    assert Tuple([], "s", 1, "c", None, root=5, edge=9).tree_edges() == {5: 9}
    anchors = {5: 9, 6: 10}
    several = Tuple([], "s", 1, "c", None, anchors=anchors)
    assert several.tree_edges() == anchors and several.tree_edges() is not anchors
    assert Tuple([], "s", 1, "c", None).tree_edges() == {}
    assert Tuple([], "s", 1, "c", None, anchors={}).tree_edges() == {}
    assert Tuple([1.0], "__tick", -1, "__system", None).is_tick()
    assert not Tuple([1.0], "__tick", -1, "spout", None).is_tick()
    assert not Tuple([1.0], "default", -1, "__system", None).is_tick()


def test_a_tuple_copies_whole() -> None:
    tup = Tuple(["a", 3], "s", 7, "words", FIELDS, root=5, edge=9, anchors={1: 2})
    tup.ack_val = 11
    for again in (copy.copy(tup), copy.deepcopy(tup), pickle.loads(pickle.dumps(tup))):
        assert (again.values, again.stream, again.task, again.component, again.fields, again.root,
                again.edge, again.anchors, again.ack_val) == \
            (["a", 3], "s", 7, "words", FIELDS, 5, 9, {1: 2}, 11)


def test_a_column_batch_from_rows() -> None:
    batch = ColumnBatch([["a", 1], ["b", 2], ["c", 3]], "s", 4, "words", FIELDS)
    assert len(batch) == 3 and batch.n == 3
    assert batch.rows == [["a", 1], ["b", 2], ["c", 3]]
    assert batch.columns() == [["a", "b", "c"], [1, 2, 3]]
    assert batch.column("word") == ["a", "b", "c"] and batch.column("n") == [1, 2, 3]
    assert batch.column(0) == ["a", "b", "c"] and batch.column(-1) == [1, 2, 3]
    assert batch.column("n") is batch.column(1)  # built once and kept
    assert not batch.is_tick()
    assert (batch.root, batch.edge, batch.anchors, batch.ack_val) == (0, 0, None, 0)
    assert repr(batch) == "ColumnBatch(component='words', stream='s', task=4, tuples=3)"
    with pytest.raises(IndexError) as err:
        batch.column(2)
    assert str(err.value) == "batch from words/s has 2 field(s), no field 2"
    assert batch.column(-2) == ["a", "b", "c"]
    with pytest.raises(IndexError):
        batch.column(-3)
    with pytest.raises(KeyError) as kerr:
        batch.column("z")
    assert kerr.value.args == ("unknown field 'z'; fields are ['word', 'n']",)


def test_columns_of_rows_without_declared_fields() -> None:
    batch = ColumnBatch([["a", 1], ["b", 2]], "s", 4, "words", None)
    assert batch.columns() == [["a", "b"], [1, 2]]
    with pytest.raises(KeyError) as err:
        batch.column("word")
    assert err.value.args == ("batch from words/s has no declared fields",)
    assert ColumnBatch([], "s", 4, "words", None).columns() == []
    no_rows = ColumnBatch([], "s", 4, "words", FIELDS)  # declared fields: a column each, empty
    assert no_rows.columns() == [[], []] and no_rows.column("n") == []
    one = ColumnBatch([["a"], ["b"]], "s", 4, "words", Fields(["word"]))
    assert one.columns() == [["a", "b"]] and one.column("word") == ["a", "b"]
    assert ColumnBatch([["a"], ["b"]], "s", 4, "words", None).columns() == [["a", "b"]]


def test_a_column_batch_from_columns() -> None:
    batch = ColumnBatch(None, "s", 4, "words", FIELDS, columns=[["a", "b"], [1, 2]], n=2)
    assert len(batch) == 2
    assert batch.column("n") == [1, 2]
    assert batch.rows == [["a", 1], ["b", 2]] and batch.rows is batch.rows
    empty = ColumnBatch(None, "s", 4, "words", Fields(), columns=[], n=3)
    assert empty.rows == [[], [], []]
    assert ColumnBatch(None, "s", 4, "w", FIELDS, columns=[[], []], n=0).rows == []
    for bad in ({}, {"columns": [["a"]]}, {"n": 1}, {"columns": [["a"]], "n": -1}):
        with pytest.raises(ValueError) as err:
            ColumnBatch(None, "s", 4, "words", FIELDS, **bad)
        assert str(err.value) == "a ColumnBatch needs rows, or columns and their length"
    assert len(ColumnBatch(None, "s", 4, "w", FIELDS, columns=[[], []], n=0)) == 0


def test_column_batch_trees_and_copies() -> None:
    assert ColumnBatch([], "s", 1, "c", None, root=5, edge=9).tree_edges() == {5: 9}
    anchors = {5: 9, 6: 10}
    several = ColumnBatch([], "s", 1, "c", None, anchors=anchors)
    assert several.tree_edges() == anchors and several.tree_edges() is not anchors
    assert ColumnBatch([], "s", 1, "c", None).tree_edges() == {}
    batch = ColumnBatch(None, "s", 4, "words", FIELDS, root=5, edge=9, anchors={1: 2},
                        columns=[["a"], [1]], n=1)
    batch.ack_val = 11
    for again in (copy.copy(batch), copy.deepcopy(batch), pickle.loads(pickle.dumps(batch))):
        assert (again.rows, again.columns(), again.n, again.stream, again.task, again.component,
                again.fields, again.root, again.edge, again.anchors, again.ack_val) == \
            ([["a", 1]], [["a"], [1]], 1, "s", 4, "words", FIELDS, 5, 9, {1: 2}, 11)
    rows_only = copy.copy(ColumnBatch([["a", 1]], "s", 4, "words", FIELDS))
    assert rows_only.rows == [["a", 1]] and rows_only.n == 1


def test_the_columns_emit_columns_takes() -> None:
    assert column_lists([["a", "b"], (1, 2)], "s") == ([["a", "b"], [1, 2]], 2)
    cols = [["a"]]
    out, n = column_lists(cols, "s")
    assert out[0] is cols[0] and n == 1
    assert column_lists((c for c in [range(3)]), "s") == ([[0, 1, 2]], 3)
    assert rows_of([["a", "b"], [1, 2]], 2) == [["a", 1], ["b", 2]]
    assert rows_of([["a", "b"]], 2) == [["a"], ["b"]]


@pytest.mark.parametrize("columns, message", [
    ("ab", "stream 's': emit_columns takes a list of columns (one list of values per field), got str"),
    (b"ab", "stream 's': emit_columns takes a list of columns (one list of values per field), got bytes"),
    ({"a": [1]}, "stream 's': emit_columns takes a list of columns (one list of values per field), got dict"),
    (3, "stream 's': emit_columns takes a list of columns (one list of values per field), got int"),
    ([[1], "ab"], "stream 's': emit_columns takes a list of columns, one of which is a str"),
    ([[1], b"a"], "stream 's': emit_columns takes a list of columns, one of which is a bytes"),
    ([[1], {"a": 1}], "stream 's': emit_columns takes a list of columns, one of which is a dict"),
    ([[1], 5], "stream 's': emit_columns takes a list of columns, one of which is a int"),
    ([], "stream 's': emit_columns got no columns (a stream without fields takes emit_many)"),
    ([[1, 2], [3]], "stream 's': emit_columns got columns of different lengths [2, 1]"),
])
def test_bad_columns_are_named(columns: Any, message: str) -> None:
    with pytest.raises(EmitError) as err:
        column_lists(columns, "s")
    assert str(err.value) == message


def test_sampling_percentages() -> None:
    debug = {"t-1": {"enable": True, "samplingpct": 10}, "c": {"enable": True, "samplingpct": 50.5},
             "off": {"enable": False, "samplingpct": 50}, "zero": {"enable": True, "samplingpct": 0},
             "none": {"enable": True}}
    assert sampling_pct(debug, "t-1", "c") == 50.5
    assert sampling_pct(debug, "t-1", "other") == 10.0
    assert sampling_pct(debug, "t-2", "other") is None
    assert sampling_pct(debug, "t-1", "off") is None
    assert sampling_pct(debug, "t-1", "zero") is None
    assert sampling_pct(debug, "t-1", "none") is None
    assert sampling_pct({"t": {"samplingpct": 20}}, "t", "c") is None
    assert sampling_pct({"t": {"enable": True, "samplingpct": -5}}, "t", "c") is None


def test_event_records() -> None:
    doc = event_doc(1700000000.1234, "words", 3, "default", ["a", 1, object, b"x"], message_id=7)
    assert doc == {"ts": 1700000000.123, "time": "2023-11-14T22:13:20.123Z", "component": "words",
                   "task": 3, "stream": "default", "values": ["a", 1, repr(object), repr(b"x")],
                   "message_id": 7}
    assert event_doc(5.0, "c", 1, 7, [], message_id=None)["message_id"] is None  # type: ignore[arg-type]
    assert event_doc(5.0, "c", 1, 7, [])["stream"] == "7"  # type: ignore[arg-type]
    assert event_doc(5.0, "c", 1, "s", [], message_id={1, 2})["message_id"] == repr({1, 2})
    assert event_doc(5.0, "c", 1, "s", [])["time"] == "1970-01-01T00:00:05.000Z"
    assert event_line({"a": 1, "b": [1, 2]}) == '{"a": 1, "b": [1, 2]}\n'


class Consumer(IMetricsConsumer):
    pass


def test_the_consumer_register() -> None:
    assert parse_consumer_register(None) == []
    assert parse_consumer_register([]) == []
    assert parse_consumer_register([{"class": "pkg.mod:Outer.Inner"}]) == \
        [ConsumerSpec("pkg.mod:Outer.Inner", None, 1)]
    assert parse_consumer_register(({"class": "m:C"},
                                    {"class": Consumer, "argument": [1], "parallelism.hint": 3})) == \
        [ConsumerSpec("m:C", None, 1), ConsumerSpec(Consumer, [1], 3)]
    with pytest.raises(NotImplementedError):
        Consumer().handle_data_points(None, {})  # type: ignore[arg-type]


@pytest.mark.parametrize("value, message", [
    ("m:C", " must be a list of maps, not str"),
    ({"class": "m:C"}, " must be a list of maps, not dict"),
    ([{"class": "m:C"}, "m:C"], "[1] must be a map with a 'class', not str"),
    ([{"class": "m:C", "args": 1, "hint": 2}],
     "[0] has unknown fields ['args', 'hint'] (known: class, argument, parallelism.hint)"),
    ([{"class": "mC"}], "[0].class must be an import path 'module:Class', got 'mC'"),
    ([{"class": ":C"}], "[0].class must be an import path 'module:Class', got ':C'"),
    ([{"class": "m:"}], "[0].class must be an import path 'module:Class', got 'm:'"),
    ([{"class": "m::C"}], "[0].class must be an import path 'module:Class', got 'm::C'"),
    ([{"class": "m:C:D"}], "[0].class must be an import path 'module:Class', got 'm:C:D'"),
    ([{"class": "m:C:"}], "[0].class must be an import path 'module:Class', got 'm:C:'"),
    ([{}], "[0].class is missing or not an import path 'module:Class'"),
    ([{"class": 3}], "[0].class is missing or not an import path 'module:Class'"),
    ([{"class": "m:C", "parallelism.hint": 0}], "[0].parallelism.hint must be an int >= 1, got 0"),
    ([{"class": "m:C", "parallelism.hint": True}], "[0].parallelism.hint must be an int >= 1, got True"),
    ([{"class": "m:C", "parallelism.hint": 2.0}], "[0].parallelism.hint must be an int >= 1, got 2.0"),
])
def test_a_bad_consumer_register_is_named(value: Any, message: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_consumer_register(value)
    assert str(err.value) == f"topology.metrics.consumer.register{message}"


def test_state_areas_owners_and_keys() -> None:
    assert check_area("checkpoints") == "checkpoints" and check_area("transactional") == "transactional"
    with pytest.raises(ValueError) as err:
        check_area("other")
    assert str(err.value) == "unknown state area 'other' (areas: checkpoints, transactional)"
    assert check_owner("tx") == "tx"
    for bad in ("Tx", "t1", "", "a:b", None):
        with pytest.raises(ValueError) as err:
            check_owner(bad)  # type: ignore[arg-type]
        assert str(err.value) == f"state owner {bad!r} must be a lowercase word (e.g. 'tx', 'kinesis')"
    assert key_segments("/loc", "spout/0") == ("spout", "0")
    assert key_segments("/loc", "", allow_root=True) == ()
    for bad in ("", "a//b", "/a", "a/"):
        with pytest.raises(StateKeyError) as kerr:
            key_segments("/loc", bad)
        assert str(kerr.value) == f"state /loc/{bad}: key must be '/'-separated non-empty segments"
        assert (kerr.value.path, kerr.value.problem) == \
            (f"/loc/{bad}", "key must be '/'-separated non-empty segments")
    with pytest.raises(StateKeyError) as kerr:
        key_segments("/loc", 3)  # type: ignore[arg-type]
    assert str(kerr.value) == "state /loc/3: key must be a string path like 'spout/0'"


def test_state_documents() -> None:
    data = encode_state("/p", {"a": [1, b"x"]})
    assert msgpack.unpackb(data, raw=False) == {"v": 1, "value": {"a": [1, b"x"]}}
    assert decode_state("/p", data) == {"a": [1, b"x"]}
    assert decode_state("/p", msgpack.packb({"v": 1, "value": {1: "a"}})) == {1: "a"}
    assert decode_state("/p", msgpack.packb({"v": 0, "value": None})) is None
    with pytest.raises(StateValueError) as err:
        encode_state("/p", object())
    assert str(err.value).startswith("state /p: value must be msgpack-serialisable plain data: ")
    big = "x" * MAX_VALUE_BYTES
    size = len(msgpack.packb({"v": 1, "value": big}, use_bin_type=True))
    with pytest.raises(StateValueError) as err:
        encode_state("/p", big)
    assert str(err.value) == (f"state /p: value is {size} bytes encoded; the limit is {MAX_VALUE_BYTES} "
                              "(keep large data elsewhere)")
    fits = "x" * (MAX_VALUE_BYTES - (size - MAX_VALUE_BYTES))
    assert len(encode_state("/p", fits)) == MAX_VALUE_BYTES


@pytest.mark.parametrize("data, message", [
    (msgpack.packb([1, 2]), "not a state document ({'v': version, 'value': ...})"),
    (msgpack.packb({"v": 1}), "not a state document ({'v': version, 'value': ...})"),
    (msgpack.packb({"value": 1}), "not a state document ({'v': version, 'value': ...})"),
    (msgpack.packb({"v": "1", "value": 1}), "not a state document ({'v': version, 'value': ...})"),
    (msgpack.packb({"v": 2, "value": 1}), "schema version 2 is newer than this stormpy reads (1)"),
])
def test_corrupt_state_documents_are_named(data: bytes, message: str) -> None:
    with pytest.raises(CorruptStateError) as err:
        decode_state("/p", data)
    assert str(err.value) == f"state /p: {message}"


def test_undecodable_state_is_named() -> None:
    with pytest.raises(CorruptStateError) as err:
        decode_state("/p", b"\x92\x01")
    assert str(err.value) == "state /p: not a msgpack document (ValueError: Unpack failed: incomplete input)"


class Outer:
    class Inner:
        pass


def test_import_paths() -> None:
    assert imports.class_path(Outer) == f"{__name__}:Outer"
    assert imports.import_object(f"{__name__}:Outer.Inner") is Outer.Inner
    assert imports.import_object(f"{__name__}.Outer") is Outer
    assert imports.import_object("stormpy.topology.clock:now") is imports.import_module(
        "stormpy.topology.clock").now
    # an internal module's older public name still resolves
    assert imports.import_object("stormpy.topology.fields:Fields") is Fields
    assert imports.import_module("stormpy.topology.columns").ColumnBatch is ColumnBatch
    assert not imports.is_local_path("m:C") and imports.is_local_path("m:f.<locals>.C@1")


def test_local_classes_resolve_in_this_process_only() -> None:
    class Local:
        pass

    path = imports.class_path(Local)
    assert path == f"{__name__}:test_local_classes_resolve_in_this_process_only.<locals>.Local@{id(Local):x}"
    assert imports.import_object(path) is Local
    with pytest.raises(ImportError) as err:
        imports.import_object(path + "0")
    assert str(err.value) == (f"class test_local_classes_resolve_in_this_process_only.<locals>.Local "
                              f"({path + '0'!r}) {imports.MOVE_TO_MODULE_LEVEL}")
    with pytest.raises(ImportError) as err:
        imports.import_object("<locals>")
    assert str(err.value) == f"class <locals> ('<locals>') {imports.MOVE_TO_MODULE_LEVEL}"


@pytest.mark.parametrize("path, message", [
    ("nodots", "'nodots' is not an import path like 'package.module:Name'"),
    (":Name", "':Name' is not an import path like 'package.module:Name'"),
    ("mod:", "'mod:' is not an import path like 'package.module:Name'"),
    ("stormpy.topology:NoSuch",
     "module 'stormpy.topology' has no attribute 'NoSuch' (from 'stormpy.topology:NoSuch')"),
    ("stormpy.topology:Fields:x",
     "module 'stormpy.topology' has no attribute 'Fields:x' (from 'stormpy.topology:Fields:x')"),
    ("stormpy.topology:Fields.nope.x",
     "module 'stormpy.topology' has no attribute 'Fields.nope.x' (from 'stormpy.topology:Fields.nope.x')"),
])
def test_bad_import_paths_are_named(path: str, message: str) -> None:
    with pytest.raises(ImportError) as err:
        imports.import_object(path)
    assert str(err.value) == message


@pytest.mark.parametrize("module, missing", [
    ("stormpy.topology.no_such", "stormpy.topology.no_such"),
    ("stormpy.no_pkg.mod", "stormpy.no_pkg"),
    ("no_such_top.mod", "no_such_top"),
])
def test_missing_modules_are_named(module: str, missing: str) -> None:
    with pytest.raises(ImportError) as err:
        imports.import_object(f"{module}:X")
    assert str(err.value) == \
        f"cannot import module {module!r} (from '{module}:X'): No module named {missing!r}"


def test_the_internal_name_is_tried_only_for_stormpy_modules() -> None:
    with pytest.raises(ModuleNotFoundError) as err:
        imports.import_module("stormpy.topology._no_such")
    assert err.value.name == "stormpy.topology._no_such"
    with pytest.raises(ModuleNotFoundError) as err:
        imports.import_module("stormpy.topology.no_such")
    assert err.value.name == "stormpy.topology.no_such"  # the first error, not the internal name's
    with pytest.raises(ModuleNotFoundError) as err:
        imports.import_module("json.fields")
    assert err.value.name == "json.fields"
    with pytest.raises(ModuleNotFoundError) as err:  # importlib._bootstrap exists: not looked for
        imports.import_module("importlib.bootstrap")
    assert err.value.name == "importlib.bootstrap"
