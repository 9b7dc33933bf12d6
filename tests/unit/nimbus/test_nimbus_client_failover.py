"""How a Nimbus client meets a dead or refusing Nimbus: it finds out at connect time (not after
the RPC timeout), asks the other seeds who leads, switches, and remembers the leader for the next
client; a Nimbus refusing while naming itself gets paused retries within
``nimbus.leader.wait.secs``; with a single Nimbus a dead one is an error at once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from stormpy.client import NimbusClient
from stormpy.client._leader_memo import remember_leader, remembered_leader
from stormpy.rpc import RpcClient, RpcServer, rpc_method
from stormpy.rpc.errors import NotLeaderError, UnreachableError
from stormpy.testing import free_ports

#: An RPC timeout no test may wait out (the pytest timeout is far shorter): a client that reached
#: its answer did so without waiting for it.
NEVER = 3600.0


class Leader:
    """A Nimbus stand-in that leads and carries out kills."""

    def __init__(self) -> None:
        self.address = ""
        self.killed: list[str] = []

    @rpc_method
    def get_leader(self) -> dict[str, Any]:
        return {"leader": self.address, "is_leader": True, "self": self.address}

    @rpc_method
    def kill_topology(self, name: str, wait_secs: Any = None) -> dict[str, Any]:
        self.killed.append(name)
        return {}


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STORMPY_CACHE_DIR", str(tmp_path / "cache"))


@pytest.mark.timeout(60)
def test_a_dead_server_is_found_at_connect_time() -> None:
    port, = free_ports(1)  # nothing listens there
    client = RpcClient("127.0.0.1", port, timeout_secs=NEVER, retries=3, connect_timeout_secs=2.0)
    try:
        with pytest.raises(UnreachableError, match="no connection could be made within 2 s"):
            client.call("anything")
    finally:
        client.close()


@pytest.mark.timeout(60)
def test_a_client_leaves_a_dead_seed_for_the_leader_and_remembers_it() -> None:
    dead, = free_ports(1)
    leader = Leader()
    with RpcServer("127.0.0.1", 0, leader, name="leader") as server:
        leader.address = f"127.0.0.1:{server.port}"
        seeds = [f"127.0.0.1:{dead}", leader.address]
        with NimbusClient("127.0.0.1", dead, timeout_secs=NEVER, retries=1, seeds=seeds,
                          leader_wait_secs=30, remember=True) as client:
            client.kill("wc")
            assert client.address == leader.address
        assert leader.killed == ["wc"]
        assert remembered_leader(seeds) == leader.address
        with NimbusClient("127.0.0.1", dead, timeout_secs=NEVER, seeds=seeds) as again:
            assert again.address == leader.address  # the next client starts at the leader


def test_the_remembered_leader_survives_the_process_in_a_file(tmp_path: Path) -> None:
    import stormpy.client._leader_memo as memo

    seeds = ["10.0.0.1:6627", "10.0.0.2:6627"]
    remember_leader(seeds, "10.0.0.2:6627", to_file=True)
    memo._last_leader.clear()  # as in a new process
    assert remembered_leader(seeds) is None  # the file is read only when asked to
    assert remembered_leader(list(reversed(seeds)), from_file=True) == "10.0.0.2:6627"
    assert remembered_leader(["10.0.0.1:6627"], from_file=True) is None  # other seeds: no memory
    (tmp_path / "cache" / "nimbus-leaders.json").write_text("{not json")
    memo._last_leader.clear()
    assert remembered_leader(seeds, from_file=True) is None  # a broken file is no memory


class StaleLeader:
    """A Nimbus refusing writes while naming itself the leader (its old leader node lingers after
    a restart), for its first ``refusals`` writes; it carries the kill out after that."""

    def __init__(self, refusals: int) -> None:
        self.address = ""
        self.refusals = refusals
        self.refused = 0
        self.killed: list[str] = []

    @rpc_method
    def get_leader(self) -> dict[str, Any]:
        return {"leader": self.address, "is_leader": False, "self": self.address}

    @rpc_method
    def kill_topology(self, name: str, wait_secs: Any = None) -> dict[str, Any]:
        if self.refused < self.refusals:
            self.refused += 1
            raise NotLeaderError(f"not the leader, leader is {self.address} (kill_topology {name})")
        self.killed.append(name)
        return {}


@pytest.mark.timeout(60)
def test_a_nimbus_refusing_while_naming_itself_gets_paused_retries_until_it_leads() -> None:
    stale = StaleLeader(refusals=3)
    with RpcServer("127.0.0.1", 0, stale, name="stale") as server:
        stale.address = f"127.0.0.1:{server.port}"
        with NimbusClient("127.0.0.1", server.port, timeout_secs=NEVER, retries=0,
                          leader_wait_secs=NEVER) as client:
            client.kill("wc")
    assert (stale.refused, stale.killed) == (3, ["wc"])


@pytest.mark.timeout(60)
def test_a_nimbus_refusing_while_naming_itself_is_not_asked_in_a_tight_loop() -> None:
    """Within ``nimbus.leader.wait.secs`` (1 s here) the client pauses between tries (a backoff
    from 50 ms), then raises the refusal: a handful of tries, not thousands."""
    stale = StaleLeader(refusals=10**9)
    with RpcServer("127.0.0.1", 0, stale, name="stale") as server:
        stale.address = f"127.0.0.1:{server.port}"
        conf = {"nimbus.host": "127.0.0.1", "nimbus.thrift.port": server.port,
                "nimbus.leader.wait.secs": 1, "nimbus.rpc.timeout.secs": NEVER}
        with NimbusClient.from_config(conf) as client:
            started = time.monotonic()
            with pytest.raises(NotLeaderError, match="leader is"):
                client.kill("wc")
            assert time.monotonic() - started >= 1.0  # it kept trying for the whole wait ...
    assert 2 <= stale.refused <= 20  # ... with pauses in between
    assert stale.killed == []


@pytest.mark.timeout(60)
def test_with_a_single_nimbus_a_call_to_a_dead_one_fails_at_once() -> None:
    """One Nimbus configured (``nimbus.host`` and the same address in ``nimbus.seeds``): nobody
    else could lead, so the client does not wait ``nimbus.leader.wait.secs`` (an hour here)."""
    dead, = free_ports(1)
    conf = {"nimbus.host": "127.0.0.1", "nimbus.thrift.port": dead,
            "nimbus.seeds": [f"127.0.0.1:{dead}", "127.0.0.1"], "nimbus.leader.wait.secs": NEVER,
            "nimbus.rpc.timeout.secs": NEVER, "nimbus.rpc.retries": 3}
    with NimbusClient.from_config(conf) as client:
        assert client.seeds == [f"127.0.0.1:{dead}"]
        with pytest.raises(UnreachableError):
            client.kill("wc")
