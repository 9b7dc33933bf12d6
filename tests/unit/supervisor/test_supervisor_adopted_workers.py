"""A restarted supervisor takes over the workers its previous run left running (stand-in worker
processes): what an adopted worker's handle holds, a leftover on a port no longer offered or
already taken being stopped, and removing unused code and worker directories going on past a
directory that cannot be removed."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from supervisor_stand_ins import downloaded, fake_python, gone, kill_left, make_dirs, run_record

from stormpy.supervisor.adoption import adopt_workers
from stormpy.supervisor.cleanup import remove_unused
from stormpy.supervisor.launcher import WorkerHandle, launch_worker, terminate_workers
from stormpy.testing import wait_for
from stormpy.worker.heartbeats import write_local_heartbeat

LOG = logging.getLogger("test-supervisor-adoption")


@pytest.fixture
def started() -> Iterator[list[WorkerHandle]]:
    handles: list[WorkerHandle] = []
    yield handles
    terminate_workers(handles, 5.0, LOG)
    kill_left(*(h.pid for h in handles))


def test_running_workers_are_adopted_with_their_executors_and_launch_time(
        tmp_path: Path, started: list[WorkerHandle]) -> None:
    dirs = make_dirs(tmp_path)
    python = fake_python(tmp_path)
    for tid in ("t-1", "t-2"):
        downloaded(dirs, tid)
    beating = launch_worker(dirs, "t-1", 6700, [(1, 1)], python=python,
                            env=dict(os.environ, FAKE_EXECUTORS=json.dumps([[1, 1], [4, 5]])))
    silent = launch_worker(dirs, "t-2", 6701, [(2, 2)], python=python,
                           env=dict(os.environ, FAKE_WORKER="silent"))
    started.extend([beating, silent])
    wait_for(lambda: dirs.heartbeat_file("t-1", 6700).is_file(), 30, "the first worker's heartbeat")
    run_record(dirs, "t-2", 6701)
    # the silent worker's heartbeat file was written by another process: its executors are unknown
    write_local_heartbeat(dirs.heartbeat_file("t-2", 6701), time=time.time(), pid=silent.pid + 100000,
                          topology_id="t-2", port=6701, executors=[(2, 2)])
    os.utime(dirs.pid_file("t-1", 6700), (1000.0, 1000.0))
    dirs.worker_dir("a-dead", 6701).mkdir()  # listed first, without a worker: skipped
    adopted = adopt_workers(dirs, (6700, 6701), 5.0, LOG)
    assert sorted(adopted) == [6700, 6701]
    a = adopted[6700]
    assert (a.topology_id, a.port, a.pid, a.launched_at, a.executors, a.proc, a.adopted) == (
        "t-1", 6700, beating.pid, 1000.0, ((1, 1), (4, 5)), None, True)
    b = adopted[6701]
    assert (b.topology_id, b.port, b.pid, b.executors, b.adopted) == ("t-2", 6701, silent.pid, None, True)
    assert b.launched_at == dirs.pid_file("t-2", 6701).stat().st_mtime
    assert a.exit_code() is None and b.exit_code() is None  # judged as running workers


def test_a_leftover_on_a_port_not_offered_or_taken_is_stopped(
        tmp_path: Path, started: list[WorkerHandle], caplog: pytest.LogCaptureFixture) -> None:
    dirs = make_dirs(tmp_path)
    python = fake_python(tmp_path)
    for tid in ("t-1", "t-2", "t-3"):
        downloaded(dirs, tid)
    first = launch_worker(dirs, "t-1", 6700, [(1, 1)], python=python)
    taken = launch_worker(dirs, "t-2", 6700, [(2, 2)], python=python)  # the same port, another topology
    unoffered = launch_worker(dirs, "t-3", 6799, [(3, 3)], python=python)
    started.extend([first, taken, unoffered])
    for tid, port in (("t-1", 6700), ("t-2", 6700), ("t-3", 6799)):
        run_record(dirs, tid, port)
    caplog.set_level(logging.INFO)
    adopted = adopt_workers(dirs, (6700, 6701), 5.0, LOG)
    assert {port: h.pid for port, h in adopted.items()} == {6700: first.pid}
    wait_for(lambda: gone(taken.pid) and gone(unoffered.pid), 30, "the leftovers to be stopped")
    assert not gone(first.pid)
    said = [r.getMessage() for r in caplog.records if r.name == LOG.name]
    for leftover in (taken, unoffered):  # stopping them is told in the supervisor's own log
        assert f"stopping worker {leftover.topology_id}:{leftover.port} (pid {leftover.pid})" in said


def test_removing_unused_directories_goes_on_past_one_that_cannot_be_removed(tmp_path: Path) -> None:
    dirs = make_dirs(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "kept.txt").write_text("not ours to remove")
    dirs.stormdist_root.mkdir(parents=True)
    (dirs.stormdist_root / "a-linked").symlink_to(elsewhere)  # rmtree refuses a link
    (dirs.stormdist_root / "b-gone").mkdir()
    dirs.workers_root.mkdir(parents=True)
    (dirs.workers_root / "a-linked-6700").symlink_to(elsewhere)
    (dirs.workers_root / "b-gone-6701").mkdir()
    remove_unused(dirs, set(), set(), LOG)
    assert sorted(p.name for p in dirs.stormdist_root.iterdir()) == ["a-linked"]
    assert sorted(p.name for p in dirs.workers_root.iterdir()) == ["a-linked-6700"]
    assert (elsewhere / "kept.txt").is_file()
