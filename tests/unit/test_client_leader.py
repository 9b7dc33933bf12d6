"""stormpy.client.leader and leader_memo: the leader is found, and found again from memory,
whatever the order of the seeds (a dead seed, a standby naming the leader, the leader itself)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stormpy.client import NimbusClient, find_leader, leader_first
from stormpy.client.leader_memo import remember_leader, remembered_leader
from stormpy.rpc import RpcServer, rpc_method
from stormpy.testing import free_ports


class Seed:
    """A Nimbus stand-in answering ``get_leader`` as a leader or as a standby naming one."""

    def __init__(self) -> None:
        self.address = ""
        self.leader = ""
        self.asked = 0

    @rpc_method
    def get_leader(self) -> dict[str, Any]:
        self.asked += 1
        return {"leader": self.leader, "is_leader": self.leader == self.address, "self": self.address}


@pytest.fixture
def seeds() -> Iterator[tuple[str, str, str]]:
    """(dead, standby, leader) addresses."""
    standby, leader = Seed(), Seed()
    dead, = free_ports(1)
    with RpcServer("127.0.0.1", 0, standby, name="standby") as s, \
            RpcServer("127.0.0.1", 0, leader, name="leader") as ld:
        standby.address, leader.address = f"127.0.0.1:{s.port}", f"127.0.0.1:{ld.port}"
        standby.leader = leader.leader = leader.address
        yield f"127.0.0.1:{dead}", standby.address, leader.address


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STORMPY_CACHE_DIR", str(tmp_path / "cache"))


@pytest.mark.timeout(120)
def test_the_leader_is_found_whatever_the_order_of_the_seeds(seeds: tuple[str, str, str]) -> None:
    leader = seeds[2]
    for order in itertools.permutations(seeds):
        assert find_leader(order) == leader, order
        assert leader_first(order, leader) == [leader, *[s for s in order if s != leader]]
    assert find_leader([seeds[0]]) is None  # nobody answers: no leader known
    assert leader_first(seeds, None) == list(seeds)


@pytest.mark.timeout(60)
def test_the_remembered_leader_is_found_again_whatever_the_order_of_the_seeds(
        seeds: tuple[str, str, str]) -> None:
    dead, standby, leader = seeds
    with NimbusClient.from_config({"nimbus.seeds": [dead, standby, leader]}, retries=0) as first:
        assert first.address == dead
        first.check_reachable()  # the dead seed is left for the next one that answers ...
        assert first.leader() == leader
        first.call("get_leader")
    remember_leader([dead, standby, leader], leader)
    for order in itertools.permutations(seeds):
        assert remembered_leader(list(order)) == leader
        with NimbusClient.from_config({"nimbus.seeds": list(order)}, retries=0) as again:
            assert again.address == leader, order  # ... and the next clients start at the leader
    remember_leader([dead, standby, leader], leader, to_file=True)
    import stormpy.client.leader_memo as memo

    memo._last_leader.clear()  # as in a new process
    for order in itertools.permutations(seeds):
        assert remembered_leader(list(order), from_file=True) == leader
        with NimbusClient.from_config({"nimbus.seeds": list(order)}, retries=0, remember=True) as again:
            assert again.address == leader, order
