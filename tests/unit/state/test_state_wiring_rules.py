"""Wiring checkpoints into a topology: who subscribes to whose checkpoint stream (one
subscription per upstream component, the checkpoint spout standing for every spout), the
checkpoint spout itself, wiring twice, and topologies that already use the reserved stream."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy.state import CHECKPOINT_COMPONENT, CHECKPOINT_STREAM, KeyValueState, StatefulBolt
from stormpy.state._bolt import WRAPPED, CheckpointTupleForwarder, StatefulBoltExecutor
from stormpy.state._checkpoint import CheckpointSpout
from stormpy.state._wiring import add_checkpointing
from stormpy.testing import FeederSpout
from stormpy.topology import BasicBolt, InvalidTopologyError, TopologyBuilder, Tuple
from stormpy.topology._grouping import ALL, SHUFFLE, Grouping
from stormpy.topology._imports import class_path
from stormpy.topology._spec import BOLT, SPOUT, ComponentSpec, InputSpec, TopologySpec
from stormpy.topology._streams import Stream


class Pass(BasicBolt):
    outputs = [Stream(["v"]), Stream(["v"], name="other")]

    def process(self, tup: Tuple) -> None:
        self.emit(tup.values)


class Store(StatefulBolt):
    outputs = ["v"]

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


def topology() -> TopologySpec:
    b = TopologyBuilder()
    b.set_spout("s1", FeederSpout(["v"]))
    b.set_spout("s2", FeederSpout(["v"]))
    b.set_bolt("pass", Pass, 2).shuffle_grouping("s1").shuffle_grouping("s2")
    b.set_bolt("store", Store, 3).shuffle_grouping("pass").shuffle_grouping("pass", "other") \
        .shuffle_grouping("s1")
    return b.create_topology()


def subscriptions(comp: ComponentSpec) -> list[tuple[str, str, str]]:
    return [(i.component, i.stream, i.grouping.type) for i in comp.inputs]


def test_every_bolt_subscribes_once_to_each_upstream_checkpoint_stream() -> None:
    spec = topology()
    passing, store = spec.components["pass"], spec.components["store"]
    assert subscriptions(passing) == [
        ("s1", "default", SHUFFLE), ("s2", "default", SHUFFLE),
        (CHECKPOINT_COMPONENT, CHECKPOINT_STREAM, ALL)]
    assert subscriptions(store) == [
        ("pass", "default", SHUFFLE), ("pass", "other", SHUFFLE), ("s1", "default", SHUFFLE),
        ("pass", CHECKPOINT_STREAM, ALL), (CHECKPOINT_COMPONENT, CHECKPOINT_STREAM, ALL)]
    assert (passing.class_path, store.class_path) == (class_path(CheckpointTupleForwarder),
                                                       class_path(StatefulBoltExecutor))
    assert passing.kwargs == {WRAPPED: class_path(Pass)}
    assert sorted(passing.streams) == [CHECKPOINT_STREAM, "default", "other"]
    assert list(store.streams[CHECKPOINT_STREAM].fields) == ["txid", "action"]
    assert store.streams[CHECKPOINT_STREAM].name == CHECKPOINT_STREAM
    assert (store.parallelism, passing.parallelism) == (3, 2)  # unchanged
    spout = spec.components[CHECKPOINT_COMPONENT]
    assert (spout.id, spout.kind, spout.class_path, spout.parallelism, spout.tasks, spout.kwargs,
            spout.config) == (CHECKPOINT_COMPONENT, SPOUT, class_path(CheckpointSpout), 1, 1, {}, {})
    assert list(spout.streams) == [CHECKPOINT_STREAM]
    assert spec.components["s1"].class_path not in (passing.class_path, store.class_path)
    assert spec.components["s1"].inputs == []  # spouts are not wrapped and subscribe to nothing


def test_wiring_twice_changes_nothing() -> None:
    spec = topology()
    before = {cid: (c.class_path, dict(c.kwargs), subscriptions(c))
              for cid, c in spec.components.items()}
    add_checkpointing(spec)
    assert {cid: (c.class_path, dict(c.kwargs), subscriptions(c))
            for cid, c in spec.components.items()} == before


def bare(bolt_inputs: list[InputSpec], streams: dict[str, Any] | None = None) -> TopologySpec:
    return TopologySpec({
        "src": ComponentSpec("src", SPOUT, class_path(FeederSpout), streams=streams or {}),
        "b": ComponentSpec("b", BOLT, class_path(Store), inputs=bolt_inputs)})


def test_a_topology_using_the_checkpoint_stream_itself_is_refused() -> None:
    spec = bare([InputSpec("src", CHECKPOINT_STREAM, Grouping(ALL))])
    with pytest.raises(InvalidTopologyError) as err:
        add_checkpointing(spec)
    assert str(err.value) == "bolt 'b' subscribes to src/$checkpoint, the checkpoint stream"
    spec = bare([InputSpec("src", "default", Grouping(SHUFFLE))],
                {CHECKPOINT_STREAM: Stream(["x"], name=CHECKPOINT_STREAM)})
    with pytest.raises(InvalidTopologyError) as err:
        add_checkpointing(spec)
    assert str(err.value) == "component 'src' declares the reserved stream '$checkpoint'"
    assert CHECKPOINT_COMPONENT not in spec.components
