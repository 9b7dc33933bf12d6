"""The supervisor's worker reconciler with real (stand-in) worker processes: missing workers
launched for downloaded code, a worker that exits reported with the error it logged and
restarted (a crash loop held back), workers of removed or moved assignments stopped and their
directories removed, changed executors, stale or missing heartbeats, adopted workers, a launch
that fails, and `on_exit` from the watcher thread."""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from supervisor_stand_ins import downloaded, fake_python, gone, kill_left, make_dirs, run_record

import stormpy.supervisor.reconcile as reconcile_module
from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.supervisor.launcher import WorkerHandle, launch_worker, terminate_workers
from stormpy.supervisor.reconcile import WorkerReconciler
from stormpy.supervisor.sync import LocalAssignment
from stormpy.testing import wait_for

LOG = logging.getLogger("test-supervisor-reconciler")


class Rig:
    """A reconciler over fake workers; ``mode`` is what the next launched workers do."""

    def __init__(self, tmp_path: Path, *, worker_timeout: float = 30.0, start_timeout: float = 60.0) -> None:
        self.dirs: SupervisorDirs = make_dirs(tmp_path)
        self.mode = "beat"
        self.stopping = False
        self.exits_seen = threading.Semaphore(0)
        self.counters: dict[str, float] = {}
        self.reconciler = WorkerReconciler(
            self.dirs, worker_timeout=worker_timeout, start_timeout=start_timeout, shutdown_grace=5.0,
            log=LOG, on_exit=self.exits_seen.release, stopping=lambda: self.stopping,
            env=lambda: dict(os.environ, FAKE_WORKER=self.mode, FAKE_MARK="from-env"),
            counters=self.counters)
        self.pids: list[int] = []

    def launch(self, desired: dict[int, LocalAssignment]) -> dict[int, WorkerHandle]:
        self.reconciler.launch(desired)
        workers = self.reconciler.snapshot()
        self.pids.extend(h.pid for h in workers.values())
        return workers

    def close(self) -> None:
        terminate_workers(self.reconciler.take_all(), 5.0, LOG)
        kill_left(*self.pids)


@pytest.fixture
def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Rig]:
    monkeypatch.setattr(reconcile_module, "launch_worker",
                        functools.partial(launch_worker, python=fake_python(tmp_path)))
    made = Rig(tmp_path)
    yield made
    made.close()


def la(topology_id: str, *executors: tuple[int, int]) -> LocalAssignment:
    return LocalAssignment(topology_id, tuple(executors))


def wait_for_beat(rig: Rig, topology_id: str, port: int) -> None:
    wait_for(lambda: rig.dirs.heartbeat_file(topology_id, port).is_file(), 30,
             f"the heartbeat of {topology_id}:{port}")


def test_missing_workers_are_launched_for_downloaded_code_only(rig: Rig) -> None:
    downloaded(rig.dirs, "t-1")
    assert rig.launch({6701: la("t-1", (3, 3))}).keys() == {6701}
    desired = {6701: la("t-1", (3, 3)), 6702: la("t-1", (1, 1), (2, 2)), 6700: la("t-2", (4, 4))}
    workers = rig.launch(desired)
    assert sorted(workers) == [6701, 6702]  # t-2 is not downloaded yet; 6701 was running already
    h = workers[6702]
    assert (h.topology_id, h.port, h.executors, h.adopted) == ("t-1", 6702, ((1, 1), (2, 2)), False)
    assert h.pid == int(rig.dirs.pid_file("t-1", 6702).read_text())
    assert rig.counters == {"worker_launches": 2.0, "worker_restarts": 0.0}
    assert run_record(rig.dirs, "t-1", 6702)["env"]["FAKE_MARK"] == "from-env"
    watchers = {t.name: t for t in threading.enumerate() if t.name.startswith("watch-67")}
    assert sorted(watchers) == ["watch-6701", "watch-6702"]
    assert all(t.daemon for t in watchers.values())
    # a second round launches nothing more; healthy workers are kept
    wait_for_beat(rig, "t-1", 6701)
    wait_for_beat(rig, "t-1", 6702)
    rig.reconciler.replace(desired)
    assert rig.launch(desired) == workers
    assert rig.counters == {"worker_launches": 2.0, "worker_restarts": 0.0}
    # taking them all leaves none
    taken = rig.reconciler.take_all()
    assert sorted(h.port for h in taken) == [6701, 6702]
    assert rig.reconciler.snapshot() == {}
    terminate_workers(taken, 5.0, LOG)


def test_counters_given_are_kept_and_added_to(tmp_path: Path) -> None:
    counters = {"worker_launches": 5.0, "worker_restarts": 2.0, "other": 1.0}
    reconciler = WorkerReconciler(make_dirs(tmp_path), worker_timeout=1, start_timeout=1, shutdown_grace=1,
                                  log=LOG, on_exit=lambda: None, stopping=lambda: False, env=dict,
                                  counters=counters)
    assert reconciler.counters is counters
    assert counters == {"worker_launches": 5.0, "worker_restarts": 2.0, "other": 1.0}
    assert WorkerReconciler(make_dirs(tmp_path / "b"), worker_timeout=1, start_timeout=1, shutdown_grace=1,
                            log=LOG, on_exit=lambda: None, stopping=lambda: False,
                            env=dict).counters == {"worker_launches": 0.0, "worker_restarts": 0.0}


