"""The worker's link to ZooKeeper and Nimbus, driven round by round in-process: assignment changes
connect and disconnect exactly the right peers, status changes (de)activate the spouts, a changed
component debug setting reaches the event logger, a removed assignment or changed executors stop
the worker once, and the published heartbeat carries exact figures."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import pytest

from stormpy.cluster.errors import ClusterStateError
from stormpy.cluster.records import Assignment, StormBase, WorkerHeartbeat
from stormpy.testing import wait_for
from stormpy.worker.cluster_link import ClusterLink
from stormpy.worker.heartbeats import component_stats, task_entries
from stormpy.worker.peers import WorkerPeers

MINE = ((1, 1), (2, 2))


class FakeWorker:
    """The executor loop as the link sees it; calls handed to the loop run at once."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.tasks: dict[int, str] = {1: "task-1", 2: "task-2"}
        self.stats: list[dict[str, Any]] = [
            {"component": "spout", "task": 1, "emitted": {"default": 5}, "transferred": 5,
             "executed": 0, "acked": 4, "failed": 1, "latency_sum": 0.5, "latency_count": 4},
            {"component": "bolt", "task": 2, "emitted": {}, "transferred": 0, "executed": 5,
             "acked": 5, "failed": 0, "latency_sum": 0.0, "latency_count": 0,
             "metrics": {"m": 2}}]

    def call_soon_threadsafe(self, fn: Callable[[], None]) -> None:
        fn()

    def task_stats(self) -> list[dict[str, Any]]:
        return self.stats

    def transfer_stats(self) -> dict[str, float]:
        return {"frames_refused": 2.0}

    def set_active(self, active: bool) -> None:
        self.calls.append(("set_active", active))

    def update_peers(self, task_peers: dict[int, str]) -> None:
        self.calls.append(("update_peers", task_peers))


class FakeTransport:
    def __init__(self, calls: list[tuple[str, Any]]) -> None:
        self.calls = calls

    def set_peers(self, addresses: dict[str, str]) -> None:
        self.calls.append(("set_peers", addresses))


class FakeState:
    """ClusterState for one topology: the assignment and StormBase the link reads (with the
    callbacks it arms), and the heartbeat channel."""

    def __init__(self) -> None:
        self.executors: dict[tuple[int, int], tuple[str, int]] = {
            (1, 1): ("me", 6700), (2, 2): ("me", 6700), (3, 3): ("b", 6701)}
        self.hosts = {"me": "hm", "b": "hb", "c": "hc"}
        self.removed = False
        self.status: str | None = "active"
        self.debug: dict[str, Any] = {}
        self.callbacks: list[Any] = []
        self.fail: Exception | None = None
        self.earlier: dict[tuple[str, int], WorkerHeartbeat] = {}
        self.written: list[WorkerHeartbeat] = []

    def assignment(self, topology_id: str, callback: Any = None) -> Assignment | None:
        assert topology_id == "t-1"
        self.callbacks.append(callback)
        if self.fail is not None:
            raise self.fail
        if self.removed:
            return None
        return Assignment(topology_id=topology_id, bundle_key="b", executors=dict(self.executors),
                          node_host=dict(self.hosts))

    def storm_base(self, topology_id: str, callback: Any = None) -> StormBase | None:
        assert topology_id == "t-1"
        self.callbacks.append(callback)
        if self.status is None:
            return None
        return StormBase(topology_id=topology_id, name="t", status=self.status, num_workers=1,
                         launch_time=0.0, owner="o", component_debug=dict(self.debug))

    def worker_heartbeats(self, topology_id: str) -> dict[tuple[str, int], WorkerHeartbeat]:
        return self.earlier

    def set_worker_heartbeat(self, beat: WorkerHeartbeat) -> None:
        self.written.append(beat)


