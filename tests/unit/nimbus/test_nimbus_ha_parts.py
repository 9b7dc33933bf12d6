"""Nimbus HA parts driven directly over stand-ins of ZooKeeper: leader election (who leads and who
is named the leader, a suspended or lost session, a failed take-over, stepping down at stop),
getting back a bundle no Nimbus holds (the leader's request to the supervisors, a copy sent back
checked and installed) and what ``degraded`` says of a topology that cannot run as asked."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from nimbus_fakes import staged_bundle

from stormpy.cluster import Assignment, StormBase
from stormpy.cluster.errors import ClusterStateError, MalformedStateError
from stormpy.cluster.paths import ZkPaths
from stormpy.cluster.records import encode_value
from stormpy.config import SettingError
from stormpy.nimbus.leadership import Leadership
from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.recovery import NO_CODE, UNSCHEDULED, BundleRecovery, degraded_reason
from stormpy.nimbus.replication import ReplicationError, Replicator, replication_target
from stormpy.nimbus.store import BundleStore
from stormpy.rpc.errors import InvalidRequestError, NotFoundError
from stormpy.testing import wait_for


class Storage:
    """The znodes a recovery writes, with every write recorded."""

    def __init__(self) -> None:
        self.nodes: dict[str, bytes] = {}
        self.writes: list[tuple[str, str]] = []

    def exists(self, path: str) -> bool:
        return path in self.nodes

    def set(self, path: str, data: bytes) -> None:
        self.writes.append(("set", path))
        self.nodes[path] = data

    def delete(self, path: str) -> None:
        self.writes.append(("delete", path))
        self.nodes.pop(path, None)


class State:
    def __init__(self, *tids: str) -> None:
        self.paths = ZkPaths()
        self.storage = Storage()
        self.bases = {tid: StormBase(tid, tid, "active", 1, 0.0, "") for tid in tids}

    def storm_base(self, tid: str) -> StormBase | None:
        return self.bases.get(tid)


class Replicas:
    """The replicator's part in a recovery: the sha256 recorded at submit, registrations."""

    def __init__(self, recorded: dict[str, str]) -> None:
        self.recorded = recorded
        self.calls: list[tuple[str, str]] = []

    def recorded_sha256(self, tid: str) -> str | None:
        return self.recorded.get(tid)

    def register(self, tid: str) -> None:
        self.calls.append(("register", tid))

    def record_sha256(self, tid: str) -> None:
        self.calls.append(("record_sha256", tid))


def recovery(tmp: Path, recorded: dict[str, str] | None = None,
             *tids: str) -> tuple[BundleRecovery, State, Replicas]:
    state, replicas = State(*(tids or ("wc-1",))), Replicas(recorded or {})
    store = BundleStore(NimbusDirs(tmp / "local"))
    return BundleRecovery(state, store, replicas), state, replicas  # type: ignore[arg-type]


WANTED = ZkPaths().bundle_wanted("wc-1")


# -- degraded_reason -----------------------------------------------------------------------------
def test_degraded_says_why_a_topology_cannot_run_as_asked() -> None:
    base = StormBase("wc-1", "wc", "active", 1, 0.0, "")
    assigned = Assignment("wc-1", "wc-1", {(1, 1): ("sup-a", 6700)}, {"sup-a": "h"})
    empty = Assignment("wc-1", "wc-1", {}, {})
    assert degraded_reason(base, assigned, 1) is None
    assert degraded_reason(base, assigned, 0) == NO_CODE
    assert degraded_reason(base, None, 2) == UNSCHEDULED
    assert degraded_reason(base, empty, 1) == UNSCHEDULED
    killed = StormBase("wc-1", "wc", "killed", 1, 0.0, "")
    assert degraded_reason(killed, None, 0) is None
    assert NO_CODE.startswith("no Nimbus holds its code") and UNSCHEDULED.startswith("not scheduled")


# -- requests --------------------------------------------------------------------------------------
def test_a_missing_bundle_is_asked_for_once_and_logged_once(tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="stormpy.nimbus.recovery")
    rec, state, _ = recovery(tmp_path, None, "wc-1", "wc-2", "wc-3")
    rec.store.install("wc-2", staged_bundle(tmp_path, "k2"), {}, {})
    topologies: dict[str, Any] = {"wc-3": 1, "wc-2": 1, "wc-1": 1}
    assert rec.request_missing(topologies) == ["wc-1", "wc-3"]
    assert rec.request_missing(topologies) == ["wc-1", "wc-3"]
    assert state.storage.writes == [("set", WANTED), ("set", ZkPaths().bundle_wanted("wc-3"))]
    assert state.storage.nodes == {WANTED: b"", ZkPaths().bundle_wanted("wc-3"): b""}
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == 2
    assert logged[0].startswith("topology wc-1 is in ZooKeeper but no Nimbus holds its code")
    assert logged[1].startswith("topology wc-3 ")


