"""The builder: every grouping declared exactly as asked, every declarer setting landing in the
spec, components resolved from classes or handles, and bad declarations refused naming the
component and what is wrong (the exact messages a user reads)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import Bolt, CustomStreamGrouping, InvalidTopologyError, Spout, Stream, TopologyBuilder
from stormpy.topology import BoltDeclarer, ComponentDeclarer, TopologySpec
from stormpy.topology import _grouping as g
from stormpy.topology._builder import resolve_component
from stormpy.topology._spec import ComponentSpec, InputSpec


class Words(Spout):
    outputs = [Stream(["word", "n"]), Stream(["x"], name="side")]


class Sink(Bolt):
    component_config = {"topology.tick.tuple.freq.secs": 9, "a.key": "class"}

    def execute(self, tup: Any) -> None:
        self.ack(tup)


class ByArgs(Bolt):
    """Streams and config that depend on the constructor arguments."""

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        return {"default": Stream(kwargs["fields"])}

    @classmethod
    def declare_config(cls, kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
        return {"topology.tick.tuple.freq.secs": kwargs["tick"]}

    def execute(self, tup: Any) -> None:
        self.ack(tup)


class TwiceDeclared(Spout):
    outputs = [Stream(["a"], name="s"), Stream(["b"], name="s")]


class Modulo(CustomStreamGrouping):
    def choose_tasks(self, task_id: int, values: Any) -> list[int]:
        return [self.target_tasks[0]]


class Handle:
    """What the testing kit passes: a class and its arguments."""

    component_class = Sink
    component_kwargs = {"a": 1, "b": 2}


finished: list[tuple[str, list[str]]] = []


class Finishing(Sink):
    @classmethod
    def finish_topology(cls, spec: TopologySpec, component_id: str) -> None:
        finished.append((component_id, sorted(spec.components)))
        spec.components[component_id].config["finished.by"] = component_id


def topology(declare: Any) -> TopologySpec:
    b = TopologyBuilder()
    b.set_spout("words", Words)
    declare(b.set_bolt("sink", Sink))
    return b.create_topology()


@pytest.mark.parametrize("declare, expected", [
    (lambda d: d.shuffle_grouping("words"), InputSpec("words", "default", g.Grouping("shuffle"))),
    (lambda d: d.shuffle_grouping("words", "side"), InputSpec("words", "side", g.Grouping("shuffle"))),
    (lambda d: d.fields_grouping("words", "word"),
     InputSpec("words", "default", g.Grouping("fields", ("word",)))),
    (lambda d: d.fields_grouping("words", ["n", "word"]),
     InputSpec("words", "default", g.Grouping("fields", ("n", "word")))),
    (lambda d: d.fields_grouping("words", ["x"], "side"),
     InputSpec("words", "side", g.Grouping("fields", ("x",)))),
    (lambda d: d.partial_key_grouping("words", "word"),
     InputSpec("words", "default", g.Grouping("partial_key", ("word",)))),
    (lambda d: d.partial_key_grouping("words", ("n",)),
     InputSpec("words", "default", g.Grouping("partial_key", ("n",)))),
    (lambda d: d.partial_key_grouping("words", ["x"], "side"),
     InputSpec("words", "side", g.Grouping("partial_key", ("x",)))),
    (lambda d: d.all_grouping("words"), InputSpec("words", "default", g.Grouping("all"))),
    (lambda d: d.all_grouping("words", "side"), InputSpec("words", "side", g.Grouping("all"))),
    (lambda d: d.global_grouping("words"), InputSpec("words", "default", g.Grouping("global"))),
    (lambda d: d.global_grouping("words", "side"), InputSpec("words", "side", g.Grouping("global"))),
    (lambda d: d.none_grouping("words"), InputSpec("words", "default", g.Grouping("none"))),
    (lambda d: d.none_grouping("words", "side"), InputSpec("words", "side", g.Grouping("none"))),
    (lambda d: d.local_or_shuffle_grouping("words"),
     InputSpec("words", "default", g.Grouping("local_or_shuffle"))),
    (lambda d: d.local_or_shuffle_grouping("words", "side"),
     InputSpec("words", "side", g.Grouping("local_or_shuffle"))),
    (lambda d: d.custom_grouping("words", Modulo),
     InputSpec("words", "default", g.Grouping("custom", custom_class=f"{__name__}:Modulo"))),
    (lambda d: d.custom_grouping("words", "pkg.mod:Choose", "side", kwargs={"k": 3}),
     InputSpec("words", "side", g.Grouping("custom", custom_class="pkg.mod:Choose",
                                           custom_kwargs={"k": 3}))),
])
def test_each_grouping_is_declared_exactly_as_asked(declare: Any, expected: InputSpec) -> None:
    spec = topology(declare)
    assert spec.components["sink"].inputs == [expected]
    assert spec.components["sink"].inputs[0].grouping.custom_kwargs == expected.grouping.custom_kwargs


def test_a_direct_grouping_is_declared_on_the_stream_asked() -> None:
    class Direct(Spout):
        outputs = [Stream(["v"], name="d", direct=True)]

    b = TopologyBuilder()
    b.set_spout("src", Direct)
    b.set_bolt("sink", Sink).direct_grouping("src", "d")
    assert b.create_topology().components["sink"].inputs == [InputSpec("src", "d", g.Grouping("direct"))]
    b = TopologyBuilder()
    b.set_spout("src", Words)
    b.set_bolt("sink", Sink).direct_grouping("src")
    with pytest.raises(InvalidTopologyError) as err:
        b.create_topology()
    assert str(err.value) == "bolt 'sink': direct_grouping on src/default, which is not declared direct"


def test_subscriptions_chain_in_the_order_declared() -> None:
    spec = topology(lambda d: d.shuffle_grouping("words").all_grouping("words", "side"))
    assert spec.components["sink"].inputs == [
        InputSpec("words", "default", g.Grouping("shuffle")),
        InputSpec("words", "side", g.Grouping("all"))]


def test_a_spout_declarer_cannot_subscribe() -> None:
    spout = ComponentSpec(id="s", kind="spout", class_path="m:S")
    with pytest.raises(InvalidTopologyError) as err:
        BoltDeclarer(spout).shuffle_grouping("words")
    assert str(err.value) == "spout 's' cannot subscribe to streams"
    assert spout.inputs == []


def test_declarer_settings() -> None:
    b = TopologyBuilder()
    spout = b.set_spout("words", Words)
    assert isinstance(spout, ComponentDeclarer) and spout.id == "words"
    assert spout.set_num_tasks(3) is spout
    assert spout.set_max_task_parallelism(2) is spout
    assert spout.add_configuration("k", 1) is spout
    assert spout.add_configurations({"k2": 2}) is spout
    assert spout.set_max_spout_pending(5) is spout
    assert spout.set_debug(False) is spout
    comp = b.create_topology().components["words"]
    assert comp.tasks == 3
    assert comp.config == {"topology.tasks": 3, "topology.max.task.parallelism": 2, "k": 1,
                           "k2": 2, "topology.max.spout.pending": 5, "topology.debug": False}
    # None takes the cap away again (the topology's cap applies), and twice is harmless
    spout.set_max_task_parallelism(None).set_max_task_parallelism(None)
    assert "topology.max.task.parallelism" not in b.create_topology().components["words"].config
    spout.set_max_spout_pending(None)
    assert b.create_topology().components["words"].config["topology.max.spout.pending"] is None


def test_the_builder_config_wins_over_the_class_config() -> None:
    b = TopologyBuilder()
    b.set_spout("words", Words, 2, tasks=4, kwargs={"k": [1, 2]}, config={"s.key": True})
    b.set_bolt("sink", Sink, 3, config={"a.key": "builder"}).shuffle_grouping("words")
    b.set_bolt("args", ByArgs, kwargs={"fields": ["f"], "tick": 4}).shuffle_grouping("words")
    spec = b.create_topology()
    words, sink, args = (spec.components[c] for c in ("words", "sink", "args"))
    assert (words.kind, words.class_path, words.kwargs, words.parallelism, words.tasks) == \
        ("spout", f"{__name__}:Words", {"k": [1, 2]}, 2, 4)
    assert words.config == {"s.key": True}
    assert words.streams == {"default": Stream(["word", "n"]), "side": Stream(["x"], name="side")}
    assert (sink.kind, sink.parallelism, sink.tasks) == ("bolt", 3, None)
    assert sink.config == {"topology.tick.tuple.freq.secs": 9, "a.key": "builder"}
    assert args.config == {"topology.tick.tuple.freq.secs": 4}
    assert args.streams == {"default": Stream(["f"])}
    assert args.kwargs == {"fields": ["f"], "tick": 4}


def test_the_builder_keeps_its_own_copy_and_components_finish_the_topology() -> None:
    finished.clear()
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("fin", Finishing).shuffle_grouping("words")
    spec = b.create_topology()
    assert finished == [("fin", ["fin", "words"])]
    assert spec.components["fin"].config["finished.by"] == "fin"
    spec.components["words"].config["changed"] = 1
    spec.components["fin"].inputs.clear()
    again = b.create_topology()
    assert "changed" not in again.components["words"].config
    assert len(again.components["fin"].inputs) == 1


def test_finishing_happens_before_validation() -> None:
    class AddsSpout(Sink):
        @classmethod
        def finish_topology(cls, spec: TopologySpec, component_id: str) -> None:
            spec.components["added"] = ComponentSpec(id="added", kind="spout",
                                                     class_path=f"{__name__}:Words",
                                                     streams={"default": Stream(["v"])})
            spec.components[component_id].inputs.append(
                InputSpec("added", "default", g.Grouping("shuffle")))

    b = TopologyBuilder()
    b.set_bolt("b", AddsSpout)
    assert sorted(b.create_topology().components) == ["added", "b"]


@pytest.mark.parametrize("cid", ["", 7, None])
def test_a_component_id_must_be_a_non_empty_string(cid: Any) -> None:
    with pytest.raises(InvalidTopologyError) as err:
        TopologyBuilder().set_spout(cid, Words)
    assert str(err.value) == f"component id must be a non-empty string, got {cid!r}"


def test_duplicate_ids_are_refused_and_the_first_kept() -> None:
    b = TopologyBuilder()
    b.set_spout("words", Words, 2)
    with pytest.raises(InvalidTopologyError) as err:
        b.set_bolt("words", Sink)
    assert str(err.value) == "duplicate component id 'words'"
    assert b.create_topology().components["words"].parallelism == 2


def test_bad_output_declarations_name_the_component() -> None:
    with pytest.raises(InvalidTopologyError) as err:
        TopologyBuilder().set_spout("s", TwiceDeclared)
    assert str(err.value) == "component 's': TwiceDeclared: stream 's' declared twice"


def test_a_bolt_without_entry_point_names_the_component() -> None:
    class Empty(Bolt):
        pass

    b = TopologyBuilder()
    with pytest.raises(InvalidTopologyError) as err:
        b.set_bolt("e", Empty)
    assert str(err.value) == (
        "component 'e': test_a_bolt_without_entry_point_names_the_component.<locals>.Empty defines "
        "no execute(tuple): as a Bolt it would do nothing with its input")
    b.set_spout("e", Words)  # nothing of the refused bolt was kept
    assert list(b.create_topology().components) == ["e"]


def test_resolve_from_a_class_or_a_handle() -> None:
    assert resolve_component(Sink, None, "c") == (Sink, {})
    assert resolve_component(Sink, {"x": 1}, "c") == (Sink, {"x": 1})
    assert resolve_component(Handle(), None, "c") == (Sink, {"a": 1, "b": 2})
    assert resolve_component(Handle(), {"b": 3, "c": 4}, "c") == (Sink, {"a": 1, "b": 3, "c": 4})
    kwargs = {"x": 1}
    _, kw = resolve_component(Sink, kwargs, "c")
    kw["y"] = 2
    assert kwargs == {"x": 1}
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("h", Handle(), kwargs={"b": 5}).shuffle_grouping("words")
    comp = b.create_topology().components["h"]
    assert (comp.class_path, comp.kwargs) == (f"{__name__}:Sink", {"a": 1, "b": 5})


def test_resolve_refusals_name_what_and_the_id() -> None:
    with pytest.raises(InvalidTopologyError) as err:
        resolve_component(Sink(), None, "c", what="bolt", base=Bolt)
    assert str(err.value).startswith(
        "bolt 'c': pass the Bolt class and its constructor arguments as kwargs={...}, not an "
        "instance (<")
    with pytest.raises(InvalidTopologyError) as err:
        resolve_component(3, None, "c")
    assert str(err.value) == ("component 'c': pass the class and its constructor arguments as "
                              "kwargs={...}, not an instance (3)")
    with pytest.raises(InvalidTopologyError) as err:
        resolve_component(Sink, None, "c", what="spout", base=Spout)
    assert str(err.value) == f"spout 'c': {Sink!r} is not a Spout subclass"

    class Handled:
        component_class = "not a class"
        component_kwargs: dict[str, Any] = {}

    with pytest.raises(InvalidTopologyError) as err:
        resolve_component(Handled(), None, "c", base=Bolt)
    assert str(err.value) == "component 'c': 'not a class' is not a Bolt subclass"
    assert resolve_component(Handled(), None, "c") == ("not a class", {})


def test_resolve_at_module_level_only_when_asked() -> None:
    class Local(Sink):
        pass

    assert resolve_component(Local, None, "c") == (Local, {})
    assert resolve_component(Local, None, "c", module_level=False) == (Local, {})
    assert resolve_component(Sink, None, "c", module_level=True) == (Sink, {})
    with pytest.raises(InvalidTopologyError) as err:
        resolve_component(Local, None, "c", what="bolt", module_level=True)
    assert str(err.value) == (
        "bolt 'c': test_resolve_at_module_level_only_when_asked.<locals>.Local is defined inside a "
        "function; workers import component classes by path, so define it at module level")


def test_a_bolt_must_be_given_as_a_bolt_class() -> None:
    b = TopologyBuilder()
    with pytest.raises(InvalidTopologyError) as err:
        b.set_bolt("b", Words)
    assert str(err.value) == f"component 'b': {Words!r} is not a Bolt subclass"
    with pytest.raises(InvalidTopologyError) as err:
        b.set_bolt("b", Sink())
    assert str(err.value).startswith(
        "component 'b': pass the Bolt class and its constructor arguments as kwargs={...}, not an "
        "instance (<")
    with pytest.raises(InvalidTopologyError) as err:
        b.set_spout("s", Words())
    assert str(err.value).startswith("component 's': pass the Spout class")
