"""Processes as the supervisor and the child servers stop them: which pids are live, SIGTERM then
SIGKILL after the grace period, process groups killed whole, children reaped (no zombie left),
children dying with the thread that started them; and a child server's start (port retries, exit
during startup, no answer in time) and stop (reaped, temporary work directory removed)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import psutil
import pytest

from stormpy.host import processes
from stormpy.host.child_server import ChildServer, log_tail
from stormpy.host.processes import (
    command_line,
    kill_process_group,
    live_process,
    parent_death_signal,
    processes_mentioning,
    terminate,
    terminate_popen,
)
from stormpy.host.waiting import wait_for

#: a child that ignores SIGTERM and says so once it does
STUBBORN = ("import signal, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('ready', flush=True)\ntime.sleep(60)\n")


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen[Any]]]:
    procs: list[subprocess.Popen[Any]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)


def _sleeper(spawned: list[subprocess.Popen[Any]], *args: str, **kwargs: Any) -> subprocess.Popen[Any]:
    proc = subprocess.Popen(["sleep", *(args or ("60",))], **kwargs)
    spawned.append(proc)
    return proc


def _stubborn(spawned: list[subprocess.Popen[Any]]) -> subprocess.Popen[Any]:
    proc = subprocess.Popen([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE)
    spawned.append(proc)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    return proc


def _zombie(spawned: list[subprocess.Popen[Any]], *args: str) -> subprocess.Popen[Any]:
    proc = subprocess.Popen(["sleep", *args])
    spawned.append(proc)
    wait_for(lambda: psutil.Process(proc.pid).status() == psutil.STATUS_ZOMBIE, 30, "a zombie")
    return proc


def test_live_process_is_none_for_no_pid_a_zombie_or_a_reaped_pid(
        spawned: list[subprocess.Popen[Any]]) -> None:
    for pid in (0, -1):
        assert live_process(pid) is None
    me = live_process(os.getpid())
    assert me is not None and me.pid == os.getpid()
    zombie = _zombie(spawned, "0")
    assert live_process(zombie.pid) is None
    zombie.wait()
    assert live_process(zombie.pid) is None


def test_live_process_of_a_process_we_may_not_inspect(monkeypatch: pytest.MonkeyPatch) -> None:
    class Guarded(psutil.Process):
        def status(self) -> str:
            raise psutil.AccessDenied(self.pid)
    monkeypatch.setattr(processes.psutil, "Process", Guarded)
    seen = live_process(os.getpid())
    assert seen is not None and seen.pid == os.getpid()
    monkeypatch.setattr(processes.psutil, "pid_exists", lambda _pid: False)
    assert live_process(os.getpid()) is None


def test_command_line_of_a_running_and_a_gone_process(spawned: list[subprocess.Popen[Any]]) -> None:
    proc = _sleeper(spawned, "61.5")
    handle = psutil.Process(proc.pid)
    wait_for(lambda: command_line(handle) == ["sleep", "61.5"], 30, "the exec")
    proc.kill()
    proc.wait()
    assert command_line(handle) is None

    class Hidden:
        def cmdline(self) -> list[str]:
            raise psutil.AccessDenied(1)
    assert command_line(Hidden()) is None  # type: ignore[arg-type]


def test_terminate_sigterms_all_and_reaps_them(spawned: list[subprocess.Popen[Any]]) -> None:
    procs = [_sleeper(spawned) for _ in range(2)]
    killed: list[int] = []
    gone, alive = terminate([psutil.Process(p.pid) for p in procs], 30,
                            on_kill=lambda p: killed.append(p.pid))
    assert sorted(p.pid for p in gone) == sorted(p.pid for p in procs) and alive == []
    assert [p.returncode for p in gone] == [-signal.SIGTERM] * 2 and killed == []
    assert all(live_process(p.pid) is None for p in procs)


def test_terminate_kills_what_ignores_sigterm_after_the_grace(spawned: list[subprocess.Popen[Any]]) -> None:
    stubborn = _stubborn(spawned)
    polite = _sleeper(spawned)
    handles = [psutil.Process(stubborn.pid), psutil.Process(polite.pid)]
    killed: list[int] = []
    gone, alive = terminate(iter(handles), 1.0, on_kill=lambda p: killed.append(p.pid))
    assert alive == [] and killed == [stubborn.pid]
    codes = {p.pid: p.returncode for p in gone}
    assert codes == {polite.pid: -signal.SIGTERM, stubborn.pid: -signal.SIGKILL}


def test_terminate_with_no_grace_and_without_on_kill(spawned: list[subprocess.Popen[Any]]) -> None:
    stubborn = _stubborn(spawned)
    gone, alive = terminate([psutil.Process(stubborn.pid)], -5)
    assert [p.returncode for p in gone] == [-signal.SIGKILL] and alive == []


def test_terminate_of_a_gone_process_is_quiet(spawned: list[subprocess.Popen[Any]]) -> None:
    proc = _sleeper(spawned)
    handle = psutil.Process(proc.pid)
    proc.kill()
    proc.wait()
    gone, alive = terminate([handle], 1)
    assert [p.pid for p in gone] == [proc.pid] and alive == []


def test_terminate_reports_what_even_sigkill_did_not_end(monkeypatch: pytest.MonkeyPatch,
                                                         spawned: list[subprocess.Popen[Any]]) -> None:
    proc = _sleeper(spawned)
    handle = psutil.Process(proc.pid)
    waits: list[float | None] = []

    def never_gone(procs: list[psutil.Process], timeout: float | None = None) -> tuple[list[Any], list[Any]]:
        waits.append(timeout)
        return [], list(procs)
    monkeypatch.setattr(processes.psutil, "wait_procs", never_gone)
    monkeypatch.setattr(handle, "kill", lambda: None)
    monkeypatch.setattr(handle, "send_signal", lambda _sig: None)
    gone, alive = terminate([handle], 2.5, kill_wait=0.75)
    assert gone == [] and alive == [handle] and waits == [2.5, 0.75]
    waits.clear()
    terminate([handle], 1)
    assert waits == [1, 5.0]


def test_a_process_group_is_killed_whole(spawned: list[subprocess.Popen[Any]]) -> None:
    leader = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!; wait"], stdout=subprocess.PIPE,
                              start_new_session=True)
    spawned.append(leader)
    assert leader.stdout is not None
    grandchild = int(leader.stdout.readline())
    kill_process_group(leader.pid)
    assert leader.wait(30) == -signal.SIGKILL
    wait_for(lambda: live_process(grandchild) is None, 30, "the group's other process killed")
    kill_process_group(leader.pid)  # an empty group: nothing happens
    kill_process_group(2 ** 22 + 12345)


def test_processes_mentioning_lists_other_live_processes_only(spawned: list[subprocess.Popen[Any]]) -> None:
    mark = f"{os.getpid() % 1000}.4242"
    one = _sleeper(spawned, "70." + mark.replace(".", ""))
    two = _sleeper(spawned, "71." + mark.replace(".", ""))
    _zombie(spawned, "0." + mark.replace(".", ""))
    found = processes_mentioning(mark.replace(".", ""))
    assert found == sorted([one.pid, two.pid])
    me = psutil.Process().cmdline()
    assert os.getpid() not in processes_mentioning(me[0])


def test_a_child_dies_with_the_thread_that_started_it(spawned: list[subprocess.Popen[Any]]) -> None:
    hook = parent_death_signal()
    assert hook is not None
    started: list[subprocess.Popen[Any]] = []
    thread = threading.Thread(target=lambda: started.append(_sleeper(spawned, preexec_fn=hook)))
    thread.start()
    thread.join(30)
    assert started[0].wait(30) == -signal.SIGTERM


def test_parent_death_signal_elsewhere_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes.sys, "platform", "darwin")
    assert parent_death_signal() is None


def test_terminate_popen_sigterms_kills_after_the_grace_and_reaps(
        spawned: list[subprocess.Popen[Any]]) -> None:
    polite = _sleeper(spawned)
    terminate_popen(polite, 30)
    assert polite.returncode == -signal.SIGTERM
    stubborn = _stubborn(spawned)
    terminate_popen(stubborn, 0.2)
    assert stubborn.returncode == -signal.SIGKILL
    done = subprocess.Popen(["true"])
    spawned.append(done)
    done.wait()
    terminate_popen(done, 1)
    assert done.returncode == 0


# -- child servers -------------------------------------------------------------------------------

SERVER = """
import os, socket, sys, time
mode = sys.argv[2]
if mode == "exit":
    print("cannot start: bad config", flush=True)
    sys.exit(3)