# -- restores --------------------------------------------------------------------------------------
def test_a_bundle_sent_back_is_installed_registered_and_the_request_removed(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="stormpy.nimbus.recovery")
    staged = staged_bundle(tmp_path, "k1")
    rec, state, replicas = recovery(tmp_path, {"wc-1": staged.sha256})
    rec.request("wc-1")
    assert rec.restore("wc-1", staged, {"components": {}}, {"topology.workers": 1}) is True
    stored = rec.store.load("wc-1")
    assert (stored.spec, stored.conf, stored.bundle_sha256) == ({"components": {}}, {"topology.workers": 1},
                                                                staged.sha256)
    assert replicas.calls == [("register", "wc-1")]  # the sha256 was recorded at submit already
    assert state.storage.nodes == {}
    rec.request("wc-1")  # lost again later: logged again
    assert len(caplog.records) == 2


def test_a_bundle_without_a_recorded_sha256_is_installed_and_its_sha256_recorded(tmp_path: Path) -> None:
    rec, _, replicas = recovery(tmp_path)
    assert rec.restore("wc-1", staged_bundle(tmp_path, "k1"), {}, {}) is True
    assert replicas.calls == [("register", "wc-1"), ("record_sha256", "wc-1")]
    assert rec.store.exists("wc-1")


def test_a_bundle_already_back_is_dropped(tmp_path: Path) -> None:
    rec, state, replicas = recovery(tmp_path)
    rec.store.install("wc-1", staged_bundle(tmp_path, "k1"), {}, {})
    rec.request("wc-1")
    late = staged_bundle(tmp_path, "k2")
    assert rec.restore("wc-1", late, {}, {}) is False
    assert not late.path.exists() and replicas.calls == [] and state.storage.nodes == {}


def test_a_bundle_that_is_not_the_submitted_one_is_refused(tmp_path: Path) -> None:
    rec, state, replicas = recovery(tmp_path, {"wc-1": "f" * 64})
    rec.request("wc-1")
    staged = staged_bundle(tmp_path, "k1")
    with pytest.raises(InvalidRequestError) as err:
        rec.restore("wc-1", staged, {}, {})
    assert str(err.value) == (f"topology wc-1: the bundle sent back has sha256 {staged.sha256}, "
                              f"the submitted one had {'f' * 64}")
    assert not staged.path.exists() and not rec.store.exists("wc-1")
    assert replicas.calls == [] and state.storage.nodes == {WANTED: b""}


def test_a_bundle_of_an_unknown_topology_is_refused(tmp_path: Path) -> None:
    rec, _, _ = recovery(tmp_path)
    with pytest.raises(NotFoundError) as err:
        rec.restore("other-1", staged_bundle(tmp_path, "k1"), {}, {})
    assert str(err.value) == "no topology with id 'other-1'"

WAIT = 20.0
#: a wait that a test must never sit out: the code under test has to end it by itself
FOREVER = 3600.0
PATH = "/stormpy/nimbuses/leader"


# -- leader election ---------------------------------------------------------------------------------
class Lock:
    """A lock whose ``acquire`` answers what the storage says (True, False, or raises)."""

    def __init__(self, storage: LockStorage, identifier: str) -> None:
        self.storage = storage
        self.identifier = identifier
        self.released = threading.Event()
        self.cancelled = False

    def acquire(self, blocking: bool = True) -> bool:
        assert blocking
        answer = self.storage.grant()
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def release(self) -> None:
        self.released.set()
        if self.storage.release_fails:
            raise RuntimeError("session gone")

    def cancel(self) -> None:
        self.cancelled = True


class LockStorage:
    def __init__(self, answers: list[Any] | None = None) -> None:
        self.connected = True
        self.shutting_down = False
        self.listeners: list[Callable[[str], Any]] = []
        self.locks: list[Lock] = []
        self.answers = list(answers or [])
        self.contenders: list[str] | BaseException = []
        self.release_fails = False
        self.lock_fails = 0
        self.contender_reads = 0

    def grant(self) -> Any:
        answer = self.answers.pop(0) if self.answers else True
        if isinstance(answer, threading.Event):
            answer.wait(WAIT)
            return True
        return answer

    def add_listener(self, listener: Callable[[str], Any]) -> None:
        self.listeners.append(listener)

    def lock(self, path: str, identifier: str) -> Lock:
        assert path == PATH
        if self.lock_fails:
            self.lock_fails -= 1
            raise ClusterStateError("no session")
        lock = Lock(self, identifier)
        self.locks.append(lock)
        return lock

    def lock_contenders(self, path: str) -> list[str]:
        assert path == PATH
        self.contender_reads += 1
        if isinstance(self.contenders, BaseException):
            raise self.contenders
        return self.contenders

    def event(self, state: str) -> None:
        for listener in self.listeners:
            listener(state)