def make_link(state: FakeState, tmp_path: Path, exits: list[str] | None = None,
              event_logger: Any = None,
              conf: dict[str, float] | None = None) -> tuple[ClusterLink, FakeWorker]:
    worker = FakeWorker()
    link = ClusterLink(state, worker, FakeTransport(worker.calls),  # type: ignore[arg-type]
                       topology_id="t-1", node="me", port=6700, executors=MINE,
                       peers=WorkerPeers({3: "b:6701"}, {"b:6701": "hb:6701"}), active=True,
                       conf={"worker.heartbeat.frequency.secs": 1.0,
                             "task.heartbeat.frequency.secs": 3.0,
                             "supervisor.monitor.frequency.secs": 10.0, **(conf or {})},
                       heartbeat_path=tmp_path / "heartbeat",
                       on_exit=(exits if exits is not None else []).append,
                       heartbeats=state, event_logger=event_logger)
    return link, worker


def fast_link(state: Any, loop: Any, tmp_path: Path) -> ClusterLink:
    """A link with no peers that heartbeats every 50 ms over ``loop`` (a stand-in executor loop)."""
    return ClusterLink(state, loop, FakeTransport(loop.calls),
                       topology_id="t-1", node="me", port=6700, executors=MINE,
                       peers=WorkerPeers({}, {}), active=True,
                       conf={"worker.heartbeat.frequency.secs": 0.05,
                             "supervisor.monitor.frequency.secs": 10.0},
                       heartbeat_path=tmp_path / "heartbeat", on_exit=lambda reason: None,
                       heartbeats=state)


def test_a_moved_executor_reconnects_exactly_the_changed_peers(tmp_path: Path) -> None:
    state = FakeState()
    link, worker = make_link(state, tmp_path)
    link.sync()
    assert worker.calls == []  # nothing changed
    state.executors[(3, 3)] = ("c", 6702)
    state.executors[(4, 4)] = ("b", 6701)
    link.sync()
    assert worker.calls == [("set_peers", {"b:6701": "hb:6701", "c:6702": "hc:6702"}),
                            ("update_peers", {3: "c:6702", 4: "b:6701"})]
    assert link.peers == WorkerPeers({3: "c:6702", 4: "b:6701"},
                                     {"b:6701": "hb:6701", "c:6702": "hc:6702"})
    worker.calls.clear()
    del state.executors[(4, 4)]
    link.sync()
    assert worker.calls == [("set_peers", {"c:6702": "hc:6702"}), ("update_peers", {3: "c:6702"})]
    assert state.callbacks == [link.trigger] * 6  # every read re-arms its watch


def test_a_status_change_deactivates_and_reactivates_the_spouts(tmp_path: Path) -> None:
    state = FakeState()
    link, worker = make_link(state, tmp_path)
    state.status = "inactive"
    link.sync()
    link.sync()
    state.status = None  # no StormBase: inactive
    link.sync()
    state.status = "active"
    link.sync()
    assert worker.calls == [("set_active", False), ("set_active", True)]
    assert link.active is True


def test_the_worker_stops_once_when_its_assignment_is_removed(tmp_path: Path) -> None:
    state = FakeState()
    exits: list[str] = []
    link, worker = make_link(state, tmp_path, exits)
    state.removed = True
    link.sync()
    link.sync()
    assert exits == ["its topology's assignment was removed"]
    assert worker.calls == []


def test_the_worker_stops_when_its_own_executors_change(tmp_path: Path) -> None:
    state = FakeState()
    exits: list[str] = []
    link, worker = make_link(state, tmp_path, exits)
    state.executors[(2, 2)] = ("b", 6701)
    state.status = "inactive"
    link.sync()
    assert exits == ["its executors changed from [(1, 1), (2, 2)] to [(1, 1)]"]
    assert worker.calls == []  # nothing else applied


def test_a_zookeeper_failure_changes_nothing(tmp_path: Path) -> None:
    state = FakeState()
    exits: list[str] = []
    link, worker = make_link(state, tmp_path, exits)
    state.fail = ClusterStateError("ZooKeeper did not answer")
    state.removed = True
    link.sync()
    assert exits == [] and worker.calls == []


class FakeEventLogger:
    def __init__(self) -> None:
        self.applied: list[tuple[list[Any], dict[str, Any]]] = []

    def apply(self, runners: list[Any], debug: dict[str, Any]) -> None:
        self.applied.append((runners, debug))

    def recent(self) -> list[dict[str, Any]]:
        return [{"component": "spout", "values": ["a"]}, {"component": "bolt", "values": ["b"]}]


