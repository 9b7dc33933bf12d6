"""Finding Nimbus hosts: ``nimbus.seeds`` entries with and without ports, and the leader named by a
standby's NotLeaderError."""

from __future__ import annotations

from stormpy.nimbus.client import NimbusClient, seed_addresses
from stormpy.rpc.errors import NotLeaderError, error_from_wire
from stormpy.supervisor.download import nimbus_addresses


def test_seeds_take_host_or_host_port_and_keep_order() -> None:
    conf = {"nimbus.host": "n1", "nimbus.thrift.port": 7000, "nimbus.seeds": ["n1", "n2:7001", "n3"]}
    assert seed_addresses(conf) == ["n1:7000", "n2:7001", "n3:7000"]
    assert nimbus_addresses(conf) == [("n1", 7000), ("n2", 7001), ("n3", 7000)]
    assert seed_addresses({"nimbus.host": "0.0.0.0", "nimbus.seeds": "x"}) == ["127.0.0.1:6627", "x:6627"]


def test_client_from_config_starts_at_the_first_seed_and_knows_them_all() -> None:
    client = NimbusClient.from_config({"nimbus.host": "127.0.0.1", "nimbus.thrift.port": 7000,
                                       "nimbus.seeds": ["127.0.0.1:7000", "127.0.0.1:7001"]})
    try:
        assert client.address == "127.0.0.1:7000"
        assert client.seeds == ["127.0.0.1:7000", "127.0.0.1:7001"]
    finally:
        client.close()
    explicit = NimbusClient.from_config({"nimbus.seeds": ["a", "b"]}, "127.0.0.1:7005")
    try:
        assert explicit.seeds == ["127.0.0.1:7005"]  # an explicit address is the only seed
    finally:
        explicit.close()


def test_not_leader_error_travels_and_names_the_leader() -> None:
    err = error_from_wire("NotLeaderError", "not the leader, leader is nimbus2:6627 (kill_topology ...)")
    assert isinstance(err, NotLeaderError) and err.leader == "nimbus2:6627"
    assert NotLeaderError("not the leader, no leader is elected yet; retry shortly").leader is None


def test_a_config_naming_no_nimbus_host_uses_the_default_host_on_its_own_port() -> None:
    """A client built from a config with only ``nimbus.thrift.port`` talks to that port (it once
    went to the default port 6627 and timed out)."""
    assert seed_addresses({"nimbus.thrift.port": 7123}) == ["127.0.0.1:7123"]
    client = NimbusClient.from_config({"nimbus.thrift.port": 7123})
    try:
        assert client.address == "127.0.0.1:7123"
    finally:
        client.close()