class Calls:
    def __init__(self, elected_fails: int = 0) -> None:
        self.log: list[str] = []
        self.elected_fails = elected_fails

    def elected(self) -> None:
        self.log.append("elected")
        if self.elected_fails:
            self.elected_fails -= 1
            raise RuntimeError("cannot take over")

    def deposed(self) -> None:
        self.log.append("deposed")


def leadership(storage: LockStorage, calls: Calls) -> Leadership:
    return Leadership(storage, PATH, "nimbus-a:6627", on_elected=calls.elected,  # type: ignore[arg-type]
                      on_deposed=calls.deposed)


@pytest.fixture
def cleanup() -> Any:
    started: list[Leadership] = []
    yield started
    for lead in started:
        lead.stop(WAIT)


def test_a_nimbus_elected_leads_and_names_itself_until_stopped(cleanup: list[Leadership]) -> None:
    storage, calls = LockStorage(), Calls()
    lead = leadership(storage, calls)
    assert not lead.is_leader()
    cleanup.append(lead.start())
    wait_for(lead.is_leader, WAIT, "the election")
    assert calls.log == ["elected"]
    assert lead.leader_address() == "nimbus-a:6627"
    assert lead.wait_settled(WAIT)
    [lock] = storage.locks
    assert lock.identifier == "nimbus-a:6627"
    lead.stop(WAIT)
    assert not lead.is_leader() and lock.cancelled and lock.released.is_set()
    assert calls.log == ["elected", "deposed"]


def test_a_suspended_connection_stops_leading_until_it_is_back(cleanup: list[Leadership]) -> None:
    storage, calls = LockStorage(), Calls()
    lead = leadership(storage, calls)
    cleanup.append(lead.start())
    wait_for(lead.is_leader, WAIT, "the election")
    storage.event("SUSPENDED")
    assert not lead.is_leader()
    storage.event("RECONNECTED")
    assert not lead.is_leader()
    storage.event("CONNECTED")
    assert lead.is_leader()
    storage.connected = False  # the client's own state is read too
    assert not lead.is_leader() and lead.leader_address() is None
    storage.connected = True
    assert calls.log == ["elected"]


def test_a_lost_session_deposes_the_leader_which_contends_again(cleanup: list[Leadership]) -> None:
    storage, calls = LockStorage(), Calls()
    lead = leadership(storage, calls)
    cleanup.append(lead.start())
    wait_for(lead.is_leader, WAIT, "the election")
    storage.event("LOST")
    assert not lead.is_leader()
    wait_for(lambda: calls.log == ["elected", "deposed", "elected"], WAIT, "a new term")
    assert storage.locks[0].released.is_set()
    wait_for(lead.is_leader, WAIT, "the new term")
    assert len(storage.locks) == 2


def test_a_failed_take_over_steps_down_and_contends_again(cleanup: list[Leadership]) -> None:
    storage, calls = LockStorage(), Calls(elected_fails=1)
    lead = leadership(storage, calls)
    cleanup.append(lead.start())
    wait_for(lead.is_leader, WAIT, "the second election")
    assert calls.log == ["elected", "elected"]
    assert storage.locks[0].released.is_set() and not storage.locks[1].released.is_set()


def test_a_failed_or_refused_lock_is_released_and_contended_for_again(cleanup: list[Leadership]) -> None:
    storage, calls = LockStorage([ClusterStateError("zk gone"), False]), Calls()
    storage.release_fails = True  # a failing release is only logged
    lead = leadership(storage, calls)
    cleanup.append(lead.start())
    wait_for(lead.is_leader, WAIT, "the third attempt")
    assert [lock.released.is_set() for lock in storage.locks] == [True, True, False]
    assert calls.log == ["elected"]


def test_a_nimbus_without_connection_waits_for_it_before_contending(cleanup: list[Leadership]) -> None:
    storage, calls = LockStorage(), Calls()
    storage.connected = False
    lead = leadership(storage, calls)
    cleanup.append(lead.start())
    assert not lead.wait_settled(0.3)
    assert storage.locks == [] and calls.log == []
    storage.connected = True
    wait_for(lead.is_leader, WAIT, "the election once connected")


