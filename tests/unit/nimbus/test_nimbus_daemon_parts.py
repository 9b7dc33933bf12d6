"""The Nimbus daemon: the id it keeps across restarts, its summary before it serves, the address it
binds, stopping one that never started; and a whole Nimbus started in-process over a stand-in of
ZooKeeper (znodes in a dict, a leader lock the test grants or holds), its RPC server on a loopback
port: it leads, serves, registers itself, watches supervisors, steps down and leads again, stands
by naming the leader, asks for the shared secret, and refuses a bad setting leaving nothing."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from nimbus_fakes import FakeClusterState, SimClock, staged_bundle

from stormpy import __version__
from stormpy.cluster import ClusterStateError, WorkerHeartbeat
from stormpy.cluster.paths import ZkPaths
from stormpy.cluster.records import decode_value
from stormpy.nimbus import daemon as daemon_mod
from stormpy.nimbus.daemon import Nimbus, bind_address, run_nimbus
from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.recovery import NO_CODE
from stormpy.rpc.client import RpcClient
from stormpy.rpc.curve import write_secret_key_file
from stormpy.rpc.errors import AuthorizationError, NotLeaderError, RpcError, UploadError
from stormpy.testing import wait_for
from wordcount import build


def test_a_nimbus_keeps_its_id_across_restarts(tmp_path: Path) -> None:
    conf = {"storm.local.dir": str(tmp_path)}
    first = Nimbus(conf)._load_nimbus_id()
    assert re.fullmatch(r"nimbus-[0-9a-f]{12}", first)
    id_file = NimbusDirs(tmp_path).id_file
    assert id_file.read_text() == first + "\n"
    assert Nimbus(conf)._load_nimbus_id() == first
    id_file.write_text("  \n")  # an emptied id file: a new id, written down again
    second = Nimbus(conf)._load_nimbus_id()
    assert second != first and id_file.read_text() == second + "\n"


def test_the_summary_of_a_nimbus_that_does_not_serve_yet(tmp_path: Path) -> None:
    now = [500.0]
    nimbus = Nimbus({"storm.local.dir": str(tmp_path), "nimbus.host": "10.0.0.7", "nimbus.thrift.port": 7001},
                    clock=lambda: now[0])
    nimbus.started_at = 487.66
    assert nimbus.info() == {"id": "", "host": "10.0.0.7", "port": 7001, "version": __version__,
                             "leader": False, "start_time": 487.66, "uptime_secs": 12.3}
    assert nimbus.leader_address() is None and not nimbus.is_leader()
    with pytest.raises(RuntimeError, match="^Nimbus is not running$"):
        _ = nimbus.port


@pytest.mark.parametrize(("host", "bound"), [("*", "*"), ("", "0.0.0.0"), ("10.1.2.3", "10.1.2.3"),
                                             ("::1", "::1"), ("localhost", "127.0.0.1")])
def test_the_address_a_nimbus_binds(host: str, bound: str) -> None:
    assert bind_address(host) == bound


def test_stopping_a_nimbus_that_never_started_is_harmless_and_idempotent(tmp_path: Path) -> None:
    nimbus = Nimbus({"storm.local.dir": str(tmp_path)})
    nimbus.stop()
    nimbus.stop()
    assert nimbus.stop_requested
    assert (nimbus.server, nimbus.state, nimbus.leadership, nimbus.replicator) == (None, None, None, None)


# -- a whole Nimbus over a stand-in of ZooKeeper -----------------------------------------------------
class Election:
    """The leader lock: taken when free, else waited for until its holder lets go or the wait is
    cancelled."""

    def __init__(self, storage: StandInStorage, identifier: str) -> None:
        self.storage, self.identifier = storage, identifier
        self.cancelled = threading.Event()

    def acquire(self, blocking: bool = True) -> bool:
        while not self.cancelled.wait(0.01):
            with self.storage.guard:
                if self.storage.holder in (None, self.identifier):
                    self.storage.holder = self.identifier
                    return True
        return False

    def release(self) -> None:
        with self.storage.guard:
            if self.storage.holder == self.identifier:
                self.storage.holder = None

    def cancel(self) -> None:
        self.cancelled.set()


class StandInStorage:
    """The ZooKeeper storage a Nimbus uses: znodes in a dict, the leader lock, the listeners."""

    def __init__(self) -> None:
        self.nodes: dict[str, bytes] = {}
        self.connected = True
        self.shutting_down = False
        self.guard = threading.Lock()
        self.holder: str | None = None
        self.listeners: list[Callable[[str], Any]] = []

    def add_listener(self, listener: Callable[[str], Any]) -> None:
        self.listeners.append(listener)

    def lock(self, path: str, identifier: str) -> Election:
        assert path == ZkPaths().nimbus_leader()
        return Election(self, identifier)

    def lock_contenders(self, path: str) -> list[str]:
        assert path == ZkPaths().nimbus_leader()
        return [self.holder] if self.holder else []

    def create_ephemeral(self, path: str, data: bytes) -> None:
        self.nodes[path] = data

    def set(self, path: str, data: bytes) -> None:
        self.nodes[path] = data

    def get(self, path: str) -> bytes | None:
        return self.nodes.get(path)

    def exists(self, path: str) -> bool:
        return path in self.nodes

    def delete(self, path: str) -> None:
        for p in [p for p in self.nodes if p == path or p.startswith(path + "/")]:
            del self.nodes[p]

    def children(self, path: str) -> list[str]:
        return sorted({p[len(path) + 1:].split("/")[0] for p in self.nodes if p.startswith(path + "/")})

    def children_many(self, paths: list[str]) -> list[list[str]]:
        return [self.children(p) for p in paths]

    def get_many(self, paths: list[str]) -> list[bytes | None]:
        return [self.get(p) for p in paths]

    def watch_children(self, path: str, callback: Callable[[list[str]], Any]) -> Any:
        callback(self.children(path))
        return SimpleNamespace(cancel=lambda: None)


class StandInState(FakeClusterState):
    def __init__(self, storage: StandInStorage) -> None:
        super().__init__()
        self.paths = ZkPaths()
        self.storage = storage
        self.closed = False
        self.watching: list[Callable[[list[str]], Any]] = []
        self.watch_fails = False

    def ensure_layout(self) -> None:
        pass

    def begin_shutdown(self) -> None:
        self.storage.shutting_down = True

    def close(self) -> None:
        self.closed = True

    def watch_supervisor_ids(self, callback: Callable[[list[str]], Any]) -> Any:
        if self.watch_fails:
            raise ClusterStateError("cannot watch")
        self.watching.append(callback)
        return SimpleNamespace(cancel=lambda: self.watching.remove(callback))


WAIT = 20.0


@pytest.fixture
def zk(monkeypatch: pytest.MonkeyPatch) -> StandInState:
    state = StandInState(StandInStorage())

    def connect(conf: Any, stop: Any, logger: Any) -> StandInState:
        # what a real connection is given: the daemon's whole config, its stop flag, its logger
        assert conf["nimbus.thrift.port"] == 0 and "nimbus.monitor.freq.secs" in conf
        assert isinstance(stop, threading.Event) and not stop.is_set()
        assert logger is logging.getLogger("stormpy.nimbus.daemon")
        state.storage.shutting_down = False
        return state

    monkeypatch.setattr(daemon_mod, "connect_at_start", connect)
    return state


def conf_in(tmp: Path, **extra: Any) -> dict[str, Any]:
    return {"storm.local.dir": str(tmp), "nimbus.host": "127.0.0.1", "nimbus.thrift.port": 0,
            "storm.zookeeper.connection.timeout": 5000, **extra}


def test_a_started_nimbus_leads_serves_and_registers_itself(tmp_path: Path, zk: StandInState) -> None:
    leftover = NimbusDirs(tmp_path).uploads / "u1.part"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"half")
    with Nimbus(conf_in(tmp_path)) as nimbus:
        wait_for(nimbus.is_leader, WAIT, "the election")
        assert nimbus.leader_address() == nimbus.address == f"127.0.0.1:{nimbus.port}"
        assert not leftover.exists()
        record = decode_value(zk.storage.nodes[zk.paths.nimbus(nimbus.nimbus_id)], "record")
        assert (record["id"], record["host"], record["port"]) == (nimbus.nimbus_id, "127.0.0.1", nimbus.port)
        with RpcClient("127.0.0.1", nimbus.port) as client:
            assert client.call("get_leader") == {"leader": nimbus.address, "is_leader": True,
                                                 "self": nimbus.address}
            assert client.call("get_daemon_stats")["rpc"]["calls"] == {"get_leader": 1}
        assert nimbus.monitor is not None and nimbus.monitor.running
        assert zk.watching  # a vanished supervisor wakes the monitor
        assert {t.name for t in threading.enumerate()} >= {"nimbus-election", "nimbus-replication"}
    assert zk.closed and nimbus.server is None and nimbus.monitor is None and not zk.watching


def test_a_standby_refuses_writes_naming_the_leader_and_stops_promptly(tmp_path: Path,
                                                                      zk: StandInState) -> None:
    zk.storage.holder = "nimbus-z:6627"
    with Nimbus(conf_in(tmp_path)) as nimbus:
        assert not nimbus.is_leader() and nimbus.leader_address() == "nimbus-z:6627"
        with RpcClient("127.0.0.1", nimbus.port) as client, pytest.raises(NotLeaderError) as err:
            client.call("kill_topology", name="wc")
        assert str(err.value).startswith("not the leader, leader is nimbus-z:6627 (kill_topology ")
        assert nimbus.monitor is None


def test_a_nimbus_asks_for_the_shared_secret_when_one_is_set(tmp_path: Path, zk: StandInState) -> None:
    with Nimbus(conf_in(tmp_path, **{"nimbus.rpc.auth.token": "s3cret"})) as nimbus:
        with RpcClient("127.0.0.1", nimbus.port) as client, pytest.raises(AuthorizationError):
            client.call("get_leader")
        with RpcClient("127.0.0.1", nimbus.port, auth_token="s3cret") as client:
            assert client.call("get_leader")["self"] == nimbus.address


def test_a_nimbus_refuses_to_start_without_handler_threads_and_leaves_nothing(tmp_path: Path,
                                                                             zk: StandInState) -> None:
    nimbus = Nimbus(conf_in(tmp_path, **{"nimbus.rpc.handler.threads": 0}))
    with pytest.raises(ValueError) as err:
        nimbus.start()
    assert str(err.value) == "nimbus.rpc.handler.threads must be at least 1, got 0"
    assert zk.closed and nimbus.server is None and nimbus.state is None


def test_a_deposed_leader_stops_its_monitor_and_leads_again_when_elected(tmp_path: Path,
                                                                        zk: StandInState) -> None:
    with Nimbus(conf_in(tmp_path)) as nimbus:
        wait_for(nimbus.is_leader, WAIT, "the election")  # once elected, the monitor runs
        first = nimbus.monitor
        assert first is not None and first.running
        for listener in zk.storage.listeners:
            listener("LOST")
        wait_for(lambda: nimbus.monitor not in (first, None) and nimbus.is_leader(), WAIT, "a new term")
        assert not first.running


def test_a_leader_that_cannot_watch_supervisors_still_leads(tmp_path: Path, zk: StandInState,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="stormpy.nimbus.daemon")
    zk.watch_fails = True
    with Nimbus(conf_in(tmp_path)) as nimbus:
        wait_for(nimbus.is_leader, WAIT, "the election")
        assert nimbus.monitor is not None and nimbus.monitor.running
        assert [r.getMessage() for r in caplog.records] == [
            "cannot watch the supervisors (the monitor notices a lost one at its next round): cannot watch"]



def submit_over_rpc(tmp: Path, port: int, name: str = "wc") -> str:
    """Upload the example word count's bundle and submit it through the RPC methods; its id."""
    data = staged_bundle(tmp, name).path.read_bytes()
    with RpcClient("127.0.0.1", port) as client:
        begun = client.call("begin_upload", size=len(data))
        client.call("upload_chunk", upload_id=begun["upload_id"], data=data, offset=0)
        key = client.call("finish_upload", upload_id=begun["upload_id"],
                          sha256=hashlib.sha256(data).hexdigest())["bundle_key"]
        answer = client.call("submit_topology", name=name, bundle_key=key,
                             spec=build(10).create_topology().to_doc(), conf={"topology.workers": 1})
    assert answer["warnings"] == []
    return str(answer["topology_id"])