if mode == "in-use":
    print("Address already " + "IN " + "USE", flush=True)  # the words not in the logged command
    sys.exit(1)
if mode == "silent":
    time.sleep(60)
if mode == "stubborn":
    import signal
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
print("serving in", os.getcwd(), "env", os.environ.get("CHILD_MARK", "-"), flush=True)
print("std" + "in is " + os.readlink("/proc/self/fd/0"), flush=True)  # words not in the logged command
print("on " + "stderr", file=sys.stderr, flush=True)
while True:
    s.accept()[0].close()
"""


class TinyServer(ChildServer):
    kind = "the tiny server"
    start_error: ClassVar[type[Exception]] = ConnectionError
    temp_prefix = "stormpy-tiny-"
    log_name = "tiny.log"
    poll_secs = 0.02
    mode = "serve"

    def __init__(self, *args: Any, env: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.env = env
        self.ports: list[int] = []

    def command(self) -> list[str]:
        self.ports.append(self.port)
        return [sys.executable, "-c", SERVER, str(self.port), self.mode]

    def launch_env(self) -> dict[str, str] | None:
        return self.env

    def serving(self) -> bool:
        with socket.create_connection((self.host, self.port), timeout=1):
            return True


def test_a_child_server_starts_serves_and_stops_cleanly() -> None:
    server = TinyServer(startup_timeout_secs=30, env={**os.environ, "CHILD_MARK": "m1"})
    with pytest.raises(RuntimeError, match=r"^TinyServer.port is known only after start\(\)$"):
        _ = server.port
    assert server.pid is None and not server.running and server.returncode is None
    assert server.work_dir is None and server.log_path is None and server.log_tail() == ""
    with server:
        assert server.running and server.pid is not None and server.returncode is None
        assert server.address == f"127.0.0.1:{server.port}" and server.ports == [server.port]
        work = server.work_dir
        assert work is not None and work.name.startswith("stormpy-tiny-")
        assert server.log_path == work / "tiny.log"
        wait_for(lambda: "serving in" in server.log_tail(), 30, "the server's line")
        log = server.log_tail()
        assert f"--- stormpy: {sys.executable} -c" in log
        assert f"serving in {work} env m1" in log
        wait_for(lambda: server.log_tail(1) == "on stderr", 30, "the server's stderr in its log")
        assert "stdin is /dev/null" in server.log_tail()
        assert server.log_tail(1) == "on stderr"
        with pytest.raises(RuntimeError, match="^TinyServer already started$"):
            server.start()
        pid = server.pid
        assert psutil.Process(pid).ppid() == os.getpid()
        assert os.getsid(pid) == pid  # its own session: a Ctrl-C reaches the parent only
    assert not server.running and server.pid is None and not work.exists()
    assert live_process(pid) is None
    assert all(f.path != str(work / "tiny.log") for f in psutil.Process().open_files())  # log closed
    server.stop()  # idempotent


def test_a_given_port_and_work_dir_are_kept(tmp_path: Path) -> None:
    from stormpy.host.ports import free_port

    port = free_port()
    work = tmp_path / "zk" / "data"
    server = TinyServer(port, work_dir=work, startup_timeout_secs=30, die_with_parent=False)
    assert server.port == port
    server.start()
    try:
        assert server.work_dir == work.resolve() and server.ports == [port]
        assert server.serving()
    finally:
        server.stop(grace_secs=5)
    assert (work / "tiny.log").exists()  # not a temporary directory: left in place
    assert server.returncode is None and not server.running


class ExitingServer(TinyServer):
    mode = "exit"


class PortTakenServer(TinyServer):
    mode = "in-use"


class SilentServer(TinyServer):
    mode = "silent"


def test_a_server_exiting_during_startup_is_the_subclass_error_with_its_log() -> None:
    server = ExitingServer(startup_timeout_secs=30)
    with pytest.raises(ConnectionError) as raised:
        server.start()
    message = str(raised.value)
    assert message.startswith("the tiny server exited with status 3 during startup (log ")
    assert "cannot start: bad config" in message and len(server.ports) == 1
    assert server.work_dir is not None and not server.work_dir.exists() and not server.running


def test_a_taken_port_is_retried_on_other_ports_three_times(tmp_path: Path) -> None:
    server = PortTakenServer(startup_timeout_secs=30, work_dir=tmp_path / "w")
    with pytest.raises(ConnectionError, match="exited with status 1"):
        server.start()
    assert len(server.ports) == 3
    assert (tmp_path / "w" / "tiny.log").read_text().count("--- stormpy:") == 3
    given = PortTakenServer(server.ports[0], startup_timeout_secs=30, work_dir=tmp_path / "g")
    with pytest.raises(ConnectionError):
        given.start()
    assert given.ports == [server.ports[0]]  # a port the user chose is not replaced


def test_a_server_that_never_answers_is_stopped_with_a_timeout_error() -> None:
    server = SilentServer(startup_timeout_secs=0.3)
    with pytest.raises(ConnectionError) as raised:
        server.start()
    assert str(raised.value).startswith(
        f"the tiny server on 127.0.0.1:{server.ports[0]} did not start serving within 0.3 s (log ")
    assert len(server.ports) == 1 and not server.running
    assert server.work_dir is not None and not server.work_dir.exists()


def test_an_unexpected_failure_while_starting_cleans_up(monkeypatch: pytest.MonkeyPatch) -> None:
    server = TinyServer(startup_timeout_secs=30)

    def broken() -> bool:
        raise KeyboardInterrupt
    monkeypatch.setattr(server, "serving", broken)
    with pytest.raises(KeyboardInterrupt):
        server.start()
    assert not server.running and server.work_dir is not None and not server.work_dir.exists()


def test_a_forgotten_server_takes_its_process_with_it() -> None:
    import gc

    server = TinyServer(startup_timeout_secs=30)
    server.start()
    proc = server._proc
    assert proc is not None
    del server
    gc.collect()
    assert proc.poll() is not None and proc.returncode == -signal.SIGTERM


def test_log_tail_reads_the_last_lines_of_at_most_64_kib(tmp_path: Path) -> None:
    assert log_tail(None) == "" and log_tail(tmp_path / "none.log") == ""
    path = tmp_path / "server.log"
    path.write_text("".join(f"line {i}\n" for i in range(100)))
    assert log_tail(path, 3) == "line 97\nline 98\nline 99"
    assert log_tail(path).splitlines()[0] == "line 60"
    path.write_bytes(b"first\n" + b"x" * (70 * 1024) + b"\n\xffend\n")
    tail = log_tail(path, 100)
    assert "first" not in tail and tail.endswith("\ufffdend")
    assert len(tail.splitlines()[0]) == 64 * 1024 - len("\n\xffend\n")


def test_init_is_a_live_process() -> None:
    init = live_process(1)
    assert init is not None and init.pid == 1


def test_a_process_we_may_not_inspect_is_that_process(monkeypatch: pytest.MonkeyPatch,
                                                      spawned: list[subprocess.Popen[Any]]) -> None:
    other = _sleeper(spawned)

    class Guarded(psutil.Process):
        def status(self) -> str:
            raise psutil.AccessDenied(self.pid)
    monkeypatch.setattr(processes.psutil, "Process", Guarded)
    seen = live_process(other.pid)
    assert seen is not None and seen.pid == other.pid


def test_a_group_we_may_not_signal_is_left_quietly(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, int]] = []

    def refused(pgid: int, sig: int) -> None:
        calls.append((pgid, sig))
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(processes.os, "killpg", refused)
    kill_process_group(4242)
    assert calls == [(4242, signal.SIGKILL)]


def test_a_process_gone_before_its_sigkill_is_quiet(monkeypatch: pytest.MonkeyPatch,
                                                    spawned: list[subprocess.Popen[Any]]) -> None:
    stubborn = _stubborn(spawned)
    handle = psutil.Process(stubborn.pid)
    real_kill = handle.kill

    def kill_then_gone() -> None:
        real_kill()
        raise psutil.NoSuchProcess(handle.pid)
    monkeypatch.setattr(handle, "kill", kill_then_gone)
    killed: list[int] = []
    gone, alive = terminate([handle], 0.2, on_kill=lambda p: killed.append(p.pid))
    assert killed == [stubborn.pid] and [p.pid for p in gone] == [stubborn.pid] and alive == []


class StubbornServer(TinyServer):
    mode = "stubborn"
    stop_grace_secs = 120.0


class QuickStubbornServer(TinyServer):
    mode = "stubborn"
    stop_grace_secs = 0.2


def test_a_server_that_ignores_sigterm_is_killed_after_the_grace() -> None:
    server = StubbornServer(startup_timeout_secs=30).start()
    proc = server._proc
    assert proc is not None
    server.stop(grace_secs=0.2)
    assert proc.returncode == -signal.SIGKILL
    quick = QuickStubbornServer(startup_timeout_secs=30).start()
    proc = quick._proc
    assert proc is not None
    quick.stop()  # the class's grace
    assert proc.returncode == -signal.SIGKILL


def test_stop_before_start_and_a_vanished_work_dir_are_harmless() -> None:
    import shutil

    never = TinyServer()
    never.stop()
    assert never.log_tail() == "" and not never.running
    server = TinyServer(startup_timeout_secs=30).start()
    assert server.work_dir is not None
    shutil.rmtree(server.work_dir)
    server.stop()
    assert not server.running


def test_an_existing_work_dir_is_used(tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_text("kept")
    server = TinyServer(work_dir=tmp_path, startup_timeout_secs=30).start()
    try:
        assert server.work_dir == tmp_path.resolve()
    finally:
        server.stop()
    assert (tmp_path / "old.txt").read_text() == "kept" and (tmp_path / "tiny.log").exists()


def test_the_log_tail_defaults_to_40_lines(tmp_path: Path) -> None:
    server = SilentServer(work_dir=tmp_path)
    server.log_path = tmp_path / "tiny.log"
    server.log_path.write_text("".join(f"l{i}\n" for i in range(50)))
    assert server.log_tail().splitlines() == [f"l{i}" for i in range(10, 50)]
    assert server.log_tail(2) == "l48\nl49"
    short = tmp_path / "short.log"
    short.write_text("ab\ncd")
    assert log_tail(short) == "ab\ncd"  # from the first byte


@pytest.mark.parametrize("die_with_parent", [True, False])
def test_a_server_dies_with_the_thread_that_started_it_unless_told_not_to(die_with_parent: bool) -> None:
    from stormpy.host.waiting import stays_unchanged

    started: list[TinyServer] = []

    def start() -> None:
        kwargs = {} if die_with_parent else {"die_with_parent": False}
        started.append(TinyServer(startup_timeout_secs=30, **kwargs).start())  # type: ignore[arg-type]
    thread = threading.Thread(target=start)
    thread.start()
    thread.join(60)
    server = started[0]
    try:
        if die_with_parent:
            wait_for(lambda: not server.running, 30, "the server to die with its thread")
            assert server.returncode == -signal.SIGTERM
        else:
            stays_unchanged(lambda: server.running, 0.3, "the server outliving its thread")
    finally:
        server.stop()


def test_a_server_reads_nothing_from_our_stdin() -> None:
    read_end, write_end = os.pipe()
    saved = os.dup(0)
    os.dup2(read_end, 0)  # our stdin is a pipe now: a child inheriting it would show the pipe
    try:
        server = TinyServer(startup_timeout_secs=30).start()
    finally:
        os.dup2(saved, 0)
        for fd in (saved, read_end, write_end):
            os.close(fd)
    try:
        wait_for(lambda: server.log_tail(1) == "on stderr", 30, "the server's lines")
        assert "stdin is /dev/null" in server.log_tail()
    finally:
        server.stop()
