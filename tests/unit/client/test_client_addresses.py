"""stormpy.client._addresses: the one seed list (``nimbus.host`` and ``nimbus.seeds`` entries with
and without ports, a bind-all host, the default host), the address parser, and the leader named by
a standby's NotLeaderError."""

from __future__ import annotations

import pytest

from stormpy.client import NimbusClient, parse_address, seed_addresses
from stormpy.client._addresses import connectable
from stormpy.rpc.errors import NotLeaderError, error_from_wire


def test_seeds_take_host_or_host_port_and_keep_order() -> None:
    conf = {"nimbus.host": "n1", "nimbus.thrift.port": 7000, "nimbus.seeds": ["n1", "n2:7001", "n3"]}
    assert seed_addresses(conf) == ["n1:7000", "n2:7001", "n3:7000"]
    assert seed_addresses({"nimbus.seeds": "c"}) == ["c:6627"]  # one seed as a plain string


@pytest.mark.parametrize("bind_all", ["0.0.0.0", "*"])
def test_a_bind_all_host_means_this_host_wherever_it_is_named(bind_all: str) -> None:
    """``nimbus.host: 0.0.0.0`` is where Nimbus listens; every client (submitter, supervisor, UI)
    connects to 127.0.0.1 for it, in ``nimbus.host`` and in ``nimbus.seeds`` alike."""
    assert seed_addresses({"nimbus.host": bind_all, "nimbus.seeds": "x"}) == ["127.0.0.1:6627", "x:6627"]
    assert seed_addresses({"nimbus.seeds": [f"{bind_all}:7001", "127.0.0.1:7001"]}) == ["127.0.0.1:7001"]
    assert connectable(f"{bind_all}:7001") == "127.0.0.1:7001"  # a leader a Nimbus names, too
    assert connectable("n1") == "n1:6627"


def test_malformed_addresses_are_refused_naming_them() -> None:
    assert parse_address("n1") == ("n1", 6627)
    assert parse_address("n1:7000") == ("n1", 7000)
    for bad in (":7000", "n1:x", "n1:0", "n1:70000"):
        with pytest.raises(ValueError, match=bad):
            parse_address(bad)
    with pytest.raises(ValueError, match="n2:port"):
        seed_addresses({"nimbus.seeds": ["n1", "n2:port"]})


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


def test_a_free_port_setting_of_zero_names_the_default_port_for_seeds() -> None:
    """A daemon configured with ``nimbus.thrift.port: 0`` (bind a free port) still gets
    connectable seed addresses: 0 is no port to connect to, so the default applies."""
    assert seed_addresses({"nimbus.thrift.port": 0, "nimbus.host": "127.0.0.1"}) == ["127.0.0.1:6627"]


def test_the_port_range_ends_at_65535_and_the_port_follows_the_last_colon() -> None:
    assert parse_address("n1:65535") == ("n1", 65535)
    with pytest.raises(ValueError, match="n1:65536"):
        parse_address("n1:65536")
    assert parse_address("[::1]:7000") == ("[::1]", 7000)  # an IPv6 host in brackets


def test_one_seed_given_as_a_string_is_one_address() -> None:
    assert seed_addresses({"nimbus.seeds": "nimbus-c:7001"}) == ["nimbus-c:7001"]