def test_a_restarted_nimbus_resumes_its_topologies_and_asks_for_code_it_lost(tmp_path: Path,
                                                                            zk: StandInState) -> None:
    zk.add_supervisor("sup-a", [6700])
    with Nimbus(conf_in(tmp_path / "a")) as first:
        wait_for(first.is_leader, WAIT, "the election")
        tid = submit_over_rpc(tmp_path, first.port)
        nid = first.nimbus_id
        sha = first.manager.stored(tid).bundle_sha256  # type: ignore[union-attr]
        assert zk.storage.nodes[zk.paths.replica(tid, nid)] == sha.encode()  # its copy, registered
        assert zk.storage.nodes[zk.paths.blobstore(tid)] == sha.encode()  # recorded for a restore
    del zk.storage.nodes[zk.paths.replica(tid, nid)]  # its session went with it
    with Nimbus(conf_in(tmp_path / "a")) as again:  # the same local dir: its store holds the code
        wait_for(again.is_leader, WAIT, "the take-over")
        assert again.nimbus_id == nid
        assert again.manager.base_by_name("wc").topology_id == tid  # type: ignore[union-attr]
        assert zk.paths.bundle_wanted(tid) not in zk.storage.nodes
    del zk.storage.nodes[zk.paths.replica(tid, nid)]
    with Nimbus(conf_in(tmp_path / "b")) as lost:  # another disk: no Nimbus holds the code now
        wait_for(lost.is_leader, WAIT, "the take-over")
        assert lost.manager.base_by_name("wc").topology_id == tid  # type: ignore[union-attr]
        assert zk.paths.bundle_wanted(tid) in zk.storage.nodes
        with RpcClient("127.0.0.1", lost.port) as client:
            [topology] = client.call("get_cluster_info")["topologies"]
        assert topology["degraded"] == NO_CODE


