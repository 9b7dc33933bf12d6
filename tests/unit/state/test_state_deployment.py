"""The submit-time warning about state kept on one host (stormpy.state._deployment): given for
stateful bolts on the memory or SQLite provider in a cluster of several supervisor hosts, naming
the topology, the provider, the hosts and the risk; not for shared providers, one host, or a
topology without stateful bolts."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy.state import KeyValueState, StatefulBolt
from stormpy.state._deployment import host_local_state_warning
from stormpy.testing import FeederSpout
from stormpy.topology import Bolt, TopologyBuilder, Tuple


class Counting(StatefulBolt):
    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


class Plain(Bolt):
    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


def spec(bolt: Any) -> Any:
    b = TopologyBuilder()
    b.set_spout("in", FeederSpout(["x"]))
    b.set_bolt("b", bolt).shuffle_grouping("in")
    return b.create_topology()


@pytest.mark.parametrize("provider, where", [
    (None, "in the worker process's memory (topology.state.provider: memory)"),
    ("sqlite", "in a SQLite file on the worker's host (topology.state.provider: sqlite)")])
def test_host_local_state_on_several_hosts_is_warned_of(provider: str | None, where: str) -> None:
    conf = {} if provider is None else {"topology.state.provider": provider,
                                        "topology.state.provider.config": {"path": "/s.db"}}
    warning = host_local_state_warning("wc", spec(Counting), conf, 3)
    assert warning == (f"topology 'wc' keeps its stateful bolts' state {where} on a cluster of 3 "
                       "supervisor hosts: a task moved to another host (its host died, a "
                       "rebalance) leaves its state behind and starts from an empty state; use "
                       "the 'redis' provider (or 'zookeeper' for small state) so that state "
                       "follows its task")


def test_no_warning_for_shared_state_one_host_or_no_stateful_bolt() -> None:
    redis = {"topology.state.provider": "org.apache.storm.redis.state.RedisKeyValueStateProvider"}
    zk = {"topology.state.provider": "zookeeper", "storm.zookeeper.servers": ["zk"]}
    assert host_local_state_warning("wc", spec(Counting), redis, 3) is None
    assert host_local_state_warning("wc", spec(Counting), zk, 3) is None
    assert host_local_state_warning("wc", spec(Counting), {}, 1) is None
    assert host_local_state_warning("wc", spec(Plain), {}, 3) is None
    # a bad provider setting is refused where the tasks open their stores, not here
    assert host_local_state_warning("wc", spec(Counting), {"topology.state.provider": 5}, 3) is None