def test_a_standby_names_the_first_contender_or_none(cleanup: list[Leadership]) -> None:
    storage, calls = LockStorage(), Calls()
    lead = leadership(storage, calls)  # not started: it contends for nothing
    assert lead.leader_address() is None
    storage.contenders = ["nimbus-b:6627", "nimbus-a:6627"]
    assert lead.leader_address() == "nimbus-b:6627"
    assert lead.wait_settled(WAIT)
    storage.contenders = ClusterStateError("cannot read")
    assert lead.leader_address() is None
    storage.contenders = OSError("reset")
    assert lead.leader_address() is None
    storage.contenders = ["nimbus-a:6627"]  # itself, but not leading yet: not settled
    assert not lead.wait_settled(0.2)


def test_waiting_for_the_leadership_gives_up_when_the_storage_shuts_down() -> None:
    storage, calls = LockStorage(), Calls()
    lead = leadership(storage, calls)
    storage.shutting_down = True
    assert not lead.wait_settled(WAIT)
    storage.shutting_down = False
    lead.stop(WAIT)  # never started: stopping asks nothing of the storage
    assert not lead.wait_settled(WAIT)
    assert calls.log == []


# -- replication -------------------------------------------------------------------------------------
class Tree:
    """ZooKeeper's tree of nodes as a dict (path → data), with the storage's reads and writes."""

    def __init__(self) -> None:
        self.nodes: dict[str, bytes] = {}
        self.writes: list[str] = []
        self.exists_reads = 0
        self.listed: list[list[str]] = []
        self.watches: list[tuple[str, Callable[[list[str]], Any], list[bool]]] = []

    def exists(self, path: str) -> bool:
        self.exists_reads += 1
        return path in self.nodes

    def watch_children(self, path: str, callback: Callable[[list[str]], Any]) -> Any:
        cancelled: list[bool] = []
        self.watches.append((path, callback, cancelled))
        callback(self.children(path))
        return SimpleNamespace(cancel=lambda: cancelled.append(True))

    def get(self, path: str) -> bytes | None:
        return self.nodes.get(path)

    def get_many(self, paths: list[str]) -> list[bytes | None]:
        return [self.get(p) for p in paths]

    def children(self, path: str) -> list[str]:
        return sorted({p[len(path) + 1:].split("/")[0] for p in self.nodes if p.startswith(path + "/")})

    def children_many(self, paths: list[str]) -> list[list[str]]:
        self.listed.append(list(paths))
        return [self.children(p) for p in paths]

    def set(self, path: str, data: bytes) -> None:
        self.writes.append(f"set {path}")
        self.nodes[path] = data

    def create_ephemeral(self, path: str, data: bytes) -> None:
        self.writes.append(f"ephemeral {path}")
        self.nodes[path] = data

    def delete(self, path: str) -> None:
        self.writes.append(f"delete {path}")
        for p in [p for p in self.nodes if p == path or p.startswith(path + "/")]:
            del self.nodes[p]


class ClusterOf:
    def __init__(self, *tids: str) -> None:
        self.paths = ZkPaths()
        self.storage = Tree()
        self.bases = {tid: StormBase(tid, tid, "active", 1, 0.0, "") for tid in tids}

    def storm_base(self, tid: str) -> StormBase | None:
        return self.bases.get(tid)

    def active_storms(self) -> list[str]:
        return sorted(self.bases)

    def nimbus_at(self, nimbus_id: str, address: str | None) -> None:
        host, _, port = (address or ":").partition(":")
        doc = {"host": host, "port": int(port)} if address else {"id": nimbus_id}
        self.storage.nodes[self.paths.nimbus(nimbus_id)] = encode_value(doc)


class Peer:
    """Another Nimbus as its client sees it: it serves ``bundle`` (or fails)."""

    def __init__(self, bundle: Path | None, sha256: str, served: list[str]) -> None:
        self.bundle, self.sha256, self.served = bundle, sha256, served

    def __enter__(self) -> Peer:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def topology_files(self, tid: str) -> dict[str, Any]:
        return {"bundle_sha256": self.sha256, "spec": {"components": {}}, "conf": {"topology.name": tid}}

    def download_bundle(self, tid: str, dest: Path) -> None:
        self.served.append(tid)
        if self.bundle is None:
            raise OSError("connection reset")
        Path(dest).write_bytes(self.bundle.read_bytes())


