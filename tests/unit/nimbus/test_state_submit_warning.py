"""Nimbus's submit answers with the state layer's host-local warning (what `stormpy jar` prints)
when a topology with stateful bolts keeps its state in memory or SQLite on a cluster whose
supervisors are on several hosts; the submit itself stands either way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from nimbus_fakes import FakeClusterState

from stormpy.cluster import ZkConnectionError
from stormpy.nimbus.handler import NimbusHandler
from stormpy.nimbus.store import StoreError
from stormpy.nimbus.uploads import StagedBundle
from stormpy.state import KeyValueState, StatefulBolt
from stormpy.topology import Spout, TopologyBuilder, Tuple


class Src(Spout):
    outputs = ["w"]


class Counting(StatefulBolt):
    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


def stateful_doc() -> dict[str, Any]:
    b = TopologyBuilder()
    b.set_spout("src", Src)
    b.set_bolt("count", Counting).shuffle_grouping("src")
    return b.create_topology().to_doc()


class Uploads:
    def __init__(self, tmp: Path) -> None:
        self.staged = {"b-1": StagedBundle("b-1", tmp / "b-1.zip", "0" * 64, 1, 0.0)}
        (tmp / "b-1.zip").write_bytes(b"x")

    def take(self, key: str) -> StagedBundle:
        return self.staged.pop(key)


class Manager:
    """Accepts every submit; its cluster state has the given supervisor hosts."""

    conf: dict[str, Any] = {}

    def __init__(self, hosts: list[str]) -> None:
        self.state = FakeClusterState()
        for i, host in enumerate(hosts):
            self.state.add_supervisor(f"sup-{i}", [6700], host=host)

    def submit(self, name: str, *_: Any, **__: Any) -> str:
        return f"{name}-1"

    def supervisors(self, *, fresh: bool = True) -> Any:
        return self.state.supervisors()

    def describe(self, topology_id: str) -> Any:
        raise StoreError(f"{topology_id} is not stored here (test)")


class UnreadableSupervisors(FakeClusterState):
    def supervisors(self, callback: Any = None) -> Any:
        raise ZkConnectionError("ZooKeeper unreachable")


def submit(tmp: Path, manager: Any, conf: dict[str, Any]) -> dict[str, Any]:
    handler = NimbusHandler(manager, Uploads(tmp), None, nimbus_info=dict,  # type: ignore[arg-type]
                            is_leader=lambda: True, leader_address=lambda: None)
    return handler.submit_topology("wc", "b-1", stateful_doc(), conf)


@pytest.mark.parametrize("conf", [{}, {"topology.state.provider": "sqlite",
                                       "topology.state.provider.config": {"path": "/s.db"}}])
def test_host_local_state_on_two_hosts_is_warned_of_at_submit(tmp_path: Path,
                                                              conf: dict[str, Any]) -> None:
    result = submit(tmp_path, Manager(["host-a", "host-b", "host-b"]), conf)
    assert result["topology_id"] == "wc-1"
    [warning] = result["warnings"]
    assert warning.startswith("topology 'wc' keeps its stateful bolts' state ")
    assert "on a cluster of 2 supervisor hosts" in warning and "leaves its state behind" in warning


def test_no_warning_for_redis_or_one_host_and_none_when_supervisors_are_unreadable(
        tmp_path: Path) -> None:
    redis = {"topology.state.provider": "redis"}
    assert submit(tmp_path, Manager(["host-a", "host-b"]), redis)["warnings"] == []
    assert submit(tmp_path, Manager(["host-a", "host-a"]), {})["warnings"] == []
    manager = Manager([])
    manager.state = UnreadableSupervisors()
    assert submit(tmp_path, manager, {}) == {"topology_id": "wc-1", "warnings": []}