def test_a_changed_debug_setting_reaches_the_event_logger_once(tmp_path: Path) -> None:
    state = FakeState()
    logger = FakeEventLogger()
    link, worker = make_link(state, tmp_path, event_logger=logger)
    link.sync()
    assert logger.applied == []  # no debug setting, as applied at start
    state.debug = {"spout": {"enable": True, "samplingpct": 10.0}}
    link.sync()
    link.sync()
    state.debug = {}
    link.sync()
    assert logger.applied == [(["task-1", "task-2"], {"spout": {"enable": True, "samplingpct": 10.0}}),
                              (["task-1", "task-2"], {})]
    assert worker.calls == []


def test_the_published_heartbeat_carries_exact_figures(tmp_path: Path) -> None:
    state = FakeState()
    link, worker = make_link(state, tmp_path, event_logger=FakeEventLogger())
    before = time.time()
    link.local_heartbeat()
    after = time.time()
    local = msgpack.unpackb((tmp_path / "heartbeat").read_bytes())
    assert local == {"time": local["time"], "pid": os.getpid(), "topology_id": "t-1", "port": 6700,
                     "executors": [[1, 1], [2, 2]]}
    assert before <= local["time"] <= after and link.local_heartbeats == 1
    assert state.written == []  # the local heartbeat never publishes
    link.publish_heartbeat()
    (beat,) = state.written
    assert (beat.topology_id, beat.node, beat.port, beat.time, beat.executors) == \
        ("t-1", "me", 6700, local["time"], MINE)
    assert 0 <= beat.uptime < 60
    assert beat.stats == component_stats(worker.stats)
    assert beat.stats["spout"]["acked"] == 4 and beat.stats["bolt"]["executed"] == 5
    assert list(beat.tasks) == task_entries(worker.stats)
    assert beat.metrics == {"bolt": {"2": {"m": 2}}}
    assert beat.events == ({"component": "spout", "values": ["a"]}, {"component": "bolt", "values": ["b"]})
    assert beat.process["frames_refused"] == 2.0 and "rss_bytes" in beat.process
    assert "counters_carried" not in beat.process
    assert link.latest_stats == worker.stats and link.heartbeats == 1
    link.publish_heartbeat()  # nothing new from the local heartbeat: nothing published
    assert len(state.written) == 1


def test_a_heartbeat_without_an_event_logger_carries_no_events(tmp_path: Path) -> None:
    state = FakeState()
    link, _ = make_link(state, tmp_path)
    link.local_heartbeat()
    link.publish_heartbeat()
    assert state.written[0].events == ()


def test_the_counters_of_earlier_incarnations_are_carried_and_read_once(tmp_path: Path) -> None:
    state = FakeState()
    earlier = {"component": "spout", "task": 1, "emitted": {"default": 100}, "acked": 90}
    state.earlier = {("me", 6700): WorkerHeartbeat(topology_id="t-1", node="me", port=6700,
                                                   time=5.0, uptime=1.0, tasks=(earlier,))}
    reads: list[str] = []
    read = state.worker_heartbeats

    def counted(topology_id: str) -> dict[tuple[str, int], WorkerHeartbeat]:
        reads.append(topology_id)
        return read(topology_id)
    state.worker_heartbeats = counted  # type: ignore[method-assign]
    link, worker = make_link(state, tmp_path, conf={"task.heartbeat.frequency.secs": 0.0})
    for _ in range(2):
        link.local_heartbeat()
        link.publish_heartbeat()
    assert reads == ["t-1"]
    for beat in state.written:
        assert beat.stats["spout"]["acked"] == 94 and beat.stats["spout"]["emitted"] == 105
        assert beat.stats["bolt"]["acked"] == 5
        assert beat.process["counters_carried"] == 1.0
    assert link.latest_stats is not None and link.latest_stats[0]["acked"] == 94


