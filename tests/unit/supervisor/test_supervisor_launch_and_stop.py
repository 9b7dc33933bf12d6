"""Starting and stopping worker processes (stand-in workers through the interpreter argument of
`launch_worker`): the exact command line, working directory, stdin, log, process group, pid
file and environment of a launched worker, what a handle reports, telling a worker from another
process by its command line, and stopping workers with SIGTERM, then SIGKILL after the grace."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from supervisor_stand_ins import downloaded, fake_python, gone, kill_left, make_dirs, run_record

import stormpy.supervisor.launcher as launcher_module
from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.host.processes import command_line
from stormpy.supervisor.launcher import (
    WORKER_MODULE,
    RelaunchBackoff,
    WorkerHandle,
    is_worker_process,
    launch_worker,
    terminate_workers,
    wait_for_exit,
)
from stormpy.supervisor.sync import QUICK_EXIT_SECS
from stormpy.testing import wait_for


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.getMessage()}")


@pytest.fixture
def launched() -> Iterator[list[WorkerHandle]]:
    handles: list[WorkerHandle] = []
    yield handles
    for h in handles:
        if h.proc is not None and h.proc.poll() is None:
            h.proc.kill()
            h.proc.wait()
        kill_left(h.pid)


def start(dirs: SupervisorDirs, python: str, launched: list[WorkerHandle], port: int = 6700,
          mode: str = "beat", topology_id: str = "t-1") -> WorkerHandle:
    handle = launch_worker(dirs, topology_id, port, [(2, 3), (1, 1)], python=python,
                           env=dict(os.environ, FAKE_WORKER=mode, FAKE_MARK=f"mark-{port}"))
    launched.append(handle)
    return handle


def test_a_worker_is_launched_with_its_command_line_directory_log_and_pid_file(
        tmp_path: Path, launched: list[WorkerHandle]) -> None:
    dirs = make_dirs(tmp_path)
    downloaded(dirs, "t-1")
    python = fake_python(tmp_path)
    log = dirs.worker_log("t-1", 6700)
    log.parent.mkdir(parents=True)
    log.write_text("an earlier run's line\n")
    dirs.worker_dir("t-1", 6700).mkdir(parents=True)
    dirs.heartbeat_file("t-1", 6700).write_bytes(b"an earlier run's heartbeat")
    inherited = os.open(os.devnull, os.O_RDONLY)
    os.set_inheritable(inherited, True)
    before = time.time()
    try:
        handle = start(dirs, python, launched, mode="silent")
    finally:
        os.close(inherited)
    after = time.time()
    assert not dirs.heartbeat_file("t-1", 6700).exists()  # removed before the launch
    assert (handle.topology_id, handle.port, handle.executors, handle.adopted) == (
        "t-1", 6700, ((2, 3), (1, 1)), False)
    assert before <= handle.launched_at <= after
    assert handle.log_offset == len("an earlier run's line\n")
    assert handle.proc is not None and handle.pid == handle.proc.pid
    assert dirs.pid_file("t-1", 6700).read_text() == f"{handle.pid}\n"
    run = run_record(dirs, "t-1", 6700)
    assert run["argv"] == [str(tmp_path / "fake_worker.py"), "-m", WORKER_MODULE, "--topology-id", "t-1",
                               "--supervisor-id", "sup-1", "--port", "6700",
                               "--local-dir", str(dirs.local_dir), "--conf-file", str(dirs.conf_file)]
    assert run["cwd"] == str(dirs.code_dir("t-1"))
    assert run["pgid"] == handle.pid  # a session, and so a process group, of its own
    assert run["stdin"] == os.devnull
    assert run["fds"] == [0, 1, 2, 3, 4]  # 3, 4: the record being written, the listing; nothing inherited
    assert run["env"]["FAKE_MARK"] == "mark-6700"
    wait_for(lambda: "fake worker stderr" in log.read_text(), 30, "the worker's output in its log")
    text = log.read_text()
    assert text.startswith("an earlier run's line\n")
    assert "fake worker up\n" in text[handle.log_offset:]
    assert handle.describe() == f"worker t-1:6700 (pid {handle.pid})"


def test_a_worker_is_launched_into_directories_that_do_not_exist_yet(
        tmp_path: Path, launched: list[WorkerHandle]) -> None:
    dirs = SupervisorDirs(tmp_path / "local", "sup-1", tmp_path / "deep" / "logs")
    downloaded(dirs, "t-1")
    # this process's stdin is a pipe: the worker's is /dev/null all the same
    read_end, write_end = os.pipe()
    saved = os.dup(0)
    os.dup2(read_end, 0)
    try:
        handle = start(dirs, fake_python(tmp_path), launched)
    finally:
        os.dup2(saved, 0)
        for fd in (saved, read_end, write_end):
            os.close(fd)
    assert handle.log_offset == 0
    run = run_record(dirs, "t-1", 6700)
    assert run["cwd"] == str(dirs.code_dir("t-1"))
    assert run["stdin"] == os.devnull
    assert dirs.worker_log("t-1", 6700).is_file()


def test_exit_codes_of_launched_and_adopted_handles(tmp_path: Path, launched: list[WorkerHandle]) -> None:
    dirs = make_dirs(tmp_path)
    downloaded(dirs, "t-1")
    python = fake_python(tmp_path)
    failing = start(dirs, python, launched, port=6700, mode="fail")
    wait_for_exit(failing)  # returns once it exited, leaving the code to be read
    assert failing.exit_code() == 3 and not failing.alive
    running = start(dirs, python, launched, port=6701)
    run_record(dirs, "t-1", 6701)
    assert running.exit_code() is None and running.alive
    adopted = WorkerHandle("t-1", 6701, running.pid, 0.0, None, adopted=True)
    assert adopted.exit_code() is None
    wait_for_exit(adopted)  # an adopted worker is not waited for
    assert WorkerHandle("t-1", 6702, running.pid, 0.0, None, adopted=True).exit_code() == -1
    running.signal(signal.SIGTERM)
    wait_for(lambda: running.exit_code() is not None, 30, "the signalled worker to exit")
    assert running.exit_code() == -signal.SIGTERM
    running.signal(signal.SIGKILL)  # gone: nothing happens
    adopted.signal(signal.SIGKILL)


def test_a_code_reaped_elsewhere_is_kept_only_for_a_launched_worker_still_without_one(tmp_path: Path) -> None:
    proc = subprocess.Popen(["true"])
    proc.wait()
    handle = WorkerHandle("t-1", 6700, proc.pid, 0.0, None, proc)
    handle.record_exit(-9)
    assert handle.exit_code() == 0  # it had its own already
    proc.returncode = None
    handle.record_exit(None)
    assert proc.returncode is None
    handle.record_exit(-9)
    assert proc.returncode == -9
    WorkerHandle("t-1", 6700, proc.pid, 0.0, None).record_exit(-9)  # adopted: nothing to keep


def test_a_worker_is_told_from_other_processes_by_its_command_line(
        tmp_path: Path, launched: list[WorkerHandle], monkeypatch: pytest.MonkeyPatch) -> None:
    dirs = make_dirs(tmp_path)
    downloaded(dirs, "t-1")
    handle = start(dirs, fake_python(tmp_path), launched, port=6700)
    run_record(dirs, "t-1", 6700)
    assert is_worker_process(handle.pid, "t-1", 6700)
    assert not is_worker_process(handle.pid, "t-2", 6700)
    assert not is_worker_process(handle.pid, "t-", 6700)  # a prefix of the topology id
    assert not is_worker_process(handle.pid, "t-1", 670)  # a prefix of the port
    assert not is_worker_process(handle.pid, "t-1", 6701)
    assert not is_worker_process(os.getpid(), "t-1", 6700)  # alive, but no worker
    sleep = [sys.executable, "-c", "import time; time.sleep(300)"]
    sleeper = subprocess.Popen([*sleep, WORKER_MODULE, "--topology-id", "t-1", "--port", "6700"])
    try:  # the arguments, but not the module run as `-m`: the module must be an argument of its own
        wait_for(lambda: is_worker_process(sleeper.pid, "t-1", 6700), 30, "the process to show its arguments")
        other = subprocess.Popen([*sleep, WORKER_MODULE + "x", "--topology-id", "t-1", "--port", "6700"])
        try:
            wait_for(lambda: WORKER_MODULE + "x" in (command_line(psutil.Process(other.pid)) or []), 30,
                     "the other process to show its arguments")
            assert not is_worker_process(other.pid, "t-1", 6700)
        finally:
            other.kill()
            other.wait()
    finally:
        sleeper.kill()
        sleeper.wait()
    assert not is_worker_process(sleeper.pid, "t-1", 6700)  # gone
    # a command line the system does not show: the pid file is trusted while the process runs
    monkeypatch.setattr(launcher_module, "command_line", lambda process: None)
    assert is_worker_process(os.getpid(), "t-9", 1)


def test_stopping_sends_sigterm_then_sigkill_after_the_grace_and_logs_it(
        tmp_path: Path, launched: list[WorkerHandle]) -> None:
    dirs = make_dirs(tmp_path)
    downloaded(dirs, "t-1")
    python = fake_python(tmp_path)
    polite = start(dirs, python, launched, port=6700)
    stubborn = start(dirs, python, launched, port=6701, mode="stubborn")
    exited = start(dirs, python, launched, port=6702, mode="fail")
    for port in (6700, 6701):
        run_record(dirs, "t-1", port)
    wait_for_exit(exited)
    logger = logging.getLogger("test-supervisor-stop")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    records = Records()
    logger.addHandler(records)
    try:
        terminate_workers([polite, stubborn, exited], 0.5, logger)
    finally:
        logger.removeHandler(records)
    assert (polite.exit_code(), stubborn.exit_code(), exited.exit_code()) == (
        -signal.SIGTERM, -signal.SIGKILL, 3)
    assert gone(polite.pid) and gone(stubborn.pid)
    assert f"WARNING {stubborn.describe()} did not stop within 0.5 s; killing it" in records.lines
    assert f"INFO stopping {polite.describe()}" in records.lines
    assert f"INFO {polite.describe()} stopped (exit code -15)" in records.lines
    terminate_workers([], 0.5, logger)  # nothing to stop


def test_waiting_for_a_worker_someone_else_reaped_returns_at_once() -> None:
    proc = subprocess.Popen(["true"])
    proc.wait()  # reaped here, as psutil does when it stops a worker
    wait_for_exit(WorkerHandle("t-1", 6700, proc.pid, 0.0, None, proc))


def test_a_long_run_on_a_port_never_held_back_is_relaunched_at_once() -> None:
    relaunch = RelaunchBackoff()
    assert relaunch.note_exit(6700, QUICK_EXIT_SECS) == 0.0
    assert relaunch.may_launch(6700)
    relaunch.forget(6701)  # nothing known: nothing to forget
    relaunch.retain([])


def test_a_stopped_handle_whose_pid_now_names_another_process_leaves_that_process_alone(
        tmp_path: Path) -> None:
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    exited = subprocess.Popen(["true"])
    exited.wait()
    try:
        # the worker exited and its pid was given to another process since
        recycled = WorkerHandle("t-1", 6700, other.pid, 0.0, None, exited)
        terminate_workers([recycled], 0.5)
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()
