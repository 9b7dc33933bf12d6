"""stormpy.client._leader and leader_memo: the leader is found, and found again from memory,
whatever the order of the seeds (a dead seed, a standby naming the leader, the leader itself)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stormpy.client import NimbusClient, find_leader, leader_first
from stormpy.client._leader_memo import remember_leader, remembered_leader
from stormpy.rpc import RpcServer, rpc_method
from stormpy.testing import free_ports


class Seed:
    """A Nimbus stand-in answering ``get_leader`` as a leader or as a standby naming one (or,
    with ``answer`` set, that answer)."""

    def __init__(self) -> None:
        self.address = ""
        self.leader = ""
        self.asked = 0
        self.answer: Any = None

    @rpc_method
    def get_leader(self) -> Any:
        self.asked += 1
        if self.answer is not None:
            return self.answer
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
    import stormpy.client._leader_memo as memo

    memo._last_leader.clear()  # as in a new process
    for order in itertools.permutations(seeds):
        assert remembered_leader(list(order), from_file=True) == leader
        with NimbusClient.from_config({"nimbus.seeds": list(order)}, retries=0, remember=True) as again:
            assert again.address == leader, order


@pytest.mark.timeout(60)
def test_each_kind_of_answer_counts_on_its_own() -> None:
    """A standby alone names the leader (a bind-all host in it means 127.0.0.1); a seed saying
    it leads is the leader even before its leader node names it; an answer naming nobody, or
    nothing usable, sends the question on to the next seed."""
    one, other = Seed(), Seed()
    with RpcServer("127.0.0.1", 0, one, name="one") as a, RpcServer("127.0.0.1", 0, other, name="other") as b:
        first, second = f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"
        one.answer = {"leader": "0.0.0.0:7001", "is_leader": False}
        assert find_leader([first]) == "127.0.0.1:7001"
        one.answer = {"leader": None, "is_leader": True}
        assert find_leader([first]) == first
        other.answer = {"leader": "nimbus-b:7002", "is_leader": False}
        for nobody in ({"leader": None, "is_leader": False}, {"leader": "", "is_leader": False},
                       {"leader": "no-port:x", "is_leader": False}, ["not", "a", "map"]):
            one.answer = nobody
            assert find_leader([first, second]) == "nimbus-b:7002", nobody
        assert one.asked == 6 and other.asked == 4


def test_the_memo_file_keeps_every_set_of_seeds_in_the_cache_dir(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """One file for every set of seeds, created with its directories, kept across writes, under
    $STORMPY_CACHE_DIR or else ~/.cache/stormpy; a foreign file is replaced, never trusted."""
    import json

    import stormpy.client._leader_memo as memo

    cache = tmp_path / "deep" / "cache"
    monkeypatch.setenv("STORMPY_CACHE_DIR", str(cache))
    remember_leader(["x:1", "y:1"], "y:1")  # the process only, unless asked
    assert not cache.exists()
    remember_leader(["b:1", "a:1"], "a:1", to_file=True)
    remember_leader(["c:1", "d:1"], "d:1", to_file=True)
    remember_leader(["b:1", "a:1"], "b:1", to_file=True)  # a change of leader is written again
    assert json.loads((cache / "nimbus-leaders.json").read_text()) == {"a:1,b:1": "b:1", "c:1,d:1": "d:1"}
    (cache / "nimbus-leaders.json").write_text("[1, 2]")  # not ours
    remember_leader(["c:1", "d:1"], "c:1", to_file=True)
    assert json.loads((cache / "nimbus-leaders.json").read_text()) == {"c:1,d:1": "c:1"}
    monkeypatch.delenv("STORMPY_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    remember_leader(["e:1", "f:1"], "f:1", to_file=True)
    assert json.loads((tmp_path / "home" / ".cache" / "stormpy" / "nimbus-leaders.json").read_text()) \
        == {"e:1,f:1": "f:1"}
    memo._last_leader.clear()
    assert remembered_leader(["f:1", "e:1"], from_file=True) == "f:1"


@pytest.mark.parametrize("content", ['[1, 2]', '{"a:1,b:1": "z:9"}', '{"a:1,b:1": 5}', '{"a:1,b:1": null}'])
def test_a_memo_file_naming_no_seed_of_the_set_is_no_memory(tmp_path: Path, content: str) -> None:
    """A file that is not a map, or names for the seeds a leader outside them or no address."""
    import stormpy.client._leader_memo as memo

    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "nimbus-leaders.json").write_text(content)
    memo._last_leader.clear()
    assert remembered_leader(["b:1", "a:1"], from_file=True) is None
