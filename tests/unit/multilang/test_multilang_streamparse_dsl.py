"""streamparse's topology DSL read into a stormpy topology, case by case: each grouping, a spec's
name, parallelism and config, inputs as a list or a map, ``spec["stream"]``, and every refusal
with its whole message (the component named). No cluster, no subprocess."""

from __future__ import annotations

from typing import Any

import pystorm
import pytest

from stormpy.multilang import pystorm_component
from stormpy.multilang._pystorm_adapter import PystormBolt
from stormpy.multilang._shell_bolt import ShellBolt
from stormpy.multilang.streamparse import (
    BatchingBolt,
    Bolt,
    ComponentSpec,
    Grouping,
    ReliableSpout,
    Spout,
    Stream,
    TicklessBatchingBolt,
    Topology,
    spec,
)


class Words(Spout):
    outputs = [Stream(["word"]), Stream(["word"], name="picked", direct=True)]


class TwoStreams(Spout):
    outputs = [Stream(["word"]), Stream(["word", "n"], name="counted")]


class Sink(Bolt):
    outputs: list[str] = []


class Batched(BatchingBolt):
    outputs = ["n"]


class Tickless(TicklessBatchingBolt):
    outputs = ["n"]
    secs_between_batches = 2


class Reliable(ReliableSpout):
    outputs = ["n"]


def groupings(topology: type[Topology]) -> dict[str, list[tuple[str, str, dict[str, Any]]]]:
    spec_ = topology.to_topology()
    return {cid: [(i.component, i.stream, i.grouping.to_doc()) for i in c.inputs]
            for cid, c in spec_.components.items()}


def test_the_classes_are_pystorms_with_a_spec_classmethod() -> None:
    for cls, base in ((Bolt, pystorm.Bolt), (BatchingBolt, pystorm.BatchingBolt),
                      (TicklessBatchingBolt, pystorm.TicklessBatchingBolt), (Spout, pystorm.Spout),
                      (ReliableSpout, pystorm.ReliableSpout)):
        assert issubclass(cls, base)
    s = Reliable.spec()
    assert isinstance(s, ComponentSpec)
    assert (s.cls, s.name, s.inputs, s.par, s.config, s.spout) == (Reliable, None, None, 1, {}, True)
    b = Batched.spec(name="b", inputs=[s], par=3, config={"k": 1})
    assert (b.cls, b.name, b.inputs, b.par, b.config, b.spout) == (Batched, "b", [s], 3, {"k": 1}, False)
    assert repr(b) == "<Batched.spec b>" and repr(s) == "<Reliable.spec (unnamed)>"
    f = spec(Tickless, "t", [s], 2, {"x": "y"})
    assert (f.cls, f.name, f.inputs, f.par, f.config) == (Tickless, "t", [s], 2, {"x": "y"})
    assert spec(Sink).par == 1 and spec(Sink).name is None and spec(Sink).config == {}
    config = {"k": 1}
    kept = Sink.spec(inputs=[s], config=config)
    config["k"] = 2
    assert kept.config == {"k": 1}


def test_each_grouping_and_stream_maps_to_the_builders() -> None:
    class T(Topology):
        words = Words.spec()
        a = Sink.spec(inputs=[words])
        b = Sink.spec(inputs={words: Grouping.SHUFFLE})
        c = Sink.spec(inputs={words: Grouping.GLOBAL})
        d = Sink.spec(inputs={words: Grouping.fields("word")})
        e = Sink.spec(inputs={words["picked"]: Grouping.DIRECT, words: Grouping.ALL})
        f = Sink.spec(inputs=(words,))
        g = Sink.spec(inputs={words: Grouping.NONE, words["default"]: Grouping.LOCAL_OR_SHUFFLE})

    assert groupings(T) == {
        "words": [],
        "a": [("words", "default", {"type": "shuffle"})],
        "b": [("words", "default", {"type": "shuffle"})],
        "c": [("words", "default", {"type": "global"})],
        "d": [("words", "default", {"type": "fields", "fields": ["word"]})],
        "e": [("words", "picked", {"type": "direct"}), ("words", "default", {"type": "all"})],
        "f": [("words", "default", {"type": "shuffle"})],
        "g": [("words", "default", {"type": "none"}), ("words", "default", {"type": "local_or_shuffle"})],
    }
    assert [s.name for s in T.specs] == ["words", "a", "b", "c", "d", "e", "f", "g"]


def test_a_fields_grouping_subscribes_to_the_stream_named() -> None:
    class T(Topology):
        words = TwoStreams.spec()
        by_word = Sink.spec(inputs={words["counted"]: Grouping.fields("word", "n")})
        plain = Sink.spec(inputs={words["counted"]: Grouping.SHUFFLE, words: Grouping.fields("word")})

    assert groupings(T)["by_word"] == [("words", "counted", {"type": "fields", "fields": ["word", "n"]})]
    assert groupings(T)["plain"] == [("words", "counted", {"type": "shuffle"}),
                                     ("words", "default", {"type": "fields", "fields": ["word"]})]