class FlakyChannel:
    """A heartbeat channel failing its first ``failures`` calls of each kind."""

    def __init__(self, read_failures: int, write_failures: int,
                 error: Exception | None = None) -> None:
        self.read_failures = read_failures
        self.write_failures = write_failures
        self.error = error or OSError("relay unreachable")
        self.written: list[WorkerHeartbeat] = []

    def worker_heartbeats(self, topology_id: str) -> dict[tuple[str, int], WorkerHeartbeat]:
        if self.read_failures:
            self.read_failures -= 1
            raise self.error
        return {}

    def set_worker_heartbeat(self, beat: WorkerHeartbeat) -> None:
        if self.write_failures:
            self.write_failures -= 1
            raise self.error
        self.written.append(beat)


@pytest.mark.parametrize("error", [OSError("relay unreachable"), ClusterStateError("no leader")])
def test_a_heartbeat_the_channel_refused_is_published_on_the_next_round(tmp_path: Path,
                                                                        error: Exception) -> None:
    state = FakeState()
    channel = FlakyChannel(read_failures=1, write_failures=1, error=error)
    link, _ = make_link(state, tmp_path)
    link.channel = channel
    link.local_heartbeat()
    first = msgpack.unpackb((tmp_path / "heartbeat").read_bytes())["time"]
    link.publish_heartbeat()  # reading the earlier heartbeats fails
    link.publish_heartbeat()  # writing fails
    assert channel.written == [] and link.heartbeats == 0
    link.publish_heartbeat()
    assert [b.time for b in channel.written] == [first] and link.heartbeats == 1


def test_newer_statistics_replace_a_refused_heartbeat(tmp_path: Path) -> None:
    state = FakeState()
    channel = FlakyChannel(read_failures=0, write_failures=1)
    link, worker = make_link(state, tmp_path)
    link.channel = channel
    link.local_heartbeat()
    with link._pending_lock:
        newer = (time.time() + 100, [dict(worker.stats[0], acked=40)])
        real_requeue = link._requeue

    def refused_while_newer_came(pending: Any) -> None:
        link._pending_beat = newer  # the local heartbeat left newer statistics meanwhile
        real_requeue(pending)
    link._requeue = refused_while_newer_came  # type: ignore[method-assign]
    link.publish_heartbeat()
    link.publish_heartbeat()
    (beat,) = channel.written
    assert beat.time == newer[0] and beat.stats["spout"]["acked"] == 40


def test_the_published_heartbeat_waits_for_its_period(tmp_path: Path) -> None:
    state = FakeState()
    link, worker = make_link(state, tmp_path, conf={"task.heartbeat.frequency.secs": 3600.0})
    link.local_heartbeat()
    link.publish_heartbeat()
    worker.stats = [dict(worker.stats[0], acked=50)]
    link.local_heartbeat()
    link.publish_heartbeat()
    assert len(state.written) == 1 and link.heartbeats == 1
    link._next_beat = 0.0  # the period is over: the newest statistics go out
    link.publish_heartbeat()
    assert [b.stats["spout"]["acked"] for b in state.written] == [4, 50]


def test_the_published_period_is_never_shorter_than_the_local_one(tmp_path: Path) -> None:
    link, _ = make_link(FakeState(), tmp_path, conf={"task.heartbeat.frequency.secs": 0.5,
                                                     "worker.heartbeat.frequency.secs": 2.0})
    assert (link.heartbeat_secs, link.task_heartbeat_secs, link.resync_secs) == (2.0, 2.0, 10.0)
    link, _ = make_link(FakeState(), tmp_path)
    assert (link.heartbeat_secs, link.task_heartbeat_secs, link.resync_secs) == (1.0, 3.0, 10.0)


class SilentLoop(FakeWorker):
    """A loop stuck in a component: what is handed to it waits until ``run`` is called (or runs
    at once once ``answering``)."""

    def __init__(self) -> None:
        super().__init__()
        self.queued: list[Callable[[], None]] = []
        self.answering = False

    def call_soon_threadsafe(self, fn: Callable[[], None]) -> None:
        self.queued.append(fn)
        if self.answering:
            self.run()

    def run(self) -> None:
        queued, self.queued = self.queued, []
        for fn in queued:
            fn()


