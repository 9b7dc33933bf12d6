"""A worker's heartbeat on its whole way to Nimbus and back, over real RPC to a stand-in leader:
the worker writes it (``SupervisorRelay``), the supervisor's relay service sends it on its own
thread to the Nimbus its config names, and a restarted worker reads it back from that Nimbus;
an unreachable Nimbus is a warning naming the loop, not a dead loop, and an OSError naming the
topology for the worker."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stormpy.cluster import WorkerHeartbeat
from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.nimbus.worker_beats import WorkerBeats
from stormpy.rpc import RpcServer, rpc_method
from stormpy.supervisor.heartbeat_relay import HeartbeatRelay, read_nimbus_heartbeat
from stormpy.testing import free_ports, wait_for
from stormpy.worker.heartbeat_channel import SupervisorRelay

TID = "t-1"
RELAY_LOG = "stormpy.test.heartbeat-relay"


class StandInLeader:
    """The leading Nimbus's two heartbeat methods over a real :class:`WorkerBeats` store."""

    def __init__(self) -> None:
        self.address = ""
        self.beats = WorkerBeats()

    @rpc_method
    def get_leader(self) -> Any:
        return {"leader": self.address, "is_leader": True, "self": self.address}

    @rpc_method
    def send_supervisor_worker_heartbeats(self, supervisor_id: str, heartbeats: list[Any]) -> Any:
        return {"recorded": self.beats.record(WorkerHeartbeat.from_doc(doc) for doc in heartbeats)}

    @rpc_method
    def get_worker_heartbeats(self, topology_id: str) -> Any:
        return {"heartbeats": [b.to_doc() for b in self.beats.topology(topology_id).values()]}


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STORMPY_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def port() -> int:
    return free_ports(1)[0]


def conf_for(port: int, **more: Any) -> dict[str, Any]:
    return {"nimbus.seeds": ["127.0.0.1"], "nimbus.thrift.port": port,
            "task.heartbeat.frequency.secs": 0.05, **more}


@pytest.fixture
def dirs(tmp_path: Path) -> SupervisorDirs:
    dirs = SupervisorDirs(tmp_path / "local", "sup-1", tmp_path / "logs")
    dirs.nimbus_heartbeat_file(TID, 6700).parent.mkdir(parents=True, exist_ok=True)
    return dirs


@pytest.fixture
def leader(port: int) -> Iterator[StandInLeader]:
    stand_in = StandInLeader()
    with RpcServer("127.0.0.1", port, stand_in, name="nimbus"):
        stand_in.address = f"127.0.0.1:{port}"
        yield stand_in


def worker_beat(time: float, metrics: dict[str, Any] | None = None) -> WorkerHeartbeat:
    return WorkerHeartbeat(TID, "sup-1", 6700, time, 1.0, ((1, 1),), metrics=metrics or {})


def test_a_heartbeat_goes_from_the_worker_to_nimbus_and_back_with_its_values_intact(
        dirs: SupervisorDirs, port: int, leader: StandInLeader) -> None:
    conf = conf_for(port)
    worker = SupervisorRelay(dirs.nimbus_heartbeat_file(TID, 6700), conf)
    # a metric value may be any msgpack data: bytes stay bytes, text stays text
    metrics = {"split": {"3": {"last-key": b"\x00\xffkey", "label": "words"}}}
    worker.set_worker_heartbeat(worker_beat(5.0, metrics))
    assert read_nimbus_heartbeat(dirs, TID, 6700) == worker_beat(5.0, metrics)
    relay = HeartbeatRelay(conf, dirs, "sup-1", lambda: {6700: TID},
                           log=logging.getLogger(RELAY_LOG)).start()  # no client: built from conf
    try:
        wait_for(lambda: leader.beats.topology(TID), timeout=60, what="the heartbeat reaches Nimbus")
        worker.set_worker_heartbeat(worker_beat(6.0, metrics))
        wait_for(lambda: leader.beats.topology(TID)[("sup-1", 6700)].time == 6.0, timeout=60,
                 what="the newer heartbeat reaches Nimbus on a later round")
    finally:
        relay.stop(10)
    assert relay.sent >= 2
    restarted = SupervisorRelay(dirs.nimbus_heartbeat_file(TID, 6700), conf)
    assert restarted.worker_heartbeats(TID) == {("sup-1", 6700): worker_beat(6.0, metrics)}


def test_the_relay_loop_outlives_an_unreachable_nimbus_and_says_so(
        dirs: SupervisorDirs, port: int, caplog: pytest.LogCaptureFixture) -> None:
    conf = conf_for(port, **{"nimbus.rpc.timeout.secs": 1, "nimbus.rpc.retries": 0})
    SupervisorRelay(dirs.nimbus_heartbeat_file(TID, 6700), conf).set_worker_heartbeat(worker_beat(5.0))
    caplog.set_level(logging.WARNING, logger=RELAY_LOG)
    relay = HeartbeatRelay(conf, dirs, "sup-1", lambda: {6700: TID}, log=logging.getLogger(RELAY_LOG)).start()
    try:
        wait_for(lambda: any(r.name == RELAY_LOG for r in caplog.records), timeout=60,
                 what="the relay warns that Nimbus is unreachable")
        warning = next(r for r in caplog.records if r.name == RELAY_LOG)
        assert warning.levelno == logging.WARNING and warning.exc_info is None  # expected: no traceback
        assert warning.getMessage().startswith("supervisor-worker-heartbeats: round failed")
        assert "is it running?" in warning.getMessage()
        stand_in = StandInLeader()
        with RpcServer("127.0.0.1", port, stand_in, name="nimbus"):  # Nimbus comes up
            stand_in.address = f"127.0.0.1:{port}"
            # delivered and answered: Nimbus stays up until the relay has counted the answer
            # (it records the beat before its answer reaches the relay)
            wait_for(lambda: stand_in.beats.topology(TID) and relay.sent >= 1, timeout=60,
                     what="the heartbeat is delivered once Nimbus answers")
    finally:
        relay.stop(10)
    assert relay.sent == 1


def test_a_worker_that_cannot_reach_nimbus_gets_an_oserror_naming_its_topology(
        dirs: SupervisorDirs, port: int) -> None:
    conf = conf_for(port, **{"nimbus.rpc.timeout.secs": 1, "nimbus.rpc.retries": 0})
    worker = SupervisorRelay(dirs.nimbus_heartbeat_file(TID, 6700), conf)
    with pytest.raises(OSError, match=f"earlier heartbeats of {TID} from Nimbus: .*is it running"):
        worker.worker_heartbeats(TID)