def test_a_worker_that_exits_is_reported_with_its_error_and_restarted(rig: Rig) -> None:
    downloaded(rig.dirs, "t-1")
    desired = {6700: la("t-1", (1, 1))}
    rig.mode = "fail"
    first = rig.launch(desired)[6700]
    assert rig.exits_seen.acquire(timeout=30)  # on_exit, from the watcher thread
    rig.reconciler.replace(desired)
    assert rig.reconciler.snapshot() == {}
    assert rig.counters["worker_restarts"] == 1.0
    [record] = rig.reconciler.exits.records([], 0.0)
    assert (record["topology_id"], record["port"], record["restarts"], record["quick_exits"]) == (
        "t-1", 6700, 1, 1)
    assert record["last_exit"] == f"exit code 3: worker stopped: boom in {first.pid}"
    assert rig.dirs.worker_dir("t-1", 6700).is_dir()  # still assigned: its directory stays
    # the first quick exit is relaunched at once; the reason names the new run's own error
    second = rig.launch(desired)[6700]
    assert second.pid != first.pid and second.log_offset > 0
    assert rig.counters["worker_launches"] == 2.0
    assert rig.exits_seen.acquire(timeout=30)
    rig.reconciler.replace(desired)
    [record] = rig.reconciler.exits.records([], 0.0)
    assert record["last_exit"] == f"exit code 3: worker stopped: boom in {second.pid}"
    assert (record["restarts"], record["quick_exits"], record["crash_looping"]) == (2, 2, True)
    assert rig.counters["worker_restarts"] == 2.0
    # the second quick exit in a row holds the relaunch back (1 s), not the other ports' launches
    rig.mode = "beat"
    assert rig.launch({**desired, 6701: la("t-1", (2, 2))}).keys() == {6701}
    assert rig.counters["worker_launches"] == 3.0


def test_the_process_group_of_an_exited_worker_is_killed(rig: Rig) -> None:
    downloaded(rig.dirs, "t-1")
    desired = {6700: la("t-1", (1, 1))}
    rig.mode = "fail-with-child"
    rig.launch(desired)
    assert rig.exits_seen.acquire(timeout=30)
    child = int(rig.dirs.worker_dir("t-1", 6700).joinpath("child-pid").read_text())
    rig.pids.append(child)
    assert not gone(child)
    rig.reconciler.replace(desired)
    wait_for(lambda: gone(child), 30, "the exited worker's child to be killed")


def test_no_exit_callback_while_the_supervisor_stops(rig: Rig) -> None:
    downloaded(rig.dirs, "t-1")
    rig.mode = "fail"
    rig.stopping = True
    handle = rig.launch({6700: la("t-1", (1, 1))})[6700]
    wait_for(lambda: handle.exit_code() is not None, 30, "the worker to exit")
    wait_for(lambda: not any(t.name == "watch-6700" for t in threading.enumerate()), 30,
             "the watcher to end")
    assert not rig.exits_seen.acquire(timeout=0)


@pytest.mark.parametrize("moved_to", [None, "t-2"])
def test_a_worker_no_longer_assigned_here_is_stopped_and_its_directory_removed(
        rig: Rig, moved_to: str | None) -> None:
    downloaded(rig.dirs, "t-1")
    handle = rig.launch({6700: la("t-1", (1, 1))})[6700]
    rig.launch({6701: la("t-1", (2, 2))})
    wait_for_beat(rig, "t-1", 6700)
    wait_for_beat(rig, "t-1", 6701)
    desired = {6701: la("t-1", (2, 2))}
    if moved_to is not None:
        desired[6700] = la(moved_to, (1, 1))
    rig.reconciler.replace(desired)
    assert handle.exit_code() is not None and gone(handle.pid)
    assert sorted(rig.reconciler.snapshot()) == [6701]
    assert not rig.dirs.worker_dir("t-1", 6700).exists()
    assert rig.dirs.worker_dir("t-1", 6701).is_dir()
    assert rig.counters["worker_restarts"] == 0.0
    assert rig.reconciler.exits.records([], 0.0) == []