class Standby:
    """A Replicator of Nimbus ``n-b`` over a :class:`ClusterOf`; peers by address."""

    def __init__(self, tmp: Path, *tids: str, leading: bool = False, poll_secs: float = 60,
                 housekeeping: Callable[[], None] | None = None) -> None:
        self.cluster = ClusterOf(*tids)
        self.dirs = NimbusDirs(tmp / "b")
        self.store = BundleStore(self.dirs)
        self.peers: dict[str, Peer] = {}
        self.asked: list[str] = []
        self.leading = leading

        def client(address: str) -> Peer:
            self.asked.append(address)
            return self.peers[address]

        self.replicator = Replicator(self.cluster, self.store, self.dirs, "n-b",  # type: ignore[arg-type]
                                     client_factory=client, is_leader=lambda: self.leading,  # type: ignore[arg-type]
                                     leader_address=lambda: "host-c:6627", poll_secs=poll_secs,
                                     housekeeping=housekeeping)

    def hold(self, tmp: Path, tid: str, key: str = "k") -> str:
        staged = staged_bundle(tmp, key)
        self.store.install(tid, staged, {}, {})
        return staged.sha256

    @property
    def nodes(self) -> dict[str, bytes]:
        return self.cluster.storage.nodes


P = ZkPaths()


def test_a_copy_is_registered_once_with_its_sha256(tmp_path: Path) -> None:
    standby = Standby(tmp_path, "wc-1")
    sha = standby.hold(tmp_path, "wc-1")
    rep = standby.replicator
    rep.register("wc-1")
    rep.register("wc-1")
    assert standby.nodes == {P.replica("wc-1", "n-b"): sha.encode()}
    assert standby.cluster.storage.writes == [f"ephemeral {P.replica('wc-1', 'n-b')}"]
    del standby.nodes[P.replica("wc-1", "n-b")]  # the session went, and with it the node
    rep.register("wc-1")
    assert rep.holders("wc-1") == {"n-b": sha}
    assert rep.holder_counts(["wc-1", "wc-2"]) == {"wc-1": 1, "wc-2": 0}


def test_a_copy_of_a_topology_killed_meanwhile_is_not_left_registered(tmp_path: Path) -> None:
    standby = Standby(tmp_path)
    standby.hold(tmp_path, "wc-1")
    standby.nodes[P.blobstore("wc-1")] = b"sha"
    standby.replicator.register("wc-1")
    assert standby.nodes == {}
    standby.cluster.bases["wc-1"] = StormBase("wc-1", "wc", "active", 1, 0.0, "")
    standby.replicator.register("wc-1")  # forgotten: registered again
    assert list(standby.nodes) == [P.replica("wc-1", "n-b")]


def test_holders_and_counts_skip_nodes_without_data(tmp_path: Path) -> None:
    standby = Standby(tmp_path)
    standby.nodes.update({P.replica("wc-1", "n-a"): b"aa", P.replica("wc-1", "n-c"): b"",
                          P.replica("wc-2", "n-a"): b"\xffbb"})
    rep = standby.replicator
    assert rep.holders("wc-1") == {"n-a": "aa"}
    assert rep.holders("wc-2") == {"n-a": "\ufffdbb"}
    assert rep.holder_counts(["wc-2", "wc-1", "wc-3"]) == {"wc-2": 1, "wc-1": 1, "wc-3": 0}
    assert rep.holder_counts([]) == {}


def test_the_submitted_sha256_is_recorded_and_read_back(tmp_path: Path) -> None:
    standby = Standby(tmp_path, "wc-1")
    sha = standby.hold(tmp_path, "wc-1")
    assert standby.replicator.recorded_sha256("wc-1") is None
    standby.replicator.record_sha256("wc-1")
    assert standby.nodes[P.blobstore("wc-1")] == sha.encode()
    assert standby.replicator.recorded_sha256("wc-1") == sha
    standby.nodes[P.blobstore("wc-1")] = b""
    assert standby.replicator.recorded_sha256("wc-1") is None


def test_live_nimbuses_are_the_registered_ones_not_the_leader_lock(tmp_path: Path) -> None:
    standby = Standby(tmp_path)
    assert standby.replicator.live_nimbuses() == 0
    standby.cluster.nimbus_at("n-a", "host-a:6627")
    standby.cluster.nimbus_at("n-b", "host-b:6627")
    standby.nodes[P.nimbus_leader() + "/lock-1"] = b"host-a:6627"
    assert standby.replicator.live_nimbuses() == 2