def test_a_loop_that_does_not_answer_gets_no_heartbeat(tmp_path: Path) -> None:
    state = FakeState()
    loop = SilentLoop()
    link = fast_link(state, loop, tmp_path)
    link.local_heartbeat()
    link.local_heartbeat()
    assert not (tmp_path / "heartbeat").exists() and link.local_heartbeats == 0
    assert len(loop.queued) == 1  # one request waits for the loop, not one per heartbeat
    link.publish_heartbeat()
    assert state.written == []
    loop.answering = True  # the loop runs again
    loop.run()
    link.local_heartbeat()
    assert link.local_heartbeats == 1 and (tmp_path / "heartbeat").exists()
    link.publish_heartbeat()
    assert len(state.written) == 1


def test_an_unwritable_local_heartbeat_still_hands_the_statistics_on(tmp_path: Path) -> None:
    state = FakeState()
    link, _ = make_link(state, tmp_path)
    link.heartbeat_path = tmp_path / "missing-dir" / "heartbeat"
    link.local_heartbeat()
    assert link.local_heartbeats == 0
    link.publish_heartbeat()
    assert len(state.written) == 1


def test_a_link_round_syncs_when_due_or_triggered_and_publishes(tmp_path: Path) -> None:
    state = FakeState()
    link, worker = make_link(state, tmp_path)
    link.local_heartbeat()
    delay = link._link_round()  # the first round syncs at once
    assert len(state.callbacks) == 2 and len(state.written) == 1
    assert 9.0 < delay <= 10.0
    link._link_round()  # not due: no sync
    assert len(state.callbacks) == 2
    link.trigger()  # ZooKeeper reported a change
    link._link_round()
    assert len(state.callbacks) == 4
    link._link_round()
    assert len(state.callbacks) == 4


