"""StatefulBolt's contract (the hooks users override are no-ops by default; a topology with one is
wired for checkpoints) and the submit-time warning about state kept on one host at its edges
(the host count, a provider given by Storm's class name)."""

from __future__ import annotations

from typing import Any

from stormpy.state import KeyValueState, StatefulBolt
from stormpy.state._checkpoint import CHECKPOINT_COMPONENT
from stormpy.state._deployment import host_local_state_warning
from stormpy.testing import FeederSpout
from stormpy.topology import TopologyBuilder, Tuple


class Counting(StatefulBolt):
    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


def spec() -> Any:
    b = TopologyBuilder()
    b.set_spout("in", FeederSpout(["x"]))
    b.set_bolt("b", Counting).shuffle_grouping("in")
    return b.create_topology()


def test_a_topology_with_a_stateful_bolt_gets_the_checkpoint_spout() -> None:
    topology = spec()
    assert CHECKPOINT_COMPONENT in topology.components
    assert StatefulBolt.stateful is True


def test_the_hooks_of_a_stateful_bolt_do_nothing_by_default() -> None:
    bolt = StatefulBolt()
    assert bolt.init_state(KeyValueState.__new__(KeyValueState)) is None
    assert bolt.pre_prepare(1) is None and bolt.pre_commit(1) is None
    assert bolt.pre_rollback() is None


def test_the_warning_starts_at_two_hosts() -> None:
    assert host_local_state_warning("wc", spec(), {}, 2) is not None
    assert host_local_state_warning("wc", spec(), {}, 1) is None
    assert host_local_state_warning("wc", spec(), {}, 0) is None
