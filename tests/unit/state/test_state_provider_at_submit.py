"""The state provider settings (``topology.state.provider`` with its
``topology.state.provider.config``) are checked when a topology is submitted, by the one submit
check that LocalCluster, Nimbus (``submit_topology``) and the Nimbus client (before it uploads)
run: a bad one is refused with a SettingError naming the setting before any task opens a store,
where it was refused before (on a worker, with the topology already running)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from nimbus_fakes import FakeClusterState, SimClock, staged_bundle

from stormpy import TopologyBuilder
from stormpy.client import NimbusClient
from stormpy.config import DEFAULTS, SettingError
from stormpy.config.validate import check_topology_config
from stormpy.nimbus.handler import NimbusHandler
from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.store import BundleStore
from stormpy.nimbus.submission import prepare_submission
from stormpy.nimbus.topologies import TopologyManager
from stormpy.rpc import RpcClient, RpcServer
from stormpy.rpc.errors import TopologyRefusedError
from stormpy.state import StatefulBolt, state_settings
from stormpy.testing import FeederSpout, LocalCluster
from stormpy.topology._spec import TopologySpec

PROVIDER = "topology.state.provider"
CONFIG = "topology.state.provider.config"
NO_HOST = {PROVIDER: "redis", CONFIG: {"jedisPoolConfig": {"port": 6379}}}


class Counter(StatefulBolt):
    outputs: list[str] = []

    def init_state(self, state: Any) -> None:
        self.state = state

    def execute(self, tup: Any) -> None:
        self.ack(tup)


def stateful_topology() -> TopologySpec:
    b = TopologyBuilder()
    b.set_spout("feed", FeederSpout(["word"]))
    b.set_bolt("count", Counter).fields_grouping("feed", ["word"])
    return b.create_topology()


BAD = [
    # a redis config that names no host (Storm's deserialised jedisPoolConfig has none)
    (NO_HOST, CONFIG, "jedisPoolConfig names no host"),
    ({PROVIDER: "redis", CONFIG: {"jedisPoolConfig": {"host": ""}}}, CONFIG,
     "jedisPoolConfig.host must be a host name, got ''"),
    # an unknown entry, at the top and inside jedisPoolConfig
    ({PROVIDER: "redis", CONFIG: {"jedisPool": {"host": "r1"}}}, CONFIG,
     "unknown entries ['jedisPool']"),
    ({PROVIDER: "redis", CONFIG: {"jedisPoolConfig": {"host": "r1", "prot": 1}}}, CONFIG,
     "jedisPoolConfig: unknown entries ['prot']"),
    # a wrong type
    ({PROVIDER: "redis", CONFIG: {"jedisPoolConfig": {"host": "r1", "port": "6379x"}}}, CONFIG,
     "jedisPoolConfig.port must be a TCP port, got '6379x'"),
    ({PROVIDER: "redis", CONFIG: '{"jedisPoolConfig": {"host": "r1", "timeout": "2s"}}'}, CONFIG,
     "jedisPoolConfig.timeout must be a positive number of ms, got '2s'"),
    ({PROVIDER: "sqlite", CONFIG: {"path": 3}}, CONFIG, "provider 'sqlite' needs 'path'"),
    ({PROVIDER: "sqlite", CONFIG: {"path": "s.db", "table": "1st"}}, CONFIG, "'table' must be"),
    ({PROVIDER: "zookeeper", CONFIG: {"servers": 5}}, f"{CONFIG} servers",
     "must name ZooKeeper servers"),
    ({PROVIDER: "zookeeper", CONFIG: {"port": 99999}}, f"{CONFIG} port",
     "must be a port number in 1..65535, got 99999"),
    ({PROVIDER: "zookeeper", CONFIG: {"root": "state"}}, CONFIG, "'root' must be an absolute"),
    ({CONFIG: "{not json"}, CONFIG, "is not valid JSON"),
    # unknown provider names
    ({PROVIDER: "Redis"}, PROVIDER, "got 'Redis'"),
    ({PROVIDER: "org.apache.storm.redis.state.RedisKeyValueStateProviderX"}, PROVIDER,
     "Storm's class names stormpy knows: org.apache.storm.redis.state.RedisKeyValueStateProvider"),
]


@pytest.mark.parametrize(("conf", "setting", "problem"), BAD)
def test_the_submit_check_refuses_a_bad_provider_config_naming_the_setting(
        conf: dict[str, Any], setting: str, problem: str) -> None:
    for cluster_conf in ({}, None):  # Nimbus and LocalCluster know the cluster's values; a client not
        with pytest.raises(SettingError) as err:
            check_topology_config(conf, stateful_topology().components, cluster_conf)
        assert err.value.setting == setting
        assert str(err.value).startswith(f"{setting}: ")
        assert problem in err.value.problem


def test_good_provider_configs_pass_and_the_state_layer_reads_them_the_same() -> None:
    good = [{}, {PROVIDER: "memory"}, {PROVIDER: "redis"},
            {PROVIDER: "org.apache.storm.redis.state.RedisKeyValueStateProvider",
             CONFIG: '{"jedisPoolConfig": {"host": "r1", "port": 6380}, "keyClass": "x"}'},
            {PROVIDER: "sqlite", CONFIG: {"path": "s.db", "table": "t_1"}},
            {PROVIDER: "zookeeper", CONFIG: {"servers": "zk1,zk2", "port": "2181"}},
            {PROVIDER: "zookeeper"},  # storm.zookeeper.servers, the table's default on a client
            {PROVIDER: "my.module:factory", CONFIG: {"anything": 1}}]
    for conf in good:
        assert check_topology_config(conf, stateful_topology().components, {}) == []
        assert check_topology_config(conf, stateful_topology().components) == []
        state_settings({**DEFAULTS, **conf})


def test_the_cluster_conf_counts_where_the_topology_sets_nothing() -> None:
    """Nimbus checks what the workers will read: its own provider under the topology's config."""
    with pytest.raises(SettingError, match=rf"^{CONFIG}: jedisPoolConfig names no host"):
        check_topology_config({CONFIG: {"jedisPoolConfig": {}}}, {}, {PROVIDER: "redis"})
    check_topology_config({CONFIG: {"jedisPoolConfig": {"host": "r1"}}}, {}, {PROVIDER: "redis"})