def test_a_submit_waits_for_its_copies_and_says_what_is_missing(tmp_path: Path) -> None:
    leader = Standby(tmp_path, "wc-1", leading=True)
    sha = leader.hold(tmp_path, "wc-1")
    rep = leader.replicator
    assert rep.await_replicas("wc-1", 1, 0.1) is None
    assert leader.nodes[P.blobstore("wc-1")] == sha.encode()  # recorded for a later restore
    with pytest.raises(ReplicationError) as err:
        rep.await_replicas("wc-1", 2, 0.1)
    assert str(err.value) == ("topology wc-1: only 1 of the 2 Nimbus hosts required by "
                              "topology.min.replication.count hold its bundle: no more copies after "
                              "0.1 s (topology.max.replication.wait.time.sec); are the standby Nimbus "
                              "hosts running?")
    leader.cluster.nimbus_at("n-b", "host-b:6627")
    assert rep.await_replicas("wc-1", 2, 0.1, strict=False) == (
        "topology wc-1 was submitted, but only 1 of 2 Nimbus hosts hold its code (only 1 Nimbus host is "
        "running); if the leader dies before a standby copies it, the topology cannot be rescheduled until "
        "a supervisor that runs it sends its copy back")
    leader.cluster.nimbus_at("n-a", "host-a:6627")
    leader.cluster.nimbus_at("n-c", "host-c:6627")
    assert rep.await_replicas("wc-1", 4, 0.1, strict=False) == (
        "topology wc-1 was submitted, but only 1 of 4 Nimbus hosts hold its code (only 3 Nimbus hosts are "
        "running); if the leader dies before a standby copies it, the topology cannot be rescheduled until "
        "a supervisor that runs it sends its copy back")
    assert rep.await_replicas("wc-1", 3, 0.1, strict=False) == (
        "topology wc-1 was submitted, but only 1 of 3 Nimbus hosts hold its code (no more copies after "
        "0.1 s (topology.max.replication.wait.time.sec); are the standby Nimbus hosts running?); if the "
        "leader dies before a standby copies it, the topology cannot be rescheduled until a supervisor "
        "that runs it sends its copy back")
    leader.nodes[P.replica("wc-1", "n-a")] = sha.encode()
    assert rep.await_replicas("wc-1", 2, 5.0) is None


def test_a_stopping_nimbus_stops_waiting_for_copies(tmp_path: Path) -> None:
    leader = Standby(tmp_path, "wc-1", leading=True)
    leader.hold(tmp_path, "wc-1")
    leader.replicator.stop(WAIT)
    with pytest.raises(ReplicationError) as err:
        leader.replicator.await_replicas("wc-1", 2, WAIT)
    assert str(err.value) == "topology wc-1: this Nimbus is stopping"


def test_a_standby_copies_a_missing_bundle_from_the_leader_first(tmp_path: Path) -> None:
    source = staged_bundle(tmp_path / "src", "s")
    standby = Standby(tmp_path, "wc-1")
    cluster = standby.cluster
    for nid, address in (("n-a", "host-a:6627"), ("n-c", "host-c:6627"), ("n-d", None)):
        cluster.nimbus_at(nid, address)
        standby.nodes[P.replica("wc-1", nid)] = source.sha256.encode()
    standby.nodes[P.replica("wc-1", "n-e")] = source.sha256.encode()  # no record: skipped
    served: list[str] = []
    standby.peers["host-c:6627"] = Peer(None, source.sha256, served)  # the leader, failing
    standby.peers["host-a:6627"] = Peer(source.path, source.sha256, served)
    standby.replicator.sync()
    assert standby.asked == ["host-c:6627", "host-a:6627"]
    stored = standby.store.load("wc-1")
    assert (stored.bundle_sha256, stored.bundle_size) == (source.sha256, source.size)
    assert (stored.spec, stored.conf) == ({"components": {}}, {"topology.name": "wc-1"})
    assert standby.nodes[P.replica("wc-1", "n-b")] == source.sha256.encode()
    assert list(standby.dirs.uploads.iterdir()) == []  # no part file left
    writes = list(cluster.storage.writes)
    standby.replicator.sync()  # held and registered: nothing to do
    assert cluster.storage.writes == writes and standby.asked == ["host-c:6627", "host-a:6627"]


def test_a_copy_whose_sha256_differs_from_its_registration_is_not_taken(tmp_path: Path) -> None:
    source = staged_bundle(tmp_path / "src", "s")
    standby = Standby(tmp_path, "wc-1")
    standby.cluster.nimbus_at("n-a", "host-a:6627")
    standby.nodes[P.replica("wc-1", "n-a")] = b"0" * 64
    standby.peers["host-a:6627"] = Peer(source.path, source.sha256, [])
    standby.replicator.sync()
    assert not standby.store.exists("wc-1") and list(standby.dirs.uploads.iterdir()) == []


def test_a_held_copy_not_yet_registered_is_registered_by_a_pass(tmp_path: Path) -> None:
    standby = Standby(tmp_path, "wc-1")
    sha = standby.hold(tmp_path, "wc-1")
    standby.replicator.sync()
    assert standby.nodes == {P.replica("wc-1", "n-b"): sha.encode()}


def test_a_standby_drops_a_vanished_topology_after_two_passes_and_a_leader_never(tmp_path: Path) -> None:
    standby = Standby(tmp_path, "wc-1")
    standby.hold(tmp_path, "wc-1")
    standby.replicator.sync()
    del standby.cluster.bases["wc-1"]
    standby.replicator.sync()
    assert standby.store.exists("wc-1")
    standby.replicator.sync()
    assert not standby.store.exists("wc-1") and standby.nodes == {}
    leader = Standby(tmp_path / "l", leading=True)
    leader.hold(tmp_path / "l", "wc-2")
    for _ in range(3):
        leader.replicator.sync()
    assert leader.store.exists("wc-2")


