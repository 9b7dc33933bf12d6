"""The supervisor's relay of its workers' heartbeats to the leading Nimbus: one call per round
with the heartbeats that changed, files of other workers or unreadable ones skipped, nothing
marked delivered when the call fails."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import pytest

from stormpy.cluster import WorkerHeartbeat
from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.rpc.errors import UnreachableError
from stormpy.supervisor.heartbeat_relay import HeartbeatRelay
from stormpy.testing import wait_for
from stormpy.worker.heartbeat_channel import write_nimbus_heartbeat


class FakeNimbus:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[WorkerHeartbeat]]] = []
        self.down = False
        self.closed = False
        #: when set, a call blocks until it is set again (a Nimbus that does not answer)
        self.answer: threading.Event | None = None
        self.entered = threading.Event()

    def send_worker_heartbeats(self, supervisor_id: str, heartbeats: list[WorkerHeartbeat]) -> int:
        self.entered.set()
        if self.answer is not None:
            self.answer.wait()
        if self.down:
            raise UnreachableError("connection refused")
        self.calls.append((supervisor_id, list(heartbeats)))
        return len(heartbeats)

    def close(self) -> None:
        self.closed = True


def publish(dirs: SupervisorDirs, tid: str, port: int, time: float, node: str = "sup-1") -> None:
    path = dirs.nimbus_heartbeat_file(tid, port)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_nimbus_heartbeat(path, WorkerHeartbeat(tid, node, port, time, 1.0, ((1, 1),)))


@pytest.fixture
def relay(tmp_path: Path) -> tuple[HeartbeatRelay, FakeNimbus, SupervisorDirs, dict[int, str]]:
    dirs = SupervisorDirs(tmp_path / "local", "sup-1", tmp_path / "logs")
    running = {6700: "t-1", 6701: "t-1", 6702: "t-2"}
    nimbus = FakeNimbus()
    relay = HeartbeatRelay({"task.heartbeat.frequency.secs": 3}, dirs, "sup-1", lambda: running,
                           log=logging.getLogger("test"), client=nimbus)  # type: ignore[arg-type]
    return relay, nimbus, dirs, running


def sent(nimbus: FakeNimbus) -> list[list[tuple[str, int, float]]]:
    return [[(b.topology_id, b.port, b.time) for b in beats] for _, beats in nimbus.calls]


def test_one_call_per_round_with_the_heartbeats_that_changed(relay: Any) -> None:
    relay_, nimbus, dirs, _ = relay
    publish(dirs, "t-1", 6700, 1.0)
    publish(dirs, "t-1", 6701, 1.0)
    relay_.run_once()
    assert sent(nimbus) == [[("t-1", 6700, 1.0), ("t-1", 6701, 1.0)]]
    assert nimbus.calls[0][0] == "sup-1"
    relay_.run_once()  # nothing changed: no call
    assert len(nimbus.calls) == 1
    publish(dirs, "t-1", 6701, 2.0)
    publish(dirs, "t-2", 6702, 2.0)
    relay_.run_once()
    assert sent(nimbus)[-1] == [("t-1", 6701, 2.0), ("t-2", 6702, 2.0)]
    assert relay_.sent == 4


def test_files_of_other_workers_and_unreadable_ones_are_skipped(relay: Any) -> None:
    relay_, nimbus, dirs, running = relay
    publish(dirs, "t-1", 6700, 1.0, node="sup-other")  # not this supervisor's worker
    dirs.nimbus_heartbeat_file("t-1", 6701).parent.mkdir(parents=True, exist_ok=True)
    dirs.nimbus_heartbeat_file("t-1", 6701).write_bytes(b"\xc1 not msgpack")
    publish(dirs, "t-3", 6703, 1.0)  # a worker this supervisor does not run
    relay_.run_once()
    assert nimbus.calls == []
    publish(dirs, "t-2", 6702, 1.0)
    relay_.run_once()
    assert sent(nimbus) == [[("t-2", 6702, 1.0)]]
    del running[6702]
    publish(dirs, "t-2", 6702, 2.0)  # stopped meanwhile: no longer sent
    relay_.run_once()
    assert len(nimbus.calls) == 1


def test_a_failed_call_is_sent_again_with_the_newest_heartbeats(relay: Any) -> None:
    relay_, nimbus, dirs, _ = relay
    publish(dirs, "t-1", 6700, 1.0)
    nimbus.down = True
    with pytest.raises(UnreachableError):
        relay_.run_once()
    publish(dirs, "t-1", 6700, 2.0)
    nimbus.down = False
    relay_.run_once()
    assert sent(nimbus) == [[("t-1", 6700, 2.0)]]


def test_stopping_closes_the_client_and_does_not_wait_past_its_timeout_for_a_stuck_nimbus(relay: Any) -> None:
    """The supervisor's shutdown is bounded: a Nimbus that never answers keeps the relay's round
    blocked, yet ``stop(timeout)`` returns; the client is closed."""
    relay_, nimbus, dirs, _ = relay
    publish(dirs, "t-1", 6700, 1.0)
    nimbus.answer = threading.Event()
    relay_.start()
    stopper = threading.Thread(target=relay_.stop, args=(0.2,), daemon=True)
    try:
        assert nimbus.entered.wait(60), "the relay's round calls Nimbus"
        stopper.start()
        wait_for(lambda: not stopper.is_alive(), 60, "stop returns while the call is stuck")
        assert nimbus.closed and nimbus.calls == []
    finally:
        nimbus.answer.set()
        relay_.service.stop(60)
        stopper.join(60)
