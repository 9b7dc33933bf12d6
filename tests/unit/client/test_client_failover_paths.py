"""The ways a Nimbus client finds the leader that the failover tests do not walk: a standby naming
a leader the client was never told of, two Nimbuses naming each other, seeds that refuse the
caller's token, a host that takes no connection (refused, or stalled: its accept queue full),
the leader memo file written only when asked, and what a dead Nimbus's error says. Stand-in
Nimbus servers over real RPC on loopback."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import stormpy.client._leader_memo as memo
from stormpy.client import NimbusClient, find_leader, rpc_client, rpc_settings
from stormpy.client._leader_memo import remembered_leader
from stormpy.rpc import RpcServer, rpc_method
from stormpy.rpc.errors import AuthorizationError, NotLeaderError, UnreachableError
from stormpy.testing import free_ports

NEVER = 3600.0


class Nimbus:
    """A stand-in that leads (``names`` empty) or refuses writes naming ``names`` as the leader."""

    def __init__(self) -> None:
        self.address = ""
        self.names = ""
        self.killed: list[str] = []
        self.refused = 0

    @rpc_method
    def get_leader(self) -> dict[str, Any]:
        leader = self.names or self.address
        return {"leader": leader, "is_leader": not self.names, "self": self.address}

    @rpc_method
    def kill_topology(self, name: str, wait_secs: Any = None) -> dict[str, Any]:
        if self.names:
            self.refused += 1
            raise NotLeaderError(f"not the leader, leader is {self.names} (kill_topology {name})")
        self.killed.append(name)
        return {}


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache dir of the test's own, and a process memo starting empty (the ports of one test's
    stand-ins may be another's, earlier)."""
    monkeypatch.setenv("STORMPY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(memo, "_last_leader", {})
    return tmp_path / "cache"


@pytest.fixture
def pair() -> Iterator[tuple[Nimbus, Nimbus]]:
    """(standby, leader): the standby names the leader."""
    standby, leader = Nimbus(), Nimbus()
    with RpcServer("127.0.0.1", 0, standby, name="standby") as s, \
            RpcServer("127.0.0.1", 0, leader, name="leader") as ld:
        standby.address, leader.address = f"127.0.0.1:{s.port}", f"127.0.0.1:{ld.port}"
        standby.names = leader.address
        yield standby, leader


def client_at(nimbus: Nimbus | str, **kwargs: Any) -> NimbusClient:
    address = nimbus if isinstance(nimbus, str) else nimbus.address
    host, port = address.split(":")
    kwargs.setdefault("timeout_secs", NEVER)
    kwargs.setdefault("retries", 0)
    return NimbusClient(host, int(port), **kwargs)


@pytest.fixture
def stalled() -> Iterator[str]:
    """The address of a host that takes no new connection: a listener whose accept queue is full
    (what a host dropping connection attempts looks like to a client)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    address = server.getsockname()
    held = socket.create_connection(address)  # fills the queue: later attempts get no answer
    try:
        yield f"127.0.0.1:{address[1]}"
    finally:
        held.close()
        server.close()


@pytest.mark.timeout(60)
def test_a_standby_naming_a_leader_the_client_was_not_told_of_sends_it_there(
        pair: tuple[Nimbus, Nimbus]) -> None:
    """Even with ``leader_wait_secs`` 0: the first switch to a named leader goes at once."""
    standby, leader = pair
    with client_at(standby, leader_wait_secs=0) as client:
        client.kill("wc")
        assert client.address == leader.address
        assert client.seeds == [standby.address, leader.address]  # the leader is known from now on
    assert (standby.refused, leader.killed) == (1, ["wc"])


@pytest.mark.timeout(60)
def test_two_nimbuses_naming_each_other_give_up_after_the_leader_wait() -> None:
    """A split view of who leads (each names the other) is followed back and forth for
    ``leader_wait_secs`` only, then the refusal is raised."""
    one, other = Nimbus(), Nimbus()
    with RpcServer("127.0.0.1", 0, one, name="one") as a, RpcServer("127.0.0.1", 0, other, name="other") as b:
        one.address, other.address = f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"
        one.names, other.names = other.address, one.address
        with client_at(one, leader_wait_secs=0.5) as client, \
                pytest.raises(NotLeaderError, match="leader is 127.0.0.1:"):
            client.kill("wc")
    assert one.refused >= 1 and other.refused >= 1
    assert one.killed == other.killed == []


@pytest.mark.timeout(60)
def test_a_dead_nimbus_is_named_in_the_error_the_call_raises() -> None:
    dead, = free_ports(1)
    refused = rf"^Nimbus at 127\.0\.0\.1:{dead}: no connection could be made within"
    with client_at(f"127.0.0.1:{dead}") as client, pytest.raises(UnreachableError, match=refused + " 2 s"):
        client.kill("wc")
    conf = {"nimbus.rpc.timeout.secs": NEVER, "nimbus.rpc.retries": 2}
    direct = rpc_client(conf, f"127.0.0.1:{dead}", connect_timeout_secs=0.5)
    try:
        assert (direct.timeout_secs, direct.retries) == (NEVER, 2)
        with pytest.raises(UnreachableError, match=refused + r" 0\.5 s"):
            direct.call("get_leader")
    finally:
        direct.close()


def test_rpc_settings_come_from_the_config_and_the_overrides_win() -> None:
    conf = {"nimbus.rpc.timeout.secs": "7", "nimbus.rpc.retries": "4", "nimbus.rpc.auth.token": "t"}
    assert rpc_settings(conf) == {"timeout_secs": 7.0, "retries": 4, "auth_token": "t",
                                  "curve_server_key": None, "connect_timeout_secs": 2.0}
    assert rpc_settings(conf, retries=0, auth_token=None)["retries"] == 0
    assert rpc_settings({}) == {"timeout_secs": 30.0, "retries": 1, "auth_token": None,
                                "curve_server_key": None, "connect_timeout_secs": 2.0}


def test_a_client_made_without_settings_has_the_documented_defaults() -> None:
    with NimbusClient("127.0.0.1", 1) as client:
        assert (client.timeout_secs, client.retries, client.leader_wait_secs) == (10.0, 1, 30.0)
        assert (client.rpc.timeout_secs, client.rpc.retries) == (10.0, 1)
        assert client.seeds == ["127.0.0.1:1"] and client.warnings == []


@pytest.mark.timeout(60)
def test_check_reachable_names_every_seed_that_takes_no_connection(stalled: str) -> None:
    dead, = free_ports(1)
    with client_at(f"127.0.0.1:{dead}", seeds=[stalled], connect_timeout_secs=0.5) as client, \
            pytest.raises(UnreachableError) as err:
        client.check_reachable()
    assert str(err.value) == (
        f"Nimbus at 127.0.0.1:{dead} (Connection refused), {stalled} (timed out) is unreachable; "
        "is `stormpy nimbus` running there? (set --nimbus host:port, or nimbus.host / "
        "nimbus.thrift.port / nimbus.seeds)")


@pytest.mark.timeout(60)
def test_check_reachable_moves_to_the_first_seed_that_accepts_and_stays_at_a_live_one(
        pair: tuple[Nimbus, Nimbus], private_cache: Path) -> None:
    standby, leader = pair
    dead, = free_ports(1)
    seeds = [f"127.0.0.1:{dead}", standby.address, leader.address]
    with client_at(seeds[0], seeds=seeds) as client:
        client.check_reachable()
        assert client.address == standby.address  # the first that accepts, leader or not
        client.check_reachable()
        assert client.address == standby.address
    assert remembered_leader(seeds) == standby.address
    with client_at(leader, seeds=[leader.address, standby.address]) as live:
        live.check_reachable()
        assert live.address == leader.address
    assert remembered_leader([leader.address, standby.address]) is None  # no switch, nothing noted
    assert not (private_cache / "nimbus-leaders.json").exists()  # only remember=True writes it


@pytest.mark.timeout(60)
def test_the_leader_memo_file_is_written_by_a_client_asked_to_remember(
        pair: tuple[Nimbus, Nimbus], private_cache: Path) -> None:
    standby, leader = pair
    seeds = [standby.address, leader.address]
    with client_at(standby, seeds=seeds) as client:
        client.kill("wc")
    assert not (private_cache / "nimbus-leaders.json").exists()
    with client_at(standby, seeds=list(reversed(seeds)), remember=True) as client:
        client.kill("wc")  # starts at the leader remembered in the process: no switch, no write
    assert not (private_cache / "nimbus-leaders.json").exists()
    memo._last_leader.clear()  # as in a new process
    with client_at(standby, seeds=seeds, remember=True) as client:
        client.kill("wc")
        assert client.address == leader.address
    assert json.loads((private_cache / "nimbus-leaders.json").read_text()) == {
        ",".join(sorted(seeds)): leader.address}


@pytest.mark.timeout(60)
def test_a_seed_that_takes_no_connection_costs_the_connect_timeout_not_the_rpc_timeout(
        pair: tuple[Nimbus, Nimbus], stalled: str) -> None:
    _, leader = pair
    dead, = free_ports(1)
    seeds = [f"127.0.0.1:{dead}", stalled, leader.address]
    assert find_leader(seeds, timeout_secs=NEVER, connect_timeout_secs=0.5) == leader.address


@pytest.mark.timeout(60)
def test_seeds_are_asked_with_the_callers_token_and_a_refusal_is_skipped_unless_raised() -> None:
    locked, leader = Nimbus(), Nimbus()
    with RpcServer("127.0.0.1", 0, locked, name="locked", auth_token="other") as a, \
            RpcServer("127.0.0.1", 0, leader, name="leader", auth_token="t") as b:
        locked.address, leader.address = f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"
        seeds = [locked.address, leader.address]
        assert find_leader(seeds, auth_token="t") == leader.address
        with pytest.raises(AuthorizationError):
            find_leader(seeds, auth_token="t", raise_refusal=True)
        dead, = free_ports(1)
        with client_at(f"127.0.0.1:{dead}", seeds=seeds, auth_token="t", leader_wait_secs=1) as client:
            client.kill("wc")  # the seeds are asked with the client's token too
            assert client.address == leader.address
    assert leader.killed == ["wc"]


@pytest.mark.timeout(60)
def test_a_leader_named_by_something_other_than_an_address_is_no_leader(pair: tuple[Nimbus, Nimbus]) -> None:
    class Odd(Nimbus):
        @rpc_method
        def get_leader(self) -> dict[str, Any]:
            return {"leader": 7001, "is_leader": False}

    _, leader = pair
    with RpcServer("127.0.0.1", 0, Odd(), name="odd") as odd:
        assert find_leader([f"127.0.0.1:{odd.port}", leader.address]) == leader.address