@pytest.mark.parametrize(("nimbus_conf", "topo_conf", "target"), [
    ({}, {}, (1, False)),
    ({"nimbus.seeds": ["host-a", "host-b"]}, {}, (2, False)),
    ({"nimbus.seeds": ["host-a", "host-b", "host-c"]}, {}, (2, False)),
    ({"nimbus.seeds": "host-a"}, {}, (1, False)),
    ({"nimbus.seeds": ["host-a:7000", "host-a"], "nimbus.thrift.port": 7000}, {}, (1, False)),
    ({"nimbus.seeds": ["host-a", "host-b"], "topology.min.replication.count": 3}, {}, (3, True)),
    ({"topology.min.replication.count": 3}, {"topology.min.replication.count": 1}, (1, True)),
])
def test_the_copies_a_submit_waits_for(nimbus_conf: dict[str, Any], topo_conf: dict[str, Any],
                                       target: tuple[int, bool]) -> None:
    assert replication_target(nimbus_conf, topo_conf) == target


@pytest.mark.parametrize("count", [0, -1, "2", True, 1.5])
def test_a_replication_count_that_is_not_an_integer_of_at_least_one_is_refused(count: Any) -> None:
    with pytest.raises(SettingError) as err:
        replication_target({}, {"topology.min.replication.count": count})
    assert str(err.value) == ("topology.min.replication.count: must be an integer >= 1 (or unset), "
                              f"got {count!r}")


def test_counts_add_up_every_holder(tmp_path: Path) -> None:
    standby = Standby(tmp_path)
    standby.nodes.update({P.replica("wc-1", "n-a"): b"aa", P.replica("wc-1", "n-c"): b"aa"})
    assert standby.replicator.holder_counts(["wc-1"]) == {"wc-1": 2}
    standby.nodes[P.blobstore("wc-1")] = b"\xffsha"
    assert standby.replicator.recorded_sha256("wc-1") == "\ufffdsha"
    assert Standby(tmp_path / "x").replicator.poll_secs == 60


def test_the_default_pass_interval_is_five_seconds(tmp_path: Path) -> None:
    rep = Replicator(ClusterOf(), BundleStore(NimbusDirs(tmp_path)), NimbusDirs(tmp_path), "n-b",  # type: ignore[arg-type]
                     client_factory=lambda a: None, is_leader=lambda: False,  # type: ignore[arg-type,return-value]
                     leader_address=lambda: None)
    assert rep.poll_secs == 5.0


def test_passes_run_on_their_own_thread_when_a_topology_appears(tmp_path: Path) -> None:
    rounds: list[int] = []
    standby = Standby(tmp_path, poll_secs=3600, housekeeping=lambda: rounds.append(1))
    rep = standby.replicator.start()
    try:
        [(path, callback, cancelled)] = standby.cluster.storage.watches
        assert path == P.storms()
        assert any(t.name == "nimbus-replication" for t in threading.enumerate())
        wait_for(lambda: rounds, WAIT, "the first pass, woken by the watch")
        source = staged_bundle(tmp_path / "src", "s")
        standby.cluster.bases["wc-1"] = StormBase("wc-1", "wc", "active", 1, 0.0, "")
        standby.cluster.nimbus_at("n-a", "host-a:6627")
        standby.nodes[P.replica("wc-1", "n-a")] = source.sha256.encode()
        standby.peers["host-a:6627"] = Peer(source.path, source.sha256, [])
        callback(["wc-1"])
        wait_for(lambda: standby.store.exists("wc-1"), WAIT, "the copy, fetched by a woken pass")
    finally:
        rep.stop(WAIT)
    assert cancelled == [True]


def test_a_failing_pass_is_logged_as_a_warning_without_traceback_and_the_next_one_runs(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="stormpy.nimbus.replication")
    calls: list[int] = []

    def housekeeping() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise ClusterStateError("zk timed out")

    standby = Standby(tmp_path, poll_secs=0.01, housekeeping=housekeeping)
    standby.replicator.start()
    try:
        wait_for(lambda: len(calls) >= 2, WAIT, "a second pass")
    finally:
        standby.replicator.stop(WAIT)
    [record] = [r for r in caplog.records if "zk timed out" in r.getMessage()]
    assert record.name == "stormpy.nimbus.replication" and record.levelno == logging.WARNING
    assert record.exc_info is None