def test_a_standby_replicates_the_leaders_bundles_and_takes_over_with_them(tmp_path: Path,
                                                                          zk: StandInState) -> None:
    zk.add_supervisor("sup-a", [6700, 6701])
    fast = {"nimbus.monitor.freq.secs": 0.05}
    with Nimbus(conf_in(tmp_path / "a", **fast)) as leader:
        wait_for(leader.is_leader, WAIT, "the election")
        standby = Nimbus(conf_in(tmp_path / "b", **fast)).start()
        try:
            assert not standby.is_leader() and standby.leader_address() == leader.address
            tid = submit_over_rpc(tmp_path, leader.port)
            sha = leader.manager.stored(tid).bundle_sha256  # type: ignore[union-attr]
            wait_for(lambda: standby.manager.store.exists(tid), WAIT, "the standby's copy")  # type: ignore[union-attr]
            assert standby.manager.stored(tid).bundle_sha256 == sha  # type: ignore[union-attr]
            wait_for(lambda: zk.paths.replica(tid, standby.nimbus_id) in zk.storage.nodes, WAIT,
                     "the standby's registration")
            with RpcClient("127.0.0.1", standby.port) as client, pytest.raises(NotLeaderError) as err:
                client.call("kill_topology", name="wc")
            assert f"leader is {leader.address}" in str(err.value)
        except BaseException:
            standby.stop()
            raise
    del zk.storage.nodes[zk.paths.replica(tid, leader.nimbus_id)]  # the leader's session went
    try:
        wait_for(lambda: standby.monitor is not None and standby.is_leader(), WAIT, "the standby's take-over")
        assert standby.leader_address() == standby.address
        with RpcClient("127.0.0.1", standby.port) as client:
            [topology] = client.call("get_cluster_info")["topologies"]
            assert (topology["id"], topology["degraded"]) == (tid, None)
            client.call("kill_topology", name="wc", wait_secs=0)
            assert client.call("get_cluster_info")["topologies"] == []
    finally:
        standby.stop()


