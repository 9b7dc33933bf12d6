"""A Nimbus that refuses a write without naming a leader (it cannot read ZooKeeper, or no leader is
elected yet) does not keep the client: the client asks the other seeds who leads and goes there,
for up to ``leader_wait_secs``; with no leader anywhere the refusal is raised when that is over."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stormpy.client import NimbusClient
from stormpy.rpc import RpcServer, rpc_method
from stormpy.rpc.curve import write_secret_key_file
from stormpy.rpc.errors import NotLeaderError

NEVER = 3600.0


class CutOff:
    """A Nimbus stand-in cut off from ZooKeeper: not the leader, and it knows no leader."""

    def __init__(self) -> None:
        self.refused = 0

    @rpc_method
    def get_leader(self) -> dict[str, Any]:
        return {"leader": None, "is_leader": False, "self": "cut-off"}

    @rpc_method
    def kill_topology(self, name: str, wait_secs: Any = None) -> dict[str, Any]:
        self.refused += 1
        raise NotLeaderError("not the leader, no leader is elected yet; retry shortly")


class Leader:
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
def test_a_refusal_naming_no_leader_sends_the_client_to_the_seed_that_leads() -> None:
    cut_off, leader = CutOff(), Leader()
    with RpcServer("127.0.0.1", 0, cut_off, name="cut-off") as old, \
            RpcServer("127.0.0.1", 0, leader, name="leader") as new:
        leader.address = f"127.0.0.1:{new.port}"
        seeds = [f"127.0.0.1:{old.port}", leader.address]
        with NimbusClient("127.0.0.1", old.port, timeout_secs=NEVER, retries=0, seeds=seeds,
                          leader_wait_secs=30) as client:
            client.kill("wc", 0)
            assert client.address == leader.address
    assert cut_off.refused == 1
    assert leader.killed == ["wc"]


@pytest.mark.timeout(60)
def test_the_seeds_are_asked_over_curve_when_nimbus_rpc_is_secured(tmp_path: Path) -> None:
    key_file = tmp_path / "nimbus.key"
    public = write_secret_key_file(key_file)
    secret = key_file.read_text().strip().encode()
    cut_off, leader = CutOff(), Leader()
    with RpcServer("127.0.0.1", 0, cut_off, name="cut-off", curve_secret_key=secret) as old, \
            RpcServer("127.0.0.1", 0, leader, name="leader", curve_secret_key=secret) as new:
        leader.address = f"127.0.0.1:{new.port}"
        seeds = [f"127.0.0.1:{old.port}", leader.address]
        with NimbusClient("127.0.0.1", old.port, timeout_secs=NEVER, retries=0, seeds=seeds,
                          leader_wait_secs=30, curve_server_key=public) as client:
            client.kill("wc", 0)
            assert client.address == leader.address
    assert cut_off.refused == 1
    assert leader.killed == ["wc"]


@pytest.mark.timeout(60)
def test_with_no_leader_anywhere_the_refusal_is_raised_after_the_wait() -> None:
    cut_off = CutOff()
    with RpcServer("127.0.0.1", 0, cut_off, name="cut-off") as old, \
            RpcServer("127.0.0.1", 0, CutOff(), name="other") as other:
        seeds = [f"127.0.0.1:{old.port}", f"127.0.0.1:{other.port}"]
        with NimbusClient("127.0.0.1", old.port, timeout_secs=NEVER, retries=0, seeds=seeds,
                          leader_wait_secs=1) as client:
            with pytest.raises(NotLeaderError, match="no leader is elected yet"):
                client.kill("wc", 0)
            assert client.address == seeds[0]
    assert cut_off.refused >= 2  # it kept asking (every 0.5 s) until the wait was over
