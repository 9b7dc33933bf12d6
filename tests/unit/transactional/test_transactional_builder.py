"""TransactionalTopologyBuilder: the generated topology and the build-time checks."""

from __future__ import annotations

import pytest

from stormpy import Bolt, InvalidTopologyError, Spout, TopologySpec
from stormpy.topology._grouping import ALL, DIRECT
from stormpy.transactional import MemoryTransactionalSpout, TransactionalTopologyBuilder
from transactional_kit import CountingBolt, SizedSpout, Splitter, SumCommitter


class PlainSpout(Spout):
    outputs = ["x"]


class PlainBolt(Bolt):
    outputs = ["x"]


def builder() -> TransactionalTopologyBuilder:
    return TransactionalTopologyBuilder("tx", "spout", SizedSpout, 2, kwargs={"sizes": [1]})


def test_generates_an_ordinary_topology_with_coordination_streams() -> None:
    b = builder()
    b.set_bolt("count", CountingBolt, 3, kwargs={"log": "x"}).fields_grouping("spout", ["n"])
    b.set_bolt("sum", SumCommitter, kwargs={"log": "x"}).global_grouping("count")
    spec = b.create_topology()
    assert sorted(spec.components) == ["count", "spout", "spout-coordinator", "sum"]
    assert list(spec.spouts) == ["spout-coordinator"]
    assert spec.components["spout"].num_tasks == 2
    count_inputs = {(i.component, i.stream, i.grouping.type)
                    for i in spec.components["count"].inputs}
    assert count_inputs == {("spout", "default", "fields"), ("spout", "$coord", DIRECT)}
    sum_inputs = {(i.component, i.stream, i.grouping.type) for i in spec.components["sum"].inputs}
    assert ("spout-coordinator", "$commit", ALL) in sum_inputs
    assert spec.components["spout"].streams["default"].fields.to_list() == ["tx", "n"]
    assert TopologySpec.from_doc(spec.to_doc()).to_doc() == spec.to_doc()  # plain data


def test_memory_spout_instance_carries_its_arguments() -> None:
    spout = MemoryTransactionalSpout({0: [["a"]], 1: [["b"]]}, ["word"], 5)
    b = TransactionalTopologyBuilder("tx", "spout", spout, 2)
    b.set_bolt("count", CountingBolt, kwargs={"log": "x"}).shuffle_grouping("spout")
    spec = b.create_topology()
    assert spec.components["spout"].kwargs["target_kwargs"] == {
        "data_by_partition": [[["a"]], [["b"]]], "fields": ["word"], "take_per_batch": 5}


def test_refuses_a_non_transactional_spout() -> None:
    with pytest.raises(InvalidTopologyError, match="not a transactional spout"):
        TransactionalTopologyBuilder("tx", "spout", PlainSpout, 1)


def test_refuses_duplicate_ids() -> None:
    b = builder()
    b.set_bolt("count", CountingBolt, kwargs={"log": "x"}).shuffle_grouping("spout")
    for cid in ("count", "spout", "spout-coordinator"):
        with pytest.raises(InvalidTopologyError, match="duplicate component id"):
            b.set_bolt(cid, CountingBolt, kwargs={"log": "x"})


def test_refuses_a_committer_upstream_of_a_non_batch_bolt() -> None:
    b = builder()
    b.set_bolt("sum", SumCommitter, kwargs={"log": "x"}).global_grouping("spout")
    b.set_bolt("after", CountingBolt, kwargs={"log": "x"}).shuffle_grouping("sum")
    b.set_bolt("basic", Splitter).shuffle_grouping("after")
    with pytest.raises(InvalidTopologyError, match="committer 'sum' is upstream of 'basic'"):
        b.create_topology()


def test_refuses_plain_bolts_and_basic_committers() -> None:
    b = builder()
    with pytest.raises(InvalidTopologyError, match="neither a BatchBolt nor a BasicBolt"):
        b.set_bolt("plain", PlainBolt)
    with pytest.raises(InvalidTopologyError, match="only a BatchBolt can be a committer"):
        b.set_bolt("basic", Splitter, committer=True)


def test_refuses_subscriptions_outside_the_transactional_topology() -> None:
    b = builder()
    b.set_bolt("count", CountingBolt, kwargs={"log": "x"}).shuffle_grouping("spout-coordinator",
                                                                           "$batch")
    with pytest.raises(InvalidTopologyError, match="transactional machinery"):
        b.create_topology()
    b = builder()
    b.set_bolt("count", CountingBolt, kwargs={"log": "x"}).shuffle_grouping("elsewhere")
    with pytest.raises(InvalidTopologyError, match="unknown component 'elsewhere'"):
        b.create_topology()


def test_committer_flag_makes_a_batch_bolt_a_committer() -> None:
    b = builder()
    b.set_bolt("count", CountingBolt, committer=True, kwargs={"log": "x"}).shuffle_grouping("spout")
    spec = b.create_topology()
    assert spec.components["count"].kwargs["committer"] is True
    assert any(i.stream == "$commit" for i in spec.components["count"].inputs)
