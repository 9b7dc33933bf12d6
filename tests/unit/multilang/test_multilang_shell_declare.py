"""How a shell component declares its output streams and its own settings, in every form the
docs name (fields, ``{stream: fields}``, stream maps with ``fields``/``name``/``direct``, stream
objects such as streamparse's), and the arguments it keeps for the cluster."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from stormpy import TopologyBuilder
from stormpy.multilang import ShellBolt, ShellSpout
from stormpy.multilang.streamparse import Stream as StreamparseStream


def streams(outputs: Any) -> dict[str, tuple[list[str], bool]]:
    """The streams a shell bolt declaring ``outputs`` gets: name → (fields, direct). (Stream
    objects reach it from pystorm classes; a topology carries plain data.)"""
    declared = ShellBolt.declare_outputs({"outputs": outputs})
    return {name: (s.fields.to_list(), s.direct) for name, s in declared.items()}


def test_a_topology_carries_the_declared_streams() -> None:
    b = TopologyBuilder()
    b.set_spout("words", ShellSpout("x").declare(["w"]))
    b.set_bolt("shell", ShellBolt("x").declare({"s": {"fields": ["a"], "direct": True}})
               ).shuffle_grouping("words")
    spec = b.create_topology()
    declared = spec.components["shell"].streams
    assert list(declared) == ["s"] and declared["s"].direct and declared["s"].fields.to_list() == ["a"]


@pytest.mark.parametrize(("outputs", "declared"), [
    (["a", "b"], {"default": (["a", "b"], False)}),
    ({"default": ["a"], "other": ["b"]}, {"default": (["a"], False), "other": (["b"], False)}),
    ([{"fields": ["a"], "name": "s1", "direct": True}, {"fields": ["b"]}],
     {"s1": (["a"], True), "default": (["b"], False)}),
    ({"s2": {"fields": ["x"], "name": "not this"}, "s3": {"fields": ["y"], "direct": 1}},
     {"s2": (["x"], False), "s3": (["y"], True)}),
    ([SimpleNamespace(fields=("a",), name="obj", direct=True), SimpleNamespace(fields=["b"])],
     {"obj": (["a"], True), "default": (["b"], False)}),
    ({"key": SimpleNamespace(fields=["a"], name=None)}, {"key": (["a"], False)}),
    ({"key": SimpleNamespace(fields=["a"], name="own")}, {"own": (["a"], False)}),
    ([StreamparseStream(["w"], name="words", direct=True)], {"words": (["w"], True)}),
])
def test_every_documented_form_of_outputs_declares_its_streams(
        outputs: Any, declared: dict[str, tuple[list[str], bool]]) -> None:
    assert streams(outputs) == declared


@pytest.mark.parametrize("outputs", [5, "word", None])
def test_outputs_of_no_known_form_are_refused_naming_the_class(outputs: Any) -> None:
    with pytest.raises(ValueError, match=r"ShellBolt(: outputs must be a list of fields or "
                                         r"streams, or a map of stream to fields, got|"
                                         r" declares no outputs)"):
        ShellBolt("x").declare(outputs)


def test_a_shell_component_keeps_only_the_arguments_it_was_given() -> None:
    assert ShellBolt("a", "b").component_kwargs == {"command": ["a", "b"]}
    spout = ShellSpout(command=["node", "s.js"], cwd="res", env={"K": "v"}, serializer="msgpack")
    assert spout.declare(["w"]).component_kwargs == {
        "command": ["node", "s.js"], "cwd": "res", "env": {"K": "v"}, "outputs": ["w"],
        "serializer": "msgpack"}
    assert ShellBolt("a", env={}).component_kwargs == {"command": ["a"]}  # no variables: none


@pytest.mark.parametrize(("kwargs", "error", "text"), [
    ({"cwd": 5}, TypeError, "cwd must be a path string, got 5"),
    ({"env": ["K=v"]}, TypeError, r"env must map strings to strings, got \['K=v'\]"),
    ({"env": {1: "v"}}, TypeError, "env must map strings to strings"),
    ({"command": ["a", 5]}, ValueError, r"a shell component needs a command: non-empty strings, "
                                        r"got \['a', 5\]"),
])
def test_bad_arguments_are_refused_naming_them(kwargs: dict[str, Any], error: type, text: str) -> None:
    with pytest.raises(error, match=text):
        ShellBolt(**{"command": ["x"], **kwargs})


def test_the_serializer_argument_is_the_components_own_setting() -> None:
    b = TopologyBuilder()
    b.set_spout("plain", ShellSpout("node", "s.js").declare(["w"]))
    b.set_bolt("packed", ShellBolt("x", serializer="msgpack").declare(["w"])).shuffle_grouping("plain")
    spec = b.create_topology()
    assert "topology.multilang.serializer" not in spec.components["plain"].config
    assert spec.components["packed"].config["topology.multilang.serializer"] == "msgpack"


def test_a_shell_subclass_keeps_its_class_config_beside_the_serializer_argument() -> None:
    class Ticking(ShellBolt):
        command = ("python3", "tick.py")
        outputs = ["w"]
        component_config = {"topology.tick.tuple.freq.secs": 5}

    b = TopologyBuilder()
    b.set_spout("plain", ShellSpout("node", "s.js").declare(["w"]))
    b.set_bolt("ticking", Ticking(serializer="msgpack")).shuffle_grouping("plain")
    config = b.create_topology().components["ticking"].config
    assert config["topology.tick.tuple.freq.secs"] == 5
    assert config["topology.multilang.serializer"] == "msgpack"


@pytest.mark.parametrize("entry", [5, None, {"no": "fields"}])
def test_an_outputs_entry_of_no_known_form_is_refused_naming_it(entry: Any) -> None:
    with pytest.raises(ValueError, match=r"^ShellBolt: outputs entries must be field names or "
                                         r"Stream objects, got "):
        ShellBolt("x").declare(["word", entry])


def test_the_refusals_of_a_shell_component_say_what_to_do() -> None:
    with pytest.raises(ValueError) as refused:
        ShellBolt("x").declare(None)
    assert str(refused.value) == (
        "ShellBolt declares no outputs: pass them with ShellBolt(...).declare(['field', ...]) "
        "(or a {stream: fields} map; {} for none)")
    with pytest.raises(TypeError) as refused:
        ShellBolt("a", command=["b"])
    assert str(refused.value) == ("give the command either as arguments or as command=[...], "
                                  "not both")


def test_outputs_given_to_the_constructor_are_declared() -> None:
    bolt = ShellBolt("x", outputs={"s": ["w"]})
    assert bolt.component_kwargs == {"command": ["x"], "outputs": {"s": ["w"]}}
    assert list(ShellBolt.declare_outputs(bolt.component_kwargs)) == ["s"]