def test_local_cluster_refuses_it_at_submit_and_starts_nothing() -> None:
    with LocalCluster() as cluster:
        with pytest.raises(SettingError, match=rf"^{CONFIG}: jedisPoolConfig names no host"):
            cluster.submit_topology("t", NO_HOST, stateful_topology())
        assert "t" not in cluster.topologies()


def test_nimbus_refuses_it_naming_the_setting() -> None:
    with pytest.raises(TopologyRefusedError, match=rf"^topology 't' refused: {CONFIG}: "
                                                   r"jedisPoolConfig names no host"):
        prepare_submission("t", stateful_topology(), NO_HOST, {})
    with pytest.raises(TopologyRefusedError, match=rf"^topology 't' refused: {PROVIDER}: must be"):
        prepare_submission("t", stateful_topology(), {}, {PROVIDER: "org.apache.storm.Nope"})


def test_a_submit_over_nimbus_rpc_is_refused_naming_the_setting(tmp_path: Path) -> None:
    """A client that skips its own check (another client, an older stormpy) meets Nimbus's."""
    state = FakeClusterState()
    state.add_supervisor("sup-a", [6700])
    manager = TopologyManager(state, BundleStore(NimbusDirs(tmp_path / "nimbus")),  # type: ignore[arg-type]
                              {}, clock=SimClock())

    class Uploads:
        restaged: list[str] = []

        def take(self, key: str) -> Any:
            return staged_bundle(tmp_path, key)

        def restage(self, staged: Any) -> None:  # a refused submit keeps the upload
            self.restaged.append(staged.bundle_key)

    handler = NimbusHandler(manager, Uploads(), None, nimbus_info=dict)  # type: ignore[arg-type]
    refused = pytest.raises(TopologyRefusedError, match=rf"^topology 'wc' refused: {CONFIG}: "
                                                        r"jedisPoolConfig names no host")
    with RpcServer("127.0.0.1", 0, handler, name="nimbus") as server, \
            RpcClient("127.0.0.1", server.port, timeout_secs=30) as client, refused:
        client.call("submit_topology", name="wc", bundle_key="bkey",
                    spec=stateful_topology().to_doc(), conf=NO_HOST)
    assert Uploads.restaged == ["bkey"] and not state.bases


def test_the_nimbus_client_refuses_it_before_uploading(tmp_path: Path) -> None:
    missing = tmp_path / "never-read.zip"  # the check comes first: the bundle is never opened
    with NimbusClient("127.0.0.1", 9, timeout_secs=1, retries=0) as client, \
            pytest.raises(SettingError, match=rf"^{CONFIG}: jedisPoolConfig names no host"):
        client.submit("t", missing, stateful_topology().to_doc(), NO_HOST)
