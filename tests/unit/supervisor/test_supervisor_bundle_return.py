"""A supervisor sends a topology's code back to the leading Nimbus when the leader asks for it
(stand-in Nimbus servers over real RPC, the requests in an in-memory cluster state): which
requests it can answer, the upload to the leader a standby names, what `restore_bundle` gets,
the cases that send nothing, a failing topology not stopping the next, and the service that
`poll` starts once."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
from supervisor_stand_ins import StandInNimbus, bundle_bytes, make_dirs, stand_in_nimbus

from stormpy.cluster import ClusterStateError
from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.cluster.paths import ZkPaths
from stormpy.rpc import RpcError
from stormpy.supervisor.bundle_return import BundleReturner
from stormpy.testing import free_ports, wait_for

LOG = logging.getLogger("test-supervisor-bundle-return")
SPEC = {"spouts": {"s": {"parallelism": 2}}, "bolts": {}}


class MemoryStorage:
    """The two reads the bundle return makes, over a set of node paths."""

    def __init__(self) -> None:
        self.nodes: set[str] = set()
        self.broken = False

    def children(self, path: str) -> list[str]:
        if self.broken:
            raise ClusterStateError("ZooKeeper is away")
        names = [n.rpartition("/")[2] for n in self.nodes if n.rpartition("/")[0] == path]
        return sorted(names, reverse=True)  # not in the order the supervisor sends them

    def exists(self, path: str) -> bool:
        return path in self.nodes


class MemoryState:
    def __init__(self) -> None:
        self.storage = MemoryStorage()
        self.paths = ZkPaths("/stormpy")

    def want(self, *topology_ids: str) -> None:
        self.storage.nodes.update(self.paths.bundle_wanted(t) for t in topology_ids)


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STORMPY_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def nimbuses() -> Iterator[tuple[StandInNimbus, StandInNimbus]]:
    with stand_in_nimbus() as standby, stand_in_nimbus() as leader:
        standby.leader = leader.address
        yield standby, leader


def hold(dirs: SupervisorDirs, tmp_path: Path, topology_id: str, conf: Any = None,
         spec: Any = None) -> bytes:
    """Lay out a downloaded topology as the supervisor keeps it; returns its bundle."""
    bundle = bundle_bytes(tmp_path, {"app.txt": topology_id})
    dirs.stormdist(topology_id).mkdir(parents=True)
    dirs.bundle_file(topology_id).write_bytes(bundle)
    doc = {"spec": SPEC if spec is None else spec, "conf": conf}
    dirs.topology_file(topology_id).write_bytes(msgpack.packb(doc))
    return bundle


def returner(conf: dict[str, Any], dirs: SupervisorDirs, state: MemoryState) -> BundleReturner:
    return BundleReturner({"nimbus.rpc.retries": 0, **conf}, dirs, state, log=LOG)  # type: ignore[arg-type]


def test_only_requests_for_topologies_held_whole_are_answered_in_order(tmp_path: Path) -> None:
    dirs = make_dirs(tmp_path)
    state = MemoryState()
    for tid in ("t-1", "t-4", "t-0"):
        hold(dirs, tmp_path, tid)
    dirs.stormdist("t-2").mkdir(parents=True)
    dirs.bundle_file("t-2").write_bytes(b"a bundle without its spec")
    dirs.stormdist("t-5").mkdir(parents=True)
    dirs.topology_file("t-5").write_bytes(b"a spec without its bundle")
    state.want("t-4", "t-1", "t-2", "t-3", "t-5")
    back = returner({}, dirs, state)
    assert back.requested() == ["t-1", "t-4"]
    state.storage.broken = True
    assert back.requested() == []


def test_the_bundle_goes_to_the_leader_a_standby_names_and_is_restored_there(
        tmp_path: Path, nimbuses: tuple[StandInNimbus, StandInNimbus]) -> None:
    standby, leader = nimbuses
    dirs = make_dirs(tmp_path)
    state = MemoryState()
    bundle = hold(dirs, tmp_path, "t-1", conf={"topology.workers": 3}, spec={"ids": {1: "int keys"}})
    state.want("t-1")
    assert returner({"nimbus.seeds": [standby.address]}, dirs, state).send("t-1")
    assert list(leader.uploaded.values()) == [bundle]
    assert leader.restored == [{"topology_id": "t-1", "bundle_key": "restored-u0",
                                "spec": {"ids": {1: "int keys"}}, "conf": {"topology.workers": 3}}]
    assert standby.uploaded == {} and standby.restored == []


def test_a_topology_without_a_conf_is_restored_with_an_empty_one(
        tmp_path: Path, nimbuses: tuple[StandInNimbus, StandInNimbus]) -> None:
    _, leader = nimbuses
    dirs = make_dirs(tmp_path)
    state = MemoryState()
    hold(dirs, tmp_path, "t-1", conf=None)
    state.want("t-1")
    leader.restore_answer = False  # the leader found a copy meanwhile
    assert not returner({"nimbus.seeds": [leader.address]}, dirs, state).send("t-1")
    assert [(r["topology_id"], r["conf"]) for r in leader.restored] == [("t-1", {})]


def test_nothing_is_sent_for_a_request_already_answered(
        tmp_path: Path, nimbuses: tuple[StandInNimbus, StandInNimbus]) -> None:
    _, leader = nimbuses
    dirs = make_dirs(tmp_path)
    hold(dirs, tmp_path, "t-1")
    assert not returner({"nimbus.seeds": [leader.address]}, dirs, MemoryState()).send("t-1")
    assert leader.calls == []


def test_no_leader_among_the_seeds_is_an_rpc_error(tmp_path: Path) -> None:
    dirs = make_dirs(tmp_path)
    state = MemoryState()
    hold(dirs, tmp_path, "t-1")
    state.want("t-1")
    dead = f"127.0.0.1:{free_ports(1)[0]}"
    with pytest.raises(RpcError, match=r"^no Nimbus leader found among nimbus.host / nimbus.seeds$"):
        returner({"nimbus.seeds": [dead], "nimbus.rpc.timeout.secs": 1.0}, dirs, state).send("t-1")


def test_the_service_sends_every_request_past_one_that_fails_and_starts_once(
        tmp_path: Path, nimbuses: tuple[StandInNimbus, StandInNimbus]) -> None:
    _, leader = nimbuses
    dirs = make_dirs(tmp_path)
    state = MemoryState()
    hold(dirs, tmp_path, "t-1")
    hold(dirs, tmp_path, "t-2")
    dirs.topology_file("t-1").write_bytes(b"\xc1 not msgpack")
    state.want("t-1", "t-2")
    back = returner({"nimbus.seeds": [leader.address]}, dirs, state)
    try:
        back.poll()
        wait_for(lambda: leader.restored, 30, "t-2 sent back")
        assert {r["topology_id"] for r in leader.restored} == {"t-2"}
        assert [t.name for t in threading.enumerate()].count("supervisor-bundle-return") == 1
        sent = len(leader.restored)
        back.poll()  # a second poll wakes the same service
        wait_for(lambda: len(leader.restored) > sent, 30, "t-2 sent back again")
        assert [t.name for t in threading.enumerate()].count("supervisor-bundle-return") == 1
    finally:
        assert back.stop()
    back.poll()  # a stopped returner is not started again
    assert "supervisor-bundle-return" not in [t.name for t in threading.enumerate()]


def test_a_leader_with_a_token_takes_the_bundle_from_a_supervisor_with_that_token(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    dirs = make_dirs(tmp_path)
    state = MemoryState()
    hold(dirs, tmp_path, "t-1")
    state.want("t-1")
    caplog.set_level(logging.INFO)
    with stand_in_nimbus(auth_token="right") as leader:
        conf = {"nimbus.seeds": [leader.address], "nimbus.rpc.auth.token": "right",
                "nimbus.rpc.retries": 0}
        assert BundleReturner(conf, dirs, state).send("t-1")  # type: ignore[arg-type]
    assert [r["topology_id"] for r in leader.restored] == ["t-1"]
    assert [r.name for r in caplog.records if "sent the code of topology t-1" in r.getMessage()] == [
        "stormpy.supervisor.bundle_return"]


def test_a_round_that_fails_unexpectedly_is_told_in_the_supervisors_log(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    dirs = make_dirs(tmp_path)
    state = MemoryState()
    hold(dirs, tmp_path, "t-1")
    dirs.topology_file("t-1").write_bytes(msgpack.packb(["not", "a", "map"]))
    state.want("t-1")
    caplog.set_level(logging.INFO)

    def failed() -> list[str]:
        said = [r.getMessage() for r in caplog.records if r.name == LOG.name]
        return [m for m in said if "round failed" in m]

    with stand_in_nimbus() as leader:
        back = returner({"nimbus.seeds": [leader.address]}, dirs, state)
        try:
            back.poll()
            wait_for(failed, 30, "the failed round to be logged")
        finally:
            assert back.stop()
    assert failed()[0].startswith("supervisor-bundle-return: round failed")