def test_the_settings_a_nimbus_serves_with(tmp_path: Path, zk: StandInState) -> None:
    clock = SimClock(5000.0)
    conf = conf_in(tmp_path, **{"nimbus.upload.chunk.size.bytes": 1234, "nimbus.max.bundle.size.bytes": 5000,
                                "nimbus.rpc.handler.threads": 1, "nimbus.rpc.auth.token": None,
                                "topology.message.timeout.secs": 7})
    zk.add_supervisor("sup-a", [6700])
    with Nimbus(conf, clock=clock) as nimbus:
        wait_for(nimbus.is_leader, WAIT, "the election")
        assert {t.name for t in threading.enumerate()} >= {"nimbus-rpc-io", "nimbus-rpc-worker-0"}
        with RpcClient("127.0.0.1", nimbus.port) as client:
            assert client.call("begin_upload", size=10)["chunk_size"] == 1234
            with pytest.raises(UploadError) as err:
                client.call("begin_upload", size=5001)
            assert str(err.value) == ("bundle of 5001 bytes exceeds the limit of 5000 bytes "
                                      "(nimbus.max.bundle.size.bytes)")
            assert client.call("get_nimbus_conf")["topology.message.timeout.secs"] == 7
            beat = WorkerHeartbeat("t-1", "sup-a", 6700, 1.0, 1.0)
            assert client.call("send_supervisor_worker_heartbeats", supervisor_id="sup-a",
                               heartbeats=[beat.to_doc()]) == {"recorded": 1}
        assert nimbus.worker_beats.topology("t-1") == {("sup-a", 6700): beat}  # what the monitor judges
        clock.advance(12.34)
        info = nimbus.info()
        assert (info["start_time"], info["uptime_secs"], info["leader"]) == (5000.0, 12.3, True)
        tid = submit_over_rpc(tmp_path, nimbus.port)
        assert nimbus.manager.records.storm_base(tid).launch_time == 5012.34  # type: ignore[union-attr]


