"""Worker heartbeats sent to the leading Nimbus over RPC: the in-memory store, the RPC methods'
checks, the monitor's judgement of them (task timeout, a new leader's grace period) and the
figures of ``get_topology_info``, with simulated time and in-memory cluster state."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from nimbus_fakes import FakeClusterState, SimClock, staged_bundle  # noqa: E402

from stormpy.cluster import WorkerHeartbeat  # noqa: E402
from stormpy.nimbus.handler import MAX_HEARTBEATS_PER_CALL, NimbusHandler  # noqa: E402
from stormpy.nimbus.localdirs import NimbusDirs  # noqa: E402
from stormpy.nimbus.monitor import Monitor  # noqa: E402
from stormpy.nimbus.store import BundleStore  # noqa: E402
from stormpy.nimbus.topologies import TopologyManager  # noqa: E402
from stormpy.nimbus.worker_beats import WorkerBeats  # noqa: E402
from stormpy.rpc.errors import InvalidRequestError, NotLeaderError  # noqa: E402
from wordcount import build  # noqa: E402

CONF = {"nimbus.task.timeout.secs": 4, "nimbus.supervisor.timeout.secs": 6, "nimbus.monitor.freq.secs": 1,
        "nimbus.task.launch.secs": 10, "topology.message.timeout.secs": 30}

Slot = tuple[str, int]


class Leader:
    """A leading Nimbus's monitor and RPC handler sharing one heartbeat store."""

    def __init__(self, tmp: Path) -> None:
        self.clock = SimClock()
        self.state = FakeClusterState()
        self.manager = TopologyManager(self.state, BundleStore(NimbusDirs(tmp / "local")), CONF,  # type: ignore[arg-type]
                                       clock=self.clock)
        self.leading = True
        self.elect()
        self.state.add_supervisor("sup-a", [6700, 6701])
        self.state.add_supervisor("sup-b", [6700, 6701])
        self.tid = self.manager.submit("wc", staged_bundle(tmp, "wc"), build(100).create_topology(),
                                       {"topology.workers": 2}, "active")

    def elect(self) -> None:
        """This Nimbus (again) becomes leader: an empty store and a new monitor, as the daemon does."""
        self.beats = WorkerBeats()
        self.monitor = Monitor(self.manager, CONF, clock=self.clock, beats=self.beats)
        self.handler = NimbusHandler(self.manager, None, None, nimbus_info=dict,  # type: ignore[arg-type]
                                     is_leader=lambda: self.leading, leader_address=lambda: "nimbus-b:6627",
                                     worker_beats=self.beats)

    def slots(self) -> set[Slot]:
        return set(self.state.assigns[self.tid].workers())

    def send(self, slots: set[Slot], acked: float = 0.0) -> None:
        """Each supervisor sends the heartbeats of its workers in ``slots`` in one call."""
        workers = self.state.assigns[self.tid].workers()
        for node in sorted({n for n, _ in slots}):
            docs = [WorkerHeartbeat(self.tid, n, p, self.clock(), 1.0, workers[(n, p)],
                                    stats={"count": {"acked": acked, "emitted": 2 * acked}}).to_doc()
                    for n, p in sorted(slots) if n == node]
            assert self.handler.send_supervisor_worker_heartbeats(node, docs) == {"recorded": len(docs)}

    def run(self, secs: int, beating: set[Slot]) -> None:
        """Advance time second by second: the workers in ``beating`` heartbeat, the monitor ticks."""
        for _ in range(secs):
            self.clock.advance(1)
            self.send(beating & self.slots())
            self.monitor.tick(raise_errors=True)


@pytest.fixture
def leader(tmp_path: Path) -> Leader:
    return Leader(tmp_path)


def beat(tid: str = "t-1", node: str = "sup-a", port: int = 6700, time: float = 10.0) -> WorkerHeartbeat:
    return WorkerHeartbeat(tid, node, port, time, 1.0, ((1, 1),))


def test_the_store_keeps_the_newest_heartbeat_of_each_slot_and_only_assigned_slots() -> None:
    beats = WorkerBeats()
    assert beats.record([beat(time=10.0), beat(port=6701)]) == 2
    assert beats.record([beat(time=5.0)]) == 0  # an older heartbeat never replaces a newer one
    assert beats.topology("t-1")[("sup-a", 6700)].time == 10.0
    assert beats.record([beat(time=11.0), beat(tid="t-2", node="sup-b")]) == 2
    copy = beats.of(["t-1", "t-9"])
    assert set(copy["t-1"]) == {("sup-a", 6700), ("sup-a", 6701)} and copy["t-9"] == {}
    beats.retain({"t-1": {("sup-a", 6701)}})
    assert set(beats.of(["t-1", "t-2"])["t-1"]) == {("sup-a", 6701)} and beats.topology("t-2") == {}
    assert set(copy["t-1"]) == {("sup-a", 6700), ("sup-a", 6701)}  # what was read stays as read
    assert beats.reported == {"sup-a", "sup-b"} and len(beats) == 1
    beats.clear()
    assert len(beats) == 0 and beats.reported == set()


