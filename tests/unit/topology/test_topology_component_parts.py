"""The pieces users subclass and declare with: the runtime's methods refusing calls before the
component runs, the entry-point check and its hints, output declarations in every accepted form
(and the refused ones, named), field lists, groupings and their documents."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy import BasicBolt, Bolt, CustomStreamGrouping, Fields, Spout, Stream
from stormpy.topology import Grouping
from stormpy.topology._component import check_entry_point, require_entry_point
from stormpy.topology._streams import normalize_outputs


class Words(Spout):
    outputs = ["word"]


class Sink(Bolt):
    def execute(self, tup: Any) -> None:
        self.ack(tup)


@pytest.mark.parametrize("cls, names", [
    (Words, ("emit", "emit_many", "emit_direct", "emit_batch", "report_error", "run_in_background",
             "call_soon_threadsafe")),
    (Sink, ("emit", "emit_many", "emit_direct", "ack", "ack_many", "fail", "reset_timeout",
            "report_error", "run_in_background", "call_soon_threadsafe")),
])
def test_runtime_methods_refuse_calls_before_the_component_runs(cls: type, names: tuple[str, ...]) -> None:
    component = cls()
    for name in names:
        method = getattr(component, name)
        assert method.__name__ == name
        with pytest.raises(RuntimeError) as err:
            method(["v"], stream="s")
        assert str(err.value) == (f"{cls.__name__}.{name}() can only be called once the component runs "
                                  "(after open/prepare)")


def test_emit_columns_emits_the_rows_when_not_columnar() -> None:
    sent: list[tuple[Any, Any, Any]] = []
    bolt = Sink()
    bolt.emit_many = lambda rows, anchors, stream: sent.append((rows, anchors, stream))  # type: ignore[method-assign]
    bolt.emit_columns([["a", "b"], [1, 2]], anchors="anchor", stream="s")
    bolt.emit_columns([["x", "y"]])
    assert sent == [([["a", 1], ["b", 2]], "anchor", "s"), ([["x"], ["y"]], None, "default")]


def test_custom_grouping_base() -> None:
    grouping = CustomStreamGrouping()
    grouping.prepare(None, "s", (3, 4))  # type: ignore[arg-type]
    assert grouping.target_tasks == [3, 4]
    with pytest.raises(NotImplementedError):
        grouping.choose_tasks(1, ["v"])


def test_default_declarations() -> None:
    assert Words.declare_outputs({}) == {"default": Stream(["word"])}
    assert Sink.declare_outputs({"x": 1}) == {}
    assert Sink.declare_config({}) == {}
    assert Spout.finish_topology(None, "c") is None  # type: ignore[arg-type,func-returns-value]


class Intermediate(Bolt):
    def execute(self, tup: Any) -> None:
        self.ack(tup)


class Inherits(Intermediate):
    pass


class Both(Bolt):
    def exectue(self, tup: Any) -> None:
        pass

    def process(self, tup: Any) -> None:
        pass


class Private(Bolt):
    def _exectue(self, tup: Any) -> None:
        pass

    exectue_ = 3  # not a method


class FarOff(Bolt):
    def handle_it(self, tup: Any) -> None:
        pass


class Near(Bolt):
    def exec(self, tup: Any) -> None:
        pass


class Batch(Bolt):
    def execute_batch(self, tuples: Any) -> None:
        pass


class Columns(Bolt):
    def execute_columns(self, batch: Any) -> None:
        pass


class Basic(BasicBolt):
    def process(self, tup: Any) -> None:
        pass


class Subclassed(Basic):
    pass


def entry_error(cls: type) -> str:
    with pytest.raises(ValueError) as err:
        check_entry_point(cls)
    return str(err.value)


def test_entry_points_defined_anywhere_below_the_base_are_accepted() -> None:
    for cls in (Sink, Inherits, Batch, Columns, Basic, Subclassed, Words, Spout):
        check_entry_point(cls)


def test_entry_point_hints() -> None:
    tail = "as a Bolt it would do nothing with its input"
    assert entry_error(Both) == f"Both defines no execute(tuple): {tail}; rename process() to execute()?"
    assert entry_error(Private) == f"Private defines no execute(tuple): {tail}"
    assert entry_error(FarOff) == f"FarOff defines no execute(tuple): {tail}"
    assert entry_error(Near) == f"Near defines no execute(tuple): {tail}; rename exec() to execute()?"
    assert entry_error(BasicBolt) == ("BasicBolt defines no process(tuple): as a BasicBolt it would "
                                      "do nothing with its input")


def test_require_entry_point_in_general() -> None:
    class Base:
        def run(self) -> None:
            pass

    class Runs(Base):
        def run(self) -> None:
            pass

    class Mistook(Base):
        def go(self) -> None:
            pass

        def rnu(self) -> None:
            pass

    require_entry_point(Runs, Base, ("run",), "run()")
    with pytest.raises(ValueError) as err:
        require_entry_point(Mistook, Base, ("run", "start"), "run()", mistaken=("go",))
    assert str(err.value) == ("test_require_entry_point_in_general.<locals>.Mistook defines no run(): "
                              "as a Base it would do nothing with its input; rename go() to run()?")
    with pytest.raises(ValueError) as err:
        require_entry_point(Mistook, Base, ("run",), "run()")
    assert str(err.value).endswith("; rename rnu() to run()?")


def test_outputs_in_every_form() -> None:
    assert normalize_outputs(None, "C") == {}
    assert normalize_outputs([], "C") == {}
    assert normalize_outputs(["a", "b"], "C") == {"default": Stream(["a", "b"])}
    side = Stream(["x"], name="side", direct=True)
    mixed = normalize_outputs([side, "a"], "C")
    assert mixed == {"default": Stream(["a"]), "side": side}
    assert list(mixed) == ["default", "side"]
    assert normalize_outputs({"default": ["a"], "s": ("b", "c"), "t": side}, "C") == \
        {"default": Stream(["a"]), "s": Stream(["b", "c"], name="s"), "side": side}  # its own name
    assert normalize_outputs({"s": ["b"]}, "C")["s"].name == "s"


@pytest.mark.parametrize("outputs, message", [
    (["a", 3], "C: outputs entries must be field names or Stream objects, got 3"),
    ([Stream(["a"]), "b"], "C: stream 'default' declared twice"),
    ([Stream(["a"], name="s"), Stream(["b"], name="s")], "C: stream 's' declared twice"),
    ([Stream(["a"], name="__s")], "C: stream names starting with '__' are reserved ('__s')"),
    ({"__x": ["a"]}, "C: stream names starting with '__' are reserved ('__x')"),
])
def test_bad_outputs_are_named(outputs: Any, message: str) -> None:
    with pytest.raises(ValueError) as err:
        normalize_outputs(outputs, "C")
    assert str(err.value) == message


def test_streams() -> None:
    stream = Stream(("a", "b"))
    assert (stream.fields, stream.name, stream.direct) == (Fields(["a", "b"]), "default", False)
    assert isinstance(stream.fields, Fields)
    fields = Fields(["x"])
    assert Stream(fields, name="n", direct=1).fields is fields  # type: ignore[arg-type]
    assert Stream(fields, name="n", direct=1).direct is True  # type: ignore[arg-type]
    assert Stream().fields == Fields()
    assert stream.to_doc() == {"fields": ["a", "b"], "direct": False}
    assert Stream(["a"], direct=True).to_doc() == {"fields": ["a"], "direct": True}


def test_fields() -> None:
    fields = Fields(["a", "b", "c"])
    assert [fields.index_of(n) for n in ("a", "b", "c")] == [0, 1, 2]
    assert "b" in fields and "d" not in fields and 3 not in fields
    assert fields[1] == "b" and fields[1:] == ("b", "c")
    assert len(fields) == 3 and list(fields) == ["a", "b", "c"]
    assert fields == Fields(("a", "b", "c")) and fields == ["a", "b", "c"] and fields == ("a", "b", "c")
    assert fields != ["a", "b"] and fields != Fields(["a"]) and fields != "abc"
    assert fields.__eq__(3) is NotImplemented
    assert hash(fields) == hash(("a", "b", "c"))
    assert repr(fields) == "Fields(['a', 'b', 'c'])"
    assert fields.to_list() == ["a", "b", "c"]
    assert Fields("word").to_list() == ["word"]
    assert Fields().to_list() == []
    with pytest.raises(KeyError) as err:
        fields.index_of("z")
    assert err.value.args == ("unknown field 'z'; fields are ['a', 'b', 'c']",)


@pytest.mark.parametrize("names, message", [
    (["a", ""], "field names must be non-empty strings, got ''"),
    (["a", 3], "field names must be non-empty strings, got 3"),
    (["a", "b", "a"], "duplicate field name in ['a', 'b', 'a']"),
])
def test_bad_fields_are_named(names: Any, message: str) -> None:
    with pytest.raises(ValueError) as err:
        Fields(names)
    assert str(err.value) == message


def test_grouping_documents() -> None:
    assert Grouping("shuffle").to_doc() == {"type": "shuffle"}
    assert Grouping("fields", ("a", "b")).to_doc() == {"type": "fields", "fields": ["a", "b"]}
    assert Grouping("custom", custom_class="m:G").to_doc() == {"type": "custom", "class": "m:G", "kwargs": {}}
    custom = Grouping("custom", custom_class="m:G", custom_kwargs={"n": 1})
    assert custom.to_doc() == {"type": "custom", "class": "m:G", "kwargs": {"n": 1}}
    for grouping in (Grouping("shuffle"), Grouping("fields", ("a", "b")), custom):
        back = Grouping.from_doc(grouping.to_doc())
        assert back == grouping and back.custom_kwargs == grouping.custom_kwargs
    back = Grouping.from_doc({"type": "fields", "fields": ["a"]})
    assert back.fields == ("a",) and back.custom_class is None and back.custom_kwargs == {}


def test_a_placeholder_names_its_class_and_method() -> None:
    from stormpy.topology._component import _unbound

    class Custom(Spout):
        later = _unbound("later")

    assert Custom.later.__name__ == "later"
    with pytest.raises(RuntimeError) as err:
        Custom().later(1, k=2)
    assert str(err.value) == "Custom.later() can only be called once the component runs (after open/prepare)"


def test_emit_columns_names_the_stream_of_bad_columns() -> None:
    from stormpy import EmitError

    with pytest.raises(EmitError) as err:
        Sink().emit_columns("ab", stream="counts")
    assert str(err.value) == ("stream 'counts': emit_columns takes a list of columns (one list of values "
                              "per field), got str")


def test_outputs_given_as_one_string_is_one_field_and_other_shapes_are_refused() -> None:
    assert normalize_outputs("word", "Split")["default"].fields == ["word"]  # not w, o, r, d
    assert normalize_outputs({"counts": "word"}, "Split")["counts"].fields == ["word"]
    assert normalize_outputs(Fields(["a", "b"]), "Split")["default"].fields == ["a", "b"]
    with pytest.raises(ValueError) as bad_stream:
        normalize_outputs({"counts": 3}, "Split")
    assert str(bad_stream.value) == ("Split: outputs stream 'counts' must be a list of field names or a "
                                     "Stream, got 3")
    for shape in (3, {"a", "b"}):
        with pytest.raises(ValueError) as bad:
            normalize_outputs(shape, "Split")
        assert str(bad.value).startswith("Split: outputs must be a list of field names or Stream objects, "
                                         "or a dict of stream name to fields, got ")