def test_a_nimbus_that_sees_no_leader_in_time_says_so_and_keeps_serving(
        tmp_path: Path, zk: StandInState, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="stormpy.nimbus.daemon")
    zk.storage.connected = False  # it cannot contend, and it reads no leader
    with Nimbus(conf_in(tmp_path, **{"storm.zookeeper.connection.timeout": 100})) as nimbus:
        assert [r.getMessage() for r in caplog.records] == [
            "no Nimbus leader elected yet; this one keeps contending"]
        with RpcClient("127.0.0.1", nimbus.port) as client:
            assert client.call("get_leader")["leader"] is None


@pytest.fixture
def root_logging() -> Any:
    """The root logger's handlers and level, restored after a test that runs ``run_nimbus`` (it
    logs the whole process to its file, as ``stormpy nimbus`` does)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level)


def test_run_nimbus_logs_to_its_file_and_says_why_it_cannot_start(tmp_path: Path, zk: StandInState,
                                                                 root_logging: None) -> None:
    said: list[str] = []
    conf = conf_in(tmp_path, **{"nimbus.rpc.handler.threads": 0, "storm.log.dir": str(tmp_path / "logs")})
    assert run_nimbus(conf, echo=said.append) == 1
    log_path = tmp_path / "logs" / "nimbus.log"
    assert said == ["error: Nimbus failed to start: nimbus.rpc.handler.threads must be at least 1, got 0 "
                    f"(log: {log_path})"]
    text = log_path.read_text()
    assert " ERROR [nimbus] " in text and "Nimbus failed to start" in text
    assert "ValueError: nimbus.rpc.handler.threads must be at least 1, got 0" in text  # the traceback
    assert zk.closed


def rounds_of(nimbus: Nimbus) -> int:
    monitor = nimbus.monitor
    return monitor._service.rounds if monitor is not None else 0


def wait_rounds(nimbus: Nimbus, n: int) -> None:
    """Wait until the leader's monitor ran ``n`` more rounds."""
    seen = rounds_of(nimbus)
    wait_for(lambda: rounds_of(nimbus) >= seen + n, WAIT, f"{n} monitor rounds")


def test_sessions_follow_the_settings_and_the_nimbus_clock(tmp_path: Path, zk: StandInState) -> None:
    clock = SimClock(5000.0)
    zk.add_supervisor("sup-a", [6700])
    conf = conf_in(tmp_path, **{"nimbus.monitor.freq.secs": 0.02, "nimbus.file.copy.expiration.secs": 60,
                                "nimbus.upload.idle.secs": 30, "nimbus.upload.chunk.size.bytes": 1000,
                                "nimbus.upload.max.sessions.per.client": 1})
    with Nimbus(conf, clock=clock) as nimbus, RpcClient("127.0.0.1", nimbus.port) as client:
        wait_for(nimbus.is_leader, WAIT, "the election")
        tid = submit_over_rpc(tmp_path, nimbus.port)
        download = client.call("begin_download", bundle_key=tid)
        assert download["chunk_size"] == 1000
        upload = client.call("begin_upload", size=10)["upload_id"]
        with pytest.raises(UploadError, match="^begin_upload refused: "):
            client.call("begin_upload", size=10)  # one session per client
        clock.advance(31)  # idle uploads go after 30 s, downloads after 60 s
        seen = rounds_of(nimbus)
        wait_for(lambda: rounds_of(nimbus) >= seen + 2, WAIT, "two monitor rounds")
        with pytest.raises(UploadError, match="^unknown upload id"):
            client.call("upload_chunk", upload_id=upload, data=b"x", offset=0)
        assert nimbus.downloads.open_sessions == 1  # type: ignore[union-attr]
        clock.advance(30)
        seen = rounds_of(nimbus)
        wait_for(lambda: rounds_of(nimbus) >= seen + 2, WAIT, "two monitor rounds")
        with pytest.raises(UploadError, match="^unknown download id"):
            client.call("download_chunk", download_id=download["download_id"], offset=0)