def test_grouping_fields_takes_names_one_by_one_or_as_one_list() -> None:
    assert Grouping.fields("a", "b").fields == ("a", "b")
    assert Grouping.fields(["a", "b"]).fields == ("a", "b")
    assert Grouping.fields(("a",)) == Grouping.fields("a")
    assert Grouping.fields("a").kind == "fields"
    for bad in ((), ("",), ("a", 1), ([],), (["a", ""],)):
        with pytest.raises(ValueError) as err:
            Grouping.fields(*bad)
        names = tuple(bad[0]) if len(bad) == 1 and isinstance(bad[0], list | tuple) else bad
        assert str(err.value) == f"Grouping.fields needs field names, got {names!r}"
    assert [g.kind for g in (Grouping.SHUFFLE, Grouping.GLOBAL, Grouping.NONE, Grouping.ALL,
                             Grouping.LOCAL_OR_SHUFFLE, Grouping.DIRECT)] == [
        "shuffle", "global", "none", "all", "local_or_shuffle", "direct"]


def test_components_get_their_name_par_config_and_how_they_run() -> None:
    class T(Topology):
        config = {"topology.workers": 2}
        words = Words.spec(name="source", par=2, config={"topology.max.spout.pending": 5})
        sink = Sink.spec(inputs=[words], par=4, config={"topology.tick.tuple.freq.secs": 2})
        last = Sink.spec(inputs=[words], par=1)

    assert T.config == {"topology.workers": 2}
    builder = T.to_builder()
    topo = builder.create_topology()
    assert topo == T.to_topology()
    assert set(topo.components) == {"source", "sink", "last"}
    assert [topo.components[c].parallelism for c in ("source", "sink", "last")] == [2, 4, 1]
    assert topo.components["source"].config["topology.max.spout.pending"] == 5
    assert topo.components["sink"].config["topology.tick.tuple.freq.secs"] == 2
    assert [(i.component, i.stream) for i in topo.components["last"].inputs] == [("source", "default")]
    expected = pystorm_component(Sink)
    assert topo.components["sink"].class_path.endswith(":PystormBolt")
    assert topo.components["sink"].kwargs == expected.component_kwargs
    shell = T.to_topology(shell=True, serializer="msgpack")
    assert shell.components["sink"].class_path.endswith(":ShellBolt")
    assert shell.components["sink"].kwargs == pystorm_component(
        Sink, shell=True, serializer="msgpack").component_kwargs
    assert shell.components["sink"].config["topology.multilang.serializer"] == "msgpack"
    plain_shell = T.to_topology(shell=True)
    assert "topology.multilang.serializer" not in plain_shell.components["sink"].config
    assert ShellBolt is not PystormBolt


def test_bad_specs_are_refused_with_the_whole_message() -> None:
    with pytest.raises(ValueError) as spout_inputs:
        Words.spec(inputs=[Words.spec()])
    assert str(spout_inputs.value) == "Words.spec: a spout takes no inputs"
    assert Words.spec(inputs=[]).inputs == []  # no inputs given as an empty list is fine
    for par in (0, -1, True, 1.5, "2"):
        with pytest.raises(ValueError) as bad_par:
            Sink.spec(par=par)  # type: ignore[arg-type]
        assert str(bad_par.value) == f"Sink.spec: par must be an integer >= 1, got {par!r}"
    with pytest.raises(ValueError) as bad_config:
        Sink.spec(config=[("k", 1)])  # type: ignore[arg-type]
    assert str(bad_config.value) == "Sink.spec: config must be a map, got [('k', 1)]"
    for cls in (dict, pystorm.Component, 3):
        with pytest.raises(ValueError) as not_pystorm:
            spec(cls)  # type: ignore[arg-type]
        assert str(not_pystorm.value) == f"{cls!r} is not a pystorm Bolt or Spout subclass"


def test_bad_inputs_are_refused_naming_the_component() -> None:
    def refused(inputs: Any) -> str:
        with pytest.raises(ValueError) as err:
            type("T", (Topology,), {"words": words, "bad": Sink.spec(inputs=inputs)}).to_topology()
        return str(err.value)

    words = Words.spec()
    assert refused("words") == ("component 'bad': inputs must be a list of specs or a map of spec "
                                "(or spec['stream']) to Grouping, got 'words'")
    assert refused(None) == ("component 'bad': inputs must be a list of specs or a map of spec "
                             "(or spec['stream']) to Grouping, got None")
    assert refused([]) == "component 'bad': a bolt needs inputs"
    assert refused({}) == "component 'bad': a bolt needs inputs"
    assert refused(["words"]) == "component 'bad': input 'words' is not a component spec"
    assert refused({words: "shuffle"}) == (
        "component 'bad': grouping 'shuffle' of input <Words.spec words> is not one of Grouping's "
        "(Java custom groupings are not supported)")
    from stormpy.multilang.streamparse import StreamGrouping
    custom = StreamGrouping("partial_key")
    assert refused({words["picked"]: custom}) == (
        f"component 'bad': grouping {custom!r} of input {words['picked']!r} is not one of "
        "Grouping's (Java custom groupings are not supported)")


def test_topologies_refuse_clashing_empty_and_stray_components() -> None:
    with pytest.raises(ValueError) as empty:
        type("Empty", (Topology,), {"config": {}})
    assert str(empty.value) == ("topology Empty has no components (attributes set to "
                                "Component.spec(...))")
    with pytest.raises(ValueError) as twice:
        type("Twice", (Topology,), {"x": Words.spec(), "y": Words.spec(name="x")})
    assert str(twice.value) == "topology Twice: two components named 'x'"
    outside = Words.spec(name="outside")
    stray = type("Stray", (Topology,), {"w": Words.spec(), "s": Sink.spec(inputs=[outside])})
    with pytest.raises(ValueError) as err:
        stray.to_builder()
    assert str(err.value) == ("component 's': input <Words.spec outside> is not a component of "
                              "topology Stray")