def test_a_failed_sync_does_not_hold_the_heartbeat_back(tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    state = FakeState()
    link, _ = make_link(state, tmp_path)
    state.fail = RuntimeError("unexpected")
    link.local_heartbeat()
    with caplog.at_level(logging.ERROR, logger="stormpy.worker.cluster_link"):
        link._link_round()
    assert len(state.written) == 1
    assert [r.getMessage() for r in caplog.records] == ["worker me:6700: sync failed"]


def test_a_stopping_worker_writes_no_more_heartbeats(tmp_path: Path) -> None:
    state = FakeState()
    exits: list[str] = []
    link, _ = make_link(state, tmp_path, exits)
    state.removed = True
    link.local_heartbeat()
    link._link_round()
    assert exits == ["its topology's assignment was removed"]
    assert state.written == []
    assert link.link.stopping and link.beat.stopping
    (tmp_path / "heartbeat").unlink()
    link._beat_round()
    assert not (tmp_path / "heartbeat").exists()


def test_the_threads_beat_and_publish_until_stopped(tmp_path: Path) -> None:
    state = FakeState()
    link, _ = make_link(state, tmp_path, conf={"worker.heartbeat.frequency.secs": 0.05,
                                           "task.heartbeat.frequency.secs": 0.05})
    link.start()
    try:
        wait_for(lambda: link.heartbeats >= 2 and link.local_heartbeats >= 2, 10,
                 "local and published heartbeats from the link's threads")
        names = {t.name for t in threading.enumerate()}
        assert {"stormpy-cluster-link", "stormpy-local-heartbeat"} <= names
    finally:
        link.stop()
        link.stop()
    assert not link.link.running and not link.beat.running


class SlowState(FakeState):
    """A ZooKeeper read that takes longer than the periodic sync's interval."""

    def assignment(self, topology_id: str, callback: Any = None) -> Assignment | None:
        started = time.monotonic()
        wait_for(lambda: time.monotonic() - started > 0.01, 10, "a slow ZooKeeper read")
        return super().assignment(topology_id, callback)


def test_a_sync_slower_than_its_interval_is_followed_by_the_next_at_once(tmp_path: Path) -> None:
    state = SlowState()
    link, _ = make_link(state, tmp_path, conf={"supervisor.monitor.frequency.secs": 0.001})
    assert link._link_round() == 0.0
    assert link._link_round() == 0.0
    assert len(state.callbacks) == 4  # both rounds synced


class StuckState(FakeState):
    """ZooKeeper reads that do not return until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def assignment(self, topology_id: str, callback: Any = None) -> Assignment | None:
        self.entered.set()
        self.release.wait(60)
        return super().assignment(topology_id, callback)


class StuckLoop(FakeWorker):
    """A loop whose hand-over blocks until ``release`` is set (holding the local heartbeat's
    thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def call_soon_threadsafe(self, fn: Callable[[], None]) -> None:
        self.entered.set()
        self.release.wait(60)
        fn()


def test_stop_returns_within_its_timeout_while_both_threads_are_stuck(tmp_path: Path) -> None:
    state = StuckState()
    loop = StuckLoop()
    link = fast_link(state, loop, tmp_path)
    link.start()
    stopper = threading.Thread(target=link.stop, kwargs={"timeout": 0.2}, name="stopper")
    try:
        wait_for(lambda: state.entered.is_set() and loop.entered.is_set(), 10,
                 "both threads stuck")
        stopper.start()
        wait_for(lambda: not stopper.is_alive(), 10, "stop to give up on the stuck threads")
    finally:
        state.release.set()
        loop.release.set()
        if stopper.ident:
            stopper.join(10)
        link.stop()


def test_missed_heartbeats_are_logged_at_the_first_and_every_tenth(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A loop that does not answer (its answer replaced, so the test does not wait out each
    heartbeat's timeout): the first missed heartbeat and every tenth are logged with their count,
    which starts over once the loop answers."""
    link, _ = make_link(FakeState(), tmp_path, conf={"worker.heartbeat.frequency.secs": 2.0})
    assert link.latest_stats is None  # nothing for the metrics consumers before a heartbeat
    answers: list[list[dict[str, Any]] | None] = [None] * 22
    answers[20] = []  # the loop answers once
    timeouts: list[float] = []

    def loop_stats(timeout: float) -> list[dict[str, Any]] | None:
        timeouts.append(timeout)
        return answers.pop(0)
    link._loop_stats = loop_stats  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING, logger="stormpy.worker.cluster_link"):
        for _ in range(22):
            link.local_heartbeat()
    missed = [r.getMessage() for r in caplog.records if "did not answer" in r.getMessage()]
    assert [m.rsplit("(", 1)[1] for m in missed] == ["1 missed)", "10 missed)", "20 missed)",
                                                     "1 missed)"]
    assert link.local_heartbeats == 1
    assert set(timeouts) == {4.0}  # two local heartbeat periods
    short, _ = make_link(FakeState(), tmp_path, conf={"worker.heartbeat.frequency.secs": 0.05})
    seen: list[float] = []
    short._loop_stats = lambda timeout: seen.append(timeout)  # type: ignore[method-assign]
    short.local_heartbeat()
    assert seen == [1.0]  # never less than a second


def test_a_failed_round_is_logged_by_the_link_with_the_threads_name(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    class Broken(FakeWorker):
        def task_stats(self) -> list[dict[str, Any]]:
            raise RuntimeError("stats broke")

    state = FakeState()
    link, _ = make_link(state, tmp_path)
    link.worker = Broken()  # type: ignore[assignment]
    link.channel = FlakyChannel(read_failures=0, write_failures=0)
    link.channel.set_worker_heartbeat = None  # type: ignore[method-assign,assignment]
    with caplog.at_level(logging.WARNING, logger="stormpy.worker.cluster_link"):
        link.beat.run_once()
        link._pending_beat = (1.0, [])
        link.link.run_once()
    failed = [(r.name, r.getMessage().split(":")[0]) for r in caplog.records
              if "round failed" in r.getMessage()]
    assert failed == [("stormpy.worker.cluster_link", "stormpy-local-heartbeat"),
                      ("stormpy.worker.cluster_link", "stormpy-cluster-link")]