def test_one_upload_session_at_a_time_when_the_nimbus_allows_one(tmp_path: Path, zk: StandInState) -> None:
    with Nimbus(conf_in(tmp_path, **{"nimbus.upload.max.sessions": 1})) as nimbus:
        wait_for(nimbus.is_leader, WAIT, "the election")
        client = RpcClient("127.0.0.1", nimbus.port)
        client.call("begin_upload", size=10)
        with pytest.raises(UploadError, match="^begin_upload refused: "):
            client.call("begin_upload", size=10)
        client.close()


def test_kill_waits_are_timed_on_the_nimbus_clock(tmp_path: Path, zk: StandInState) -> None:
    clock = SimClock(5000.0)
    zk.add_supervisor("sup-a", [6700])
    with Nimbus(conf_in(tmp_path, **{"nimbus.monitor.freq.secs": 0.02}), clock=clock) as nimbus:
        wait_for(nimbus.is_leader, WAIT, "the election")
        tid = submit_over_rpc(tmp_path, nimbus.port)
        with RpcClient("127.0.0.1", nimbus.port) as client:
            client.call("kill_topology", name="wc", wait_secs=10)
        seen = rounds_of(nimbus)
        wait_for(lambda: rounds_of(nimbus) >= seen + 3, WAIT, "three monitor rounds")
        assert zk.bases[tid].status == "killed"  # 10 s have not passed on the Nimbus's clock
        clock.advance(10)
        wait_for(lambda: tid not in zk.bases, WAIT, "the kill after its wait")


def test_a_bundle_lost_while_leading_is_asked_back_from_the_supervisors(tmp_path: Path,
                                                                       zk: StandInState) -> None:
    zk.add_supervisor("sup-a", [6700])
    with Nimbus(conf_in(tmp_path, **{"nimbus.monitor.freq.secs": 0.02})) as nimbus:
        wait_for(nimbus.is_leader, WAIT, "the election")
        tid = submit_over_rpc(tmp_path, nimbus.port)
        zk.storage.delete(zk.paths.replica(tid, nimbus.nimbus_id))
        nimbus.manager.store.remove(tid)  # type: ignore[union-attr]
        wait_for(lambda: zk.paths.bundle_wanted(tid) in zk.storage.nodes, WAIT, "the request")
        [callback] = zk.watching
        callback(["sup-a"])  # a supervisor change wakes the monitor
        seen = rounds_of(nimbus)
        wait_for(lambda: rounds_of(nimbus) > seen, WAIT, "a round")


def test_a_deposed_leader_forgets_its_waits_and_expires_what_it_served_as_standby(
        tmp_path: Path, zk: StandInState, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="stormpy.nimbus.daemon")
    clock = SimClock(5000.0)
    zk.add_supervisor("sup-a", [6700])
    with Nimbus(conf_in(tmp_path, **{"nimbus.monitor.freq.secs": 0.02}), clock=clock) as nimbus:
        wait_for(nimbus.is_leader, WAIT, "the election")
        tid = submit_over_rpc(tmp_path, nimbus.port)
        with RpcClient("127.0.0.1", nimbus.port) as client:
            client.call("kill_topology", name="wc", wait_secs=100)
            upload = client.call("begin_upload", size=10)["upload_id"]
            download = client.call("begin_download", bundle_key=tid)["download_id"]
            assert nimbus.manager.timers.get(tid) is not None  # type: ignore[union-attr]
            with zk.storage.guard:
                zk.storage.holder = "nimbus-z:6627"  # another Nimbus leads once this one is deposed
            for listener in zk.storage.listeners:
                listener("LOST")
            wait_for(lambda: nimbus.monitor is None and not nimbus.is_leader(), WAIT, "standing by")
            assert nimbus.manager.timers.get(tid) is None  # type: ignore[union-attr]
            clock.advance(601)  # past the idle and expiration times: the standby's passes expire them
            wait_for(lambda: nimbus.downloads.open_sessions == 0, WAIT, "the download expired")  # type: ignore[union-attr]
            wait_for(lambda: nimbus.uploads.open_sessions == 0, WAIT, "the upload expired")  # type: ignore[union-attr]
            with pytest.raises(UploadError, match="^unknown download id"):
                client.call("download_chunk", download_id=download, offset=0)
            assert upload
    stopped = [r.getMessage() for r in caplog.records if r.getMessage().endswith(" stopped")]
    assert stopped == [f"Nimbus {nimbus.nimbus_id} stopped"]
    nimbus.stop()
    assert [r.getMessage() for r in caplog.records if r.getMessage().endswith(" stopped")] == stopped


