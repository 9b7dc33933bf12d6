"""The topology spec: the build-time checks with the exact message naming the culprit (ids,
names, kinds, parallelism and task counts, subscriptions, groupings, arguments msgpack cannot
carry), the spec document's layout and its decoding, and the queries the runtime asks
(subscribers, stream fields, the implicit ``__system`` stream)."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy import Bolt, InvalidTopologyError, Spout, Stream, TopologyBuilder
from stormpy.topology import TopologySpec
from stormpy.topology import _grouping as g
from stormpy.topology._imports import MOVE_TO_MODULE_LEVEL
from stormpy.topology._spec import (
    ComponentSpec,
    InputSpec,
    check_name,
    check_topology_name,
    refuse_local_classes,
)

NAME_RULE = "use 1-256 characters without whitespace or control characters"
TOPOLOGY_NAME_RULE = "use 1-100 letters, digits, '_', '.' or '-', starting with a letter or digit"


class Words(Spout):
    outputs = [Stream(["word", "n"]), Stream(["x"], name="side"), Stream(["d"], name="dir", direct=True)]


class Sink(Bolt):
    def execute(self, tup: Any) -> None:
        self.ack(tup)


def spout(cid: str = "words", **kw: Any) -> ComponentSpec:
    return ComponentSpec(id=cid, kind="spout", class_path="m:Words",
                         streams={"default": Stream(["word", "n"]),
                                  "dir": Stream(["d"], name="dir", direct=True)},
                         **kw)


def bolt(cid: str = "sink", grouping: g.Grouping | None = None, stream: str = "default",
         source: str = "words", **kw: Any) -> ComponentSpec:
    return ComponentSpec(id=cid, kind="bolt", class_path="m:Sink",
                         inputs=[InputSpec(source, stream, grouping or g.Grouping("shuffle"))], **kw)


def refusal(*components: ComponentSpec) -> str:
    spec = TopologySpec({c.id: c for c in components})
    with pytest.raises(InvalidTopologyError) as err:
        spec.validate()
    return str(err.value)


def test_names_are_checked_whole() -> None:
    for good in ("a", "x" * 256, "spout-1.b_c", "é"):
        assert check_name(good, "component id") == good
    for bad in ("", "x" * 257, "a b", "a\n", "\ta", "a\x7f", "a\x9f", "a\u2028", None, 3):
        with pytest.raises(InvalidTopologyError) as err:
            check_name(bad, "stream id")
        assert str(err.value) == f"invalid stream id {bad!r}: {NAME_RULE}"


def test_topology_names_are_checked_whole() -> None:
    for good in ("a", "9", "word-count_2.v1", "a" * 100):
        assert check_topology_name(good) == good
    for bad in ("", "-a", ".a", "_a", "a b", "a/b", "a..b", "a" * 101, "a\n", None, 5):
        with pytest.raises(InvalidTopologyError) as err:
            check_topology_name(bad)
        assert str(err.value) == f"invalid topology name {bad!r}: {TOPOLOGY_NAME_RULE}"


def test_a_valid_spec_passes() -> None:
    TopologySpec({"words": spout(), "sink": bolt()}).validate()


def test_no_spouts_and_bad_ids_are_named() -> None:
    assert refusal(bolt(source="sink")) == "topology has no spouts"
    assert refusal(spout(), bolt(cid="")) == "component id must be a non-empty string, got ''"
    assert refusal(spout(), bolt(cid="a b")) == f"invalid component id 'a b': {NAME_RULE}"
    assert refusal(spout(), bolt(cid="__x")) == "component id '__x': ids starting with '__' are reserved"
    TopologySpec({"words": spout(), "_x": bolt(cid="_x")}).validate()


def test_stream_ids_and_config_keys_are_checked() -> None:
    bad_stream = spout()
    bad_stream.streams["a b"] = Stream(["v"], name="a b")
    assert refusal(bad_stream) == f"invalid stream id of component 'words' 'a b': {NAME_RULE}"
    assert refusal(spout(config={"bad key": 1})) == \
        f"invalid config key of component 'words' 'bad key': {NAME_RULE}"


def test_unknown_kinds_are_named() -> None:
    odd = ComponentSpec(id="odd", kind="sprout", class_path="m:X")
    assert refusal(spout(), odd) == "component 'odd': unknown kind 'sprout'"


@pytest.mark.parametrize("settings, message", [
    ({"parallelism": 0}, "parallelism must be an integer >= 1, got 0"),
    ({"parallelism": True}, "parallelism must be an integer >= 1, got True"),
    ({"parallelism": 1.0}, "parallelism must be an integer >= 1, got 1.0"),
    ({"parallelism": -1}, "parallelism must be an integer >= 1, got -1"),
    ({"tasks": 0}, "tasks must be an integer >= 1, got 0"),
    ({"config": {"topology.tasks": 0}}, "topology.tasks must be an integer >= 1, got 0"),
    ({"config": {"topology.tasks": "2"}}, "topology.tasks must be an integer >= 1, got '2'"),
    ({"config": {"topology.max.task.parallelism": 0}},
     "topology.max.task.parallelism must be an integer >= 1, got 0"),
    ({"config": {"topology.max.task.parallelism": False}},
     "topology.max.task.parallelism must be an integer >= 1, got False"),
])
def test_parallelism_and_task_counts_are_named(settings: dict[str, Any], message: str) -> None:
    assert refusal(spout(), bolt(**settings)) == f"component 'sink': {message}"


def test_the_smallest_counts_pass() -> None:
    TopologySpec({"words": spout(parallelism=1, tasks=1,
                                 config={"topology.tasks": 1, "topology.max.task.parallelism": 1}),
                  "sink": bolt()}).validate()


def test_subscriptions_of_the_wrong_kind_are_named() -> None:
    assert refusal(spout(inputs=[InputSpec("words", "default", g.Grouping("shuffle"))])) == \
        "spout 'words' cannot subscribe to streams"
    lonely = ComponentSpec(id="lonely", kind="bolt", class_path="m:Sink")
    assert refusal(spout(), lonely) == "bolt 'lonely' subscribes to no stream"


@pytest.mark.parametrize("field, what, value", [
    ("kwargs", "constructor arguments", {"f": object()}),
    ("kwargs", "constructor arguments", {"big": 2 ** 70}),
    ("config", "config", {"k": {1, 2}}),
])
def test_arguments_msgpack_cannot_carry_are_named(field: str, what: str, value: Any) -> None:
    message = refusal(spout(), bolt(**{field: value}))
    assert message.startswith(f"component 'sink': {what} must be msgpack-serialisable "
                              "(plain data, no objects): ")
    assert len(message) > len(f"component 'sink': {what} must be msgpack-serialisable "
                              "(plain data, no objects): ")


def test_unknown_components_streams_and_fields_are_named() -> None:
    assert refusal(spout(), bolt(source="nope")) == "bolt 'sink' subscribes to unknown component 'nope'"
    assert refusal(spout(), bolt(stream="side")) == (
        "bolt 'sink' subscribes to unknown stream 'side' of component 'words' "
        "(declared streams: ['default', 'dir'])")
    message = refusal(spout(), bolt(source="__system"))
    assert message == (
        "bolt 'sink' subscribes to component '__system': stormpy has no such component to "
        "subscribe to (its tick tuples reach a bolt through topology.tick.tuple.freq.secs); for "
        "Storm's startup events subscribe to the '__system' stream of a spout or bolt, e.g. "
        "all_grouping('spout', stream='__system')")
    TopologySpec({"words": spout(), "sink": bolt(stream="__system",
                                                 grouping=g.Grouping("fields", ("event",)))}).validate()


@pytest.mark.parametrize("grouping, message", [
    (g.Grouping("sideways"), "bolt 'sink': unknown grouping 'sideways'"),
    (g.Grouping("fields"), "bolt 'sink': fields grouping on words/default names no fields"),
    (g.Grouping("partial_key"), "bolt 'sink': partial_key grouping on words/default names no fields"),
    (g.Grouping("fields", ("word", "wrd")),
     "bolt 'sink': fields grouping on words/default uses unknown field 'wrd' (fields: ['word', 'n'])"),
    (g.Grouping("partial_key", ("nn",)),
     "bolt 'sink': partial_key grouping on words/default uses unknown field 'nn' (fields: ['word', 'n'])"),
    (g.Grouping("custom"), "bolt 'sink': custom grouping without a class"),
    (g.Grouping("direct"), "bolt 'sink': direct_grouping on words/default, which is not declared direct"),
])
def test_groupings_that_do_not_fit_are_named(grouping: g.Grouping, message: str) -> None:
    assert refusal(spout(), bolt(grouping=grouping)) == message


@pytest.mark.parametrize("kind", ["shuffle", "all", "global", "none", "local_or_shuffle"])
def test_a_direct_stream_takes_only_direct_grouping(kind: str) -> None:
    assert refusal(spout(), bolt(stream="dir", grouping=g.Grouping(kind))) == (
        f"bolt 'sink': stream words/dir is direct; subscribe to it with direct_grouping, not {kind}")
    TopologySpec({"words": spout(), "sink": bolt(stream="dir", grouping=g.Grouping("direct"))}).validate()


def test_every_fitting_grouping_passes() -> None:
    for grouping in (g.Grouping("fields", ("n", "word")), g.Grouping("partial_key", ("word",)),
                     g.Grouping("custom", custom_class="m:G"), g.Grouping("all"), g.Grouping("global"),
                     g.Grouping("none"), g.Grouping("local_or_shuffle")):
        TopologySpec({"words": spout(), "sink": bolt(grouping=grouping)}).validate()


def test_the_first_problem_in_component_order_is_named() -> None:
    assert refusal(spout(), bolt(cid="a", source="nope"), bolt(cid="b", parallelism=0)) == \
        "component 'b': parallelism must be an integer >= 1, got 0"
    assert refusal(spout(), bolt(cid="a", source="one"), bolt(cid="b", source="two")) == \
        "bolt 'a' subscribes to unknown component 'one'"


def test_the_document_layout() -> None:
    comp = ComponentSpec(id="sink", kind="bolt", class_path="m:Sink", kwargs={"k": 1}, parallelism=2,
                         tasks=4, config={"c": True},
                         streams={"out": Stream(["a"], name="out", direct=True)},
                         inputs=[InputSpec("words", "default", g.Grouping("fields", ("word",))),
                                 InputSpec("words", "dir", g.Grouping("custom", custom_class="m:G",
                                                                      custom_kwargs={"n": 2}))])
    assert comp.to_doc() == {
        "kind": "bolt", "class": "m:Sink", "kwargs": {"k": 1}, "parallelism": 2, "tasks": 4,
        "config": {"c": True}, "streams": {"out": {"fields": ["a"], "direct": True}},
        "inputs": [{"component": "words", "stream": "default",
                    "grouping": {"type": "fields", "fields": ["word"]}},
                   {"component": "words", "stream": "dir",
                    "grouping": {"type": "custom", "class": "m:G", "kwargs": {"n": 2}}}]}
    spec = TopologySpec({"z": spout("z"), "sink": comp})
    doc = spec.to_doc()
    assert list(doc) == ["version", "components"] and doc["version"] == 1
    assert list(doc["components"]) == ["sink", "z"]
    back = ComponentSpec.from_doc("sink", comp.to_doc())
    assert back == comp
    assert back.streams["out"].name == "out" and back.streams["out"].direct is True


def test_a_minimal_component_document_takes_the_defaults() -> None:
    comp = ComponentSpec.from_doc("s", {"kind": "spout", "class": "m:S"})
    assert comp == ComponentSpec(id="s", kind="spout", class_path="m:S")
    assert (comp.kwargs, comp.parallelism, comp.tasks, comp.config, comp.streams, comp.inputs) == \
        ({}, 1, None, {}, {}, [])
    stream = ComponentSpec.from_doc("s", {"kind": "spout", "class": "m:S",
                                          "streams": {"x": {}}}).streams["x"]
    assert (stream.fields.to_list(), stream.name, stream.direct) == ([], "x", False)
    assert InputSpec.from_doc({"component": "a", "stream": "b", "grouping": {"type": "all"}}) == \
        InputSpec("a", "b", g.Grouping("all"))


def test_from_doc_decodes_and_checks() -> None:
    b = TopologyBuilder()
    b.set_spout("words", Words, 2, kwargs={"k": 1})
    b.set_bolt("sink", Sink, 3, tasks=6).fields_grouping("words", "word")
    built = b.create_topology()
    again = TopologySpec.from_doc(built.to_doc())
    assert again.to_doc() == built.to_doc()
    assert again.components["sink"] == built.components["sink"]
    assert (again.components["words"].tasks, again.components["words"].kwargs) == (2, {"k": 1})
    bad = built.to_doc()
    bad["components"]["sink"]["parallelism"] = 0
    with pytest.raises(InvalidTopologyError) as err:
        TopologySpec.from_doc(bad)
    assert str(err.value) == "component 'sink': parallelism must be an integer >= 1, got 0"


@pytest.mark.parametrize("doc, message", [
    (None, "topology spec must be a mapping with a 'components' mapping"),
    ([], "topology spec must be a mapping with a 'components' mapping"),
    ({"version": 1, "components": []}, "topology spec must be a mapping with a 'components' mapping"),
    ({"version": 2, "components": {}}, "unsupported topology spec version 2"),
    ({"components": {}}, "unsupported topology spec version None"),
])
def test_malformed_documents_are_named(doc: Any, message: str) -> None:
    with pytest.raises(InvalidTopologyError) as err:
        TopologySpec.from_doc(doc)
    assert str(err.value) == message


@pytest.mark.parametrize("cdoc, cause", [
    ({"class": "m:S"}, "'kind'"),
    ({"kind": "spout"}, "'class'"),
    ({"kind": "spout", "class": "m:S", "kwargs": 3}, "'int' object is not iterable"),
    ({"kind": "spout", "class": "m:S", "streams": {"x": 3}}, "'int' object has no attribute 'get'"),
    ({"kind": "spout", "class": "m:S", "streams": {"x": {"fields": [""]}}},
     "field names must be non-empty strings, got ''"),
])
def test_a_malformed_component_is_named(cdoc: dict[str, Any], cause: str) -> None:
    with pytest.raises(InvalidTopologyError) as err:
        TopologySpec.from_doc({"version": 1, "components": {"s": cdoc}})
    assert str(err.value) == f"component 's': malformed description ({cause})"


def test_subscribers_and_stream_fields() -> None:
    spec = TopologySpec({
        "words": spout(),
        "b2": bolt("b2", g.Grouping("all")),
        "b1": ComponentSpec(id="b1", kind="bolt", class_path="m:S",
                            inputs=[InputSpec("words", "dir", g.Grouping("direct")),
                                    InputSpec("words", "default", g.Grouping("fields", ("n",)))]),
        "b3": bolt("b3", stream="dir", grouping=g.Grouping("direct")),
    })
    assert spec.subscribers("words", "default") == [("b1", g.Grouping("fields", ("n",))),
                                                     ("b2", g.Grouping("all"))]
    assert spec.subscribers("words", "dir") == [("b1", g.Grouping("direct")), ("b3", g.Grouping("direct"))]
    assert spec.subscribers("b1", "default") == []
    assert spec.subscribers("words", "nope") == []
    assert spec.stream_fields("words", "default").to_list() == ["word", "n"]
    assert spec.stream_fields("words", "__system").to_list() == ["event"]
    with pytest.raises(KeyError) as err:
        spec.stream_fields("words", "nope")
    assert err.value.args == ("component 'words' has no stream 'nope'",)
    assert sorted(spec.spouts) == ["words"] and sorted(spec.bolts) == ["b1", "b2", "b3"]


def test_output_streams() -> None:
    comp = spout()
    assert comp.output_stream("default") is comp.streams["default"]
    system = comp.output_stream("__system")
    assert system is not None and system.name == "__system" and system.fields.to_list() == ["event"]
    assert comp.output_stream("nope") is None
    own = ComponentSpec(id="s", kind="spout", class_path="m:S",
                        streams={"__system": Stream(["mine"], name="__system")})
    assert own.output_stream("__system") is own.streams["__system"]


def local_path(cls_name: str = "f.<locals>.Local") -> str:
    return f"mod:{cls_name}@1f2e"


def custom(path: str) -> InputSpec:
    return InputSpec("a", "default", g.Grouping("custom", custom_class=path))


def test_local_classes_are_found_in_components_and_groupings() -> None:
    spec = TopologySpec({
        "b": ComponentSpec(id="b", kind="bolt", class_path=local_path(),
                           inputs=[custom(local_path("g.<locals>.G")), custom("mod:Fine"),
                                   InputSpec("a", "default", g.Grouping("shuffle"))]),
        "a": ComponentSpec(id="a", kind="spout", class_path="mod:Fine"),
        "c": ComponentSpec(id="c", kind="bolt", class_path="mod:Fine",
                           inputs=[custom(local_path("h.<locals>.H"))]),
    })
    assert spec.local_classes() == [("b", local_path()), ("b", local_path("g.<locals>.G")),
                                    ("c", local_path("h.<locals>.H"))]
    with pytest.raises(InvalidTopologyError) as err:
        spec.require_portable()
    assert str(err.value) == f"component 'b': class f.<locals>.Local {MOVE_TO_MODULE_LEVEL}"
    TopologySpec({"a": ComponentSpec(id="a", kind="spout", class_path="mod:Fine")}).require_portable()


@pytest.mark.parametrize("doc", [
    None, [], {"components": []}, {"components": {"s": 3}},
    {"components": {"s": {"class": "mod:Fine", "inputs": [3, {"grouping": 4}, {"grouping": {"class": 5}}]}}},
    {"components": {"s": {"class": None, "inputs": None}}},
])
def test_refuse_local_classes_leaves_malformed_parts_to_from_doc(doc: Any) -> None:
    refuse_local_classes(doc)


def test_refuse_local_classes_names_the_component_and_class() -> None:
    with pytest.raises(InvalidTopologyError) as err:
        refuse_local_classes({"components": {"ok": {"class": "mod:Fine"},
                                             "s": {"class": local_path()}}})
    assert str(err.value) == f"component 's': class f.<locals>.Local {MOVE_TO_MODULE_LEVEL}"
    with pytest.raises(InvalidTopologyError) as err:
        refuse_local_classes({"components": {"b": {"class": "mod:Fine", "inputs": [
            {"grouping": {"type": "shuffle"}},
            {"grouping": {"type": "custom", "class": local_path("g.<locals>.G")}}]}}})
    assert str(err.value) == f"component 'b': class g.<locals>.G {MOVE_TO_MODULE_LEVEL}"


def test_refuse_local_classes_looks_past_malformed_components() -> None:
    with pytest.raises(InvalidTopologyError) as err:
        refuse_local_classes({"components": {"a": 3, "b": None, "s": {"class": local_path()}}})
    assert str(err.value) == f"component 's': class f.<locals>.Local {MOVE_TO_MODULE_LEVEL}"