def test_a_worker_whose_executors_changed_is_restarted_with_the_new_ones(rig: Rig) -> None:
    downloaded(rig.dirs, "t-1")
    handle = rig.launch({6700: la("t-1", (1, 1))})[6700]
    wait_for_beat(rig, "t-1", 6700)
    desired = {6700: la("t-1", (1, 1), (2, 2))}
    rig.reconciler.replace(desired)
    assert handle.exit_code() is not None
    assert rig.reconciler.snapshot() == {}
    assert rig.counters["worker_restarts"] == 1.0
    assert rig.dirs.worker_dir("t-1", 6700).is_dir()
    assert rig.reconciler.exits.records([], 0.0) == []  # a reassignment, not a failure
    assert rig.launch(desired)[6700].executors == ((1, 1), (2, 2))
    wait_for_beat(rig, "t-1", 6700)
    rig.reconciler.replace({6700: la("t-1", (2, 2))})
    assert rig.counters["worker_restarts"] == 2.0


def test_an_adopted_worker_of_unknown_executors_is_kept(rig: Rig) -> None:
    downloaded(rig.dirs, "t-1")
    launched = rig.launch({6700: la("t-1", (1, 1))})[6700]
    wait_for_beat(rig, "t-1", 6700)
    adopted = WorkerHandle("t-1", 6700, launched.pid, launched.launched_at, None, adopted=True)
    with rig.reconciler.lock:
        rig.reconciler.workers[6700] = adopted
    rig.reconciler.replace({6700: la("t-1", (1, 1), (2, 2))})
    assert rig.reconciler.snapshot() == {6700: adopted}
    assert rig.counters["worker_restarts"] == 0.0


@pytest.mark.parametrize(("mode", "reason"), [
    ("stale", "its heartbeat is 10"), ("silent", "no heartbeat ")])
def test_a_worker_with_a_stale_or_no_heartbeat_is_restarted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            mode: str, reason: str) -> None:
    monkeypatch.setattr(reconcile_module, "launch_worker",
                        functools.partial(launch_worker, python=fake_python(tmp_path)))
    rig = Rig(tmp_path, worker_timeout=30.0, start_timeout=0.0)
    try:
        downloaded(rig.dirs, "t-1")
        rig.mode = mode
        desired = {6700: la("t-1", (1, 1))}
        for restarts in (1, 2):
            (rig.dirs.worker_dir("t-1", 6700) / "fake-run.json").unlink(missing_ok=True)
            handle = rig.launch(desired)[6700]
            run_record(rig.dirs, "t-1", 6700)
            before = time.time()
            rig.reconciler.replace(desired)
            after = time.time()
            assert handle.exit_code() is not None
            assert rig.reconciler.snapshot() == {}
            assert rig.counters["worker_restarts"] == restarts
            [record] = rig.reconciler.exits.records([], 0.0)
            assert record["last_exit"].startswith(reason)
            assert (record["topology_id"], record["port"], record["restarts"], record["quick_exits"]) == (
                "t-1", 6700, restarts, restarts)
            assert before <= record["last_exit_time"] <= after
            assert rig.dirs.worker_dir("t-1", 6700).is_dir()
    finally:
        rig.close()


def test_an_exit_without_a_logged_error_is_its_code_alone(rig: Rig) -> None:
    downloaded(rig.dirs, "t-1")
    desired = {6700: la("t-1", (1, 1))}
    rig.mode = "fail"
    rig.launch(desired)
    assert rig.exits_seen.acquire(timeout=30)
    rig.reconciler.replace(desired)
    rig.mode = "die"  # the error of the run before stays in the log, before this run's offset
    rig.launch(desired)
    assert rig.exits_seen.acquire(timeout=30)
    before = time.time()
    rig.reconciler.replace(desired)
    after = time.time()
    [record] = rig.reconciler.exits.records([], 0.0)
    assert record["last_exit"] == "exit code 3"
    assert before <= record["last_exit_time"] <= after


def test_stopping_is_logged_to_the_supervisors_logger_and_a_linked_worker_dir_is_left(
        rig: Rig, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    downloaded(rig.dirs, "t-1")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    rig.dirs.workers_root.mkdir(parents=True)
    rig.dirs.worker_dir("t-1", 6700).symlink_to(elsewhere)  # rmtree refuses a link: not fatal
    handle = rig.launch({6700: la("t-1", (1, 1))})[6700]
    wait_for_beat(rig, "t-1", 6700)
    caplog.set_level(logging.INFO)
    rig.reconciler.replace({})
    assert handle.exit_code() is not None and rig.reconciler.snapshot() == {}
    assert f"stopping {handle.describe()}" in [r.getMessage() for r in caplog.records if r.name == LOG.name]
    assert elsewhere.is_dir()


def test_a_launch_that_fails_is_skipped_and_the_others_still_start(
        rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    real = reconcile_module.launch_worker

    def launch(dirs: SupervisorDirs, topology_id: str, port: int, executors: Any, **kw: Any) -> WorkerHandle:
        if port == 6700:
            raise OSError("no more processes")
        return real(dirs, topology_id, port, executors, **kw)

    monkeypatch.setattr(reconcile_module, "launch_worker", launch)
    downloaded(rig.dirs, "t-1")
    workers = rig.launch({6700: la("t-1", (1, 1)), 6701: la("t-1", (2, 2))})
    assert sorted(workers) == [6701]
    assert rig.counters["worker_launches"] == 1.0