def test_a_submit_during_stop_is_told_nimbus_is_stopping(tmp_path: Path, zk: StandInState) -> None:
    nimbus = Nimbus(conf_in(tmp_path)).start()
    nimbus.stop()
    with pytest.raises(RuntimeError, match="^Nimbus is stopping$"):
        nimbus._await_replicas("wc-1", 1, 1.0, False)


def test_the_default_replication_count_not_met_is_a_warning_not_a_refusal(tmp_path: Path,
                                                                         zk: StandInState) -> None:
    zk.add_supervisor("sup-a", [6700])
    conf = conf_in(tmp_path, **{"nimbus.seeds": ["127.0.0.1", "10.9.9.9"],
                                "topology.max.replication.wait.time.sec": 0.1})
    with Nimbus(conf) as nimbus:
        wait_for(nimbus.is_leader, WAIT, "the election")
        data = staged_bundle(tmp_path, "wc").path.read_bytes()
        with RpcClient("127.0.0.1", nimbus.port) as client:
            begun = client.call("begin_upload", size=len(data))
            client.call("upload_chunk", upload_id=begun["upload_id"], data=data, offset=0)
            key = client.call("finish_upload", upload_id=begun["upload_id"],
                              sha256=hashlib.sha256(data).hexdigest())["bundle_key"]
            answer = client.call("submit_topology", name="wc", bundle_key=key,
                                 spec=build(10).create_topology().to_doc(), conf={"topology.workers": 1})
        [warning] = answer["warnings"]
        assert warning.startswith(f"topology {answer['topology_id']} was submitted, but only 1 of 2 Nimbus "
                                  "hosts hold its code (only 1 Nimbus host is running)")


def test_a_nimbus_id_is_kept_under_a_local_dir_that_does_not_exist_yet(tmp_path: Path) -> None:
    nimbus_id = Nimbus({"storm.local.dir": str(tmp_path / "new" / "dir")})._load_nimbus_id()
    assert (tmp_path / "new" / "dir" / "nimbus" / "nimbus-id").read_text() == nimbus_id + "\n"


def test_run_nimbus_serves_until_sigterm_and_exits_cleanly(tmp_path: Path, zk: StandInState,
                                                          root_logging: None) -> None:
    said: list[str] = []

    def echo(line: str) -> None:
        said.append(line)
        if line.startswith("Nimbus serving on "):
            os.kill(os.getpid(), signal.SIGTERM)  # what `kill` or the service manager sends

    conf = conf_in(tmp_path, **{"storm.log.dir": str(tmp_path / "logs")})
    assert run_nimbus(conf, echo=echo) == 0
    [line] = said
    log_path = re.escape(str(tmp_path / "logs" / "nimbus.log"))
    assert re.fullmatch(rf"Nimbus serving on 127\.0\.0\.1:\d+ \(log: {log_path}\); "
                        "SIGTERM or Ctrl-C stops it", line)
    assert zk.closed


def test_a_stop_request_puts_the_cluster_state_into_shutdown_at_once(tmp_path: Path,
                                                                    zk: StandInState) -> None:
    with Nimbus(conf_in(tmp_path)) as nimbus:
        nimbus.request_stop()  # e.g. from a signal handler, while a call waits on ZooKeeper
        assert zk.storage.shutting_down and nimbus.stop_requested