def test_the_store_counts_what_it_kept_and_retains_every_topology_whatever_its_order() -> None:
    beats = WorkerBeats()
    assert beats.received == 0
    beats.record([beat(tid="t-gone"), beat(time=10.0), beat(port=6701)])
    beats.record([beat(time=5.0)])  # older: not kept, not counted
    beats.record([beat(time=12.0)])
    assert beats.received == 4
    # a topology dropped first does not stop the others from being trimmed
    beats.retain({"t-1": {("sup-a", 6701)}})
    assert beats.of(["t-gone", "t-1"]) == {"t-gone": {}, "t-1": {("sup-a", 6701): beat(port=6701)}}
    assert beats.received == 4


def test_a_worker_that_stops_heartbeating_is_rescheduled_after_the_task_timeout(leader: Leader) -> None:
    slots = leader.slots()
    leader.run(12, slots)  # past nimbus.task.launch.secs, every worker heartbeating
    first = dict(leader.state.assigns[leader.tid].executors)
    stopped = sorted(slots)[0]
    leader.run(3, slots - {stopped})  # under nimbus.task.timeout.secs (4 s): nothing moves
    assert leader.state.assigns[leader.tid].executors == first
    leader.run(2, slots - {stopped})
    after = leader.state.assigns[leader.tid]
    assert stopped not in set(after.workers())
    assert all(after.executors[e] == s for e, s in first.items() if s != stopped)  # the alive stay put
    assert stopped not in leader.beats.topology(leader.tid)  # its last heartbeat left with its slot


def test_a_new_leader_judges_heartbeats_only_after_a_full_task_timeout(leader: Leader) -> None:
    slots = leader.slots()
    leader.run(12, slots)
    first = dict(leader.state.assigns[leader.tid].executors)
    leader.clock.advance(30)  # the old leader is gone; a standby takes over with no heartbeats
    leader.elect()
    silent = sorted(slots)[1]
    leader.monitor.tick(raise_errors=True)  # no heartbeat yet: nobody is judged dead
    leader.run(3, slots - {silent})
    assert leader.state.assigns[leader.tid].executors == first
    leader.run(2, slots - {silent})  # the grace (nimbus.task.timeout.secs) is over
    after = leader.state.assigns[leader.tid]
    assert silent not in set(after.workers())
    assert all(after.executors[e] == s for e, s in first.items() if s != silent)


def test_a_vanished_supervisor_is_judged_during_a_new_leaders_grace(leader: Leader) -> None:
    slots = leader.slots()
    leader.run(12, slots)
    leader.elect()
    del leader.state.sups["sup-b"]
    leader.run(3, {s for s in slots if s[0] == "sup-a"})  # within the grace, missing since 3 s
    assert any(n == "sup-b" for n, _ in leader.state.assigns[leader.tid].executors.values())
    leader.run(4, {s for s in slots if s[0] == "sup-a"})  # nimbus.supervisor.timeout.secs (6 s)
    assert {n for n, _ in leader.state.assigns[leader.tid].executors.values()} == {"sup-a"}


def test_topology_info_figures_come_from_the_heartbeats_sent(leader: Leader) -> None:
    leader.run(1, leader.slots())
    leader.send(leader.slots(), acked=5)
    info = leader.handler.get_topology_info("wc")
    assert info["stats"]["count"]["acked"] == 5 * len(leader.slots())
    docs = leader.handler.get_worker_heartbeats(leader.tid)["heartbeats"]
    assert {(d["node"], d["port"]) for d in docs} == leader.slots()


def test_the_heartbeat_rpc_refuses_bad_input_naming_what_is_wrong(leader: Leader) -> None:
    send = leader.handler.send_supervisor_worker_heartbeats
    with pytest.raises(InvalidRequestError, match="supervisor_id"):
        send("", [])
    with pytest.raises(InvalidRequestError, match="a list"):
        send("sup-a", {"not": "a list"})
    with pytest.raises(InvalidRequestError, match="at most"):
        send("sup-a", [beat().to_doc()] * (MAX_HEARTBEATS_PER_CALL + 1))
    bad: dict[str, Any] = {**beat().to_doc(), "port": "x"}
    with pytest.raises(InvalidRequestError, match="heartbeat 1: .*port"):
        send("sup-a", [beat().to_doc(), bad])
    with pytest.raises(InvalidRequestError, match="heartbeat 0 is of a worker of 'sup-b'"):
        send("sup-a", [beat(node="sup-b").to_doc()])
    assert len(leader.beats) == 0  # a refused call records nothing
    assert send("sup-a", []) == {"recorded": 0}


def test_a_standby_refuses_heartbeats_naming_the_leader(leader: Leader) -> None:
    leader.leading = False
    with pytest.raises(NotLeaderError, match="leader is nimbus-b:6627"):
        leader.handler.send_supervisor_worker_heartbeats("sup-a", [beat().to_doc()])
    with pytest.raises(NotLeaderError, match="leader is nimbus-b:6627"):
        leader.handler.get_worker_heartbeats(leader.tid)
    assert len(leader.beats) == 0