def test_a_pass_reads_no_registration_it_knows_stands_and_restores_one_that_went(tmp_path: Path) -> None:
    standby = Standby(tmp_path, "wc-1", "wc-2")
    standby.hold(tmp_path, "wc-1", "k1")
    standby.hold(tmp_path, "wc-2", "k2")
    standby.hold(tmp_path, "wc-3", "k3")  # held, never in ZooKeeper, never registered
    tree = standby.cluster.storage
    standby.replicator.sync()
    assert set(standby.nodes) == {P.replica("wc-1", "n-b"), P.replica("wc-2", "n-b")}
    del standby.cluster.bases["wc-2"]
    reads, tree.listed = tree.exists_reads, []
    standby.replicator.sync()
    assert tree.exists_reads == reads and tree.listed == [[P.blobstore("wc-1")]]
    del standby.nodes[P.replica("wc-1", "n-b")]  # its session went
    standby.replicator.sync()  # wc-2 and wc-3 missing twice: removed
    assert set(standby.nodes) == {P.replica("wc-1", "n-b")}
    assert standby.store.topology_ids() == ["wc-1"]


def test_copies_are_fetched_only_from_nimbus_hosts_that_registered_with_an_address(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="stormpy.nimbus.replication")
    source = staged_bundle(tmp_path / "src", "s")
    standby = Standby(tmp_path, "wc-1")
    cluster = standby.cluster
    for nid in ("n-0", "n-b", "n-c", "n-d"):  # n-0 has no record, n-b is this one
        standby.nodes[P.replica("wc-1", nid)] = source.sha256.encode()
    standby.nodes[P.nimbus("n-c")] = encode_value({"port": 6627})  # no host
    cluster.nimbus_at("n-d", "host-d:6627")
    served: list[str] = []
    standby.peers["host-d:6627"] = Peer(source.path, "e" * 64, served)
    standby.replicator.sync()
    assert standby.asked == ["host-d:6627"] and not standby.store.exists("wc-1")
    assert [r.getMessage() for r in caplog.records] == [
        f"cannot replicate topology wc-1 from Nimbus host-d:6627: Nimbus host-d:6627 serves sha256 "
        f"{'e' * 64}, its registered copy is {source.sha256}"]
    standby.peers["host-d:6627"] = Peer(source.path, source.sha256, served)
    standby.replicator.sync()
    assert served == ["wc-1"] and standby.store.exists("wc-1")
    standby.nodes[P.nimbus("n-d")] = b"\xc1"
    del standby.nodes[P.replica("wc-1", "n-b")]
    standby.store.remove("wc-1")
    with pytest.raises(MalformedStateError, match=P.nimbus("n-d")):
        standby.replicator.sync()


# -- leader election: more ---------------------------------------------------------------------------
def test_the_election_runs_on_its_own_named_thread_and_logs_on_the_modules_logger(
        cleanup: list[Leadership], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="stormpy.nimbus.leadership")
    storage, calls = LockStorage(), Calls()
    storage.lock_fails = 1
    lead = leadership(storage, calls)
    cleanup.append(lead.start())
    wait_for(lead.is_leader, WAIT, "the election after a failed round")
    assert any(t.name == "nimbus-election" for t in threading.enumerate())
    assert [(r.name, r.getMessage()) for r in caplog.records if r.exc_info] == [
        ("stormpy.nimbus.leadership", "nimbus-election: round failed (1 in a row)")]


def test_a_deposed_leader_waiting_for_the_lock_again_does_not_lead(cleanup: list[Leadership],
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="stormpy.nimbus.leadership")
    granted = threading.Event()
    storage, calls = LockStorage([True, granted]), Calls()
    lead = leadership(storage, calls)
    cleanup.append(lead.start())
    wait_for(lead.is_leader, WAIT, "the election")
    storage.event("LOST")
    wait_for(lambda: len(storage.locks) == 2, WAIT, "contending again")
    assert not lead.is_leader()
    assert [r.getMessage() for r in caplog.records] == [
        "this Nimbus (nimbus-a:6627) lost its ZooKeeper session and with it the leadership"]
    granted.set()
    wait_for(lead.is_leader, WAIT, "the second term")
    lead.stop(WAIT)
    assert len(caplog.records) == 1  # stopping is not losing the session


def test_waiting_for_the_leadership_ends_at_once_when_stopping() -> None:
    storage, calls = LockStorage(), Calls()
    lead = leadership(storage, calls)
    storage.shutting_down = True
    assert not lead.wait_settled(FOREVER)
    assert storage.contender_reads == 1  # asked once, then given up on: not polled until the timeout
    storage.shutting_down = False
    lead.stop(WAIT)
    assert not lead.wait_settled(FOREVER)
    assert storage.contender_reads == 2