def test_a_nimbus_with_a_curve_key_serves_only_clients_that_pin_it(tmp_path: Path,
                                                                  zk: StandInState) -> None:
    key_file = tmp_path / "nimbus.key"
    public = write_secret_key_file(key_file)
    with Nimbus(conf_in(tmp_path, **{"nimbus.rpc.curve.secret.key.file": str(key_file)})) as nimbus:
        with RpcClient("127.0.0.1", nimbus.port, curve_server_key=public) as client:
            assert client.call("get_leader")["self"] == nimbus.address
        with RpcClient("127.0.0.1", nimbus.port, timeout_secs=5, retries=0) as plain, pytest.raises(RpcError):
            plain.call("get_leader")


def test_requests_of_a_few_megabytes_reach_the_nimbus_methods(tmp_path: Path, zk: StandInState) -> None:
    with Nimbus(conf_in(tmp_path)) as nimbus, RpcClient("127.0.0.1", nimbus.port) as client:
        wait_for(nimbus.is_leader, WAIT, "the election")
        upload = client.call("begin_upload", size=10)["upload_id"]
        with pytest.raises(UploadError) as err:  # the upload's own check, not the RPC layer's bound
            client.call("upload_chunk", upload_id=upload, data=b"x" * 2_000_000, offset=0)
        assert str(err.value) == f"upload {upload}: received more than the declared 10 bytes; upload aborted"


def test_the_heartbeats_supervisors_send_are_what_the_leaders_monitor_judges(tmp_path: Path,
                                                                            zk: StandInState) -> None:
    clock = SimClock(5000.0)
    zk.add_supervisor("sup-a", [6700, 6701])
    conf = conf_in(tmp_path, **{"nimbus.monitor.freq.secs": 0.02, "nimbus.task.timeout.secs": 30,
                                "nimbus.task.launch.secs": 20})
    with Nimbus(conf, clock=clock) as nimbus, RpcClient("127.0.0.1", nimbus.port) as client:
        wait_for(nimbus.is_leader, WAIT, "the election")
        tid = submit_over_rpc(tmp_path, nimbus.port)
        [(slot, executors)] = zk.assigns[tid].workers().items()
        for _ in range(8):  # 80 s of a worker that heartbeats every 10 s
            clock.advance(10)
            beat = WorkerHeartbeat(tid, slot[0], slot[1], clock(), 1.0, tuple(executors))
            client.call("send_supervisor_worker_heartbeats", supervisor_id="sup-a",
                        heartbeats=[beat.to_doc()])
            wait_rounds(nimbus, 2)
        assert list(zk.assigns[tid].workers()) == [slot]  # alive: never moved


def test_a_new_leader_fetches_the_bundles_it_lacks_before_it_resumes(tmp_path: Path,
                                                                     zk: StandInState) -> None:
    zk.add_supervisor("sup-a", [6700])
    with Nimbus(conf_in(tmp_path / "a")) as first:
        wait_for(first.is_leader, WAIT, "the election")
        # a standby that looks for new topologies only hourly: it has not copied the next one
        with Nimbus(conf_in(tmp_path / "b", **{"nimbus.monitor.freq.secs": 3600})) as second:
            tid = submit_over_rpc(tmp_path, first.port)
            assert not second.manager.store.exists(tid)  # type: ignore[union-attr]
            first.leadership.stop()  # type: ignore[union-attr]  # it steps down, still serving its bundles
            wait_for(second.is_leader, WAIT, "the standby's election")
            assert second.manager.store.exists(tid)  # type: ignore[union-attr]
            assert zk.paths.bundle_wanted(tid) not in zk.storage.nodes  # nothing asked of the supervisors


@pytest.mark.parametrize(("chunk", "bound"), [(1 << 20, 64 << 20), (20 << 20, 80 << 20)])
def test_the_nimbus_reads_requests_of_four_upload_chunks_and_at_least_64_mib(
        tmp_path: Path, zk: StandInState, chunk: int, bound: int) -> None:
    conf = conf_in(tmp_path, **{"nimbus.upload.chunk.size.bytes": chunk,
                                "nimbus.max.bundle.size.bytes": 4 * chunk})
    with Nimbus(conf) as nimbus:
        wait_for(nimbus.is_leader, WAIT, "the election")
        assert nimbus.server is not None and nimbus.server.max_message_bytes == bound
