"""ShellProcess, one subprocess speaking the multilang protocol, against real subprocesses: the
handshake and its pid, messages both ways in either serializer (large ones, and many at once),
the count of tuples not yet written, the stderr log, and ``stop``: the whole process group ends
(a child that ignores SIGTERM too), nothing is delivered after it."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from mlkit import FIXTURES, no_subprocess_left_behind
from shell_rig import TaskLoop, player_command

from stormpy.multilang import JsonCodec, MsgpackCodec
from stormpy.multilang import _process as process_module
from stormpy.multilang._process import ShellProcess
from stormpy.multilang._serializers import Codec
from stormpy.testing import wait_for


@pytest.fixture(autouse=True)
def _no_subprocess_left_behind() -> Iterator[None]:
    yield from no_subprocess_left_behind()


class Host:
    """What the owner of a ShellProcess sees: messages, faults, readiness and room, delivered
    through its loop."""

    def __init__(self) -> None:
        self.loop = TaskLoop()
        self.messages: list[Any] = []
        self.faults: list[str] = []
        self.ready = 0
        self.rooms = 0

    def process(self, command: list[str], tmp_path: Path, codec: Codec | None = None,
                max_pending: int = 0, env: dict[str, str] | None = None) -> ShellProcess:
        full_env = {**os.environ, "REPLAY_DIR": str(tmp_path), "STORMPY_MULTILANG_SERIALIZER":
                    (codec or JsonCodec()).name, **(env or {})}
        return ShellProcess("shell:1", command, str(tmp_path), full_env, codec or JsonCodec(), 30.0,
                            1.0, self.loop.call_soon, self.messages.append, self.faults.append,
                            on_ready=self._on_ready, on_room=self._on_room, max_pending=max_pending)

    def _on_ready(self) -> None:
        self.ready += 1

    def _on_room(self) -> None:
        self.rooms += 1

    def run_until(self, condition: Any, what: str) -> Any:
        def ran_and_holds() -> Any:
            self.loop.run_pending()
            return condition()
        return wait_for(ran_and_holds, 30, what)


def handshake(pid_dir: str) -> dict[str, Any]:
    return {"conf": {}, "context": {"taskid": 1, "componentid": "shell",
                                    "task->component": {"1": "shell"}}, "pidDir": pid_dir}


@pytest.mark.parametrize("codec", [JsonCodec(), MsgpackCodec()], ids=["json", "msgpack"])
def test_large_and_many_messages_go_both_ways_in_order(tmp_path: Path, codec: Codec) -> None:
    big = "x" * 200_000  # several reads and writes of the pipes
    runs = [[{"expect": {"id": "t0", "tuple": [big]}},
             {"send": {"command": "emit", "tuple": [big]}},
             {"echo": True}]]
    host = Host()
    proc = host.process(player_command(tmp_path, runs), tmp_path, codec)
    try:
        proc.start(handshake)
        host.run_until(lambda: host.ready, "the pid")
        assert proc.pid == proc.os_pid and proc.running
        assert os.path.exists(os.path.join(proc._pid_dir, str(proc.pid)))  # the pid file
        proc.send({"id": "t0", "comp": "c", "stream": "default", "task": 1, "tuple": [big]})
        for i in range(1, 3000):  # queued faster than written: batched writes
            proc.send({"id": f"t{i}", "comp": "c", "stream": "default", "task": 1, "tuple": [i]},
                      counted=True)
        assert proc.has_room() and proc.want_room()  # no max_pending: no limit
        host.run_until(lambda: len(host.messages) >= 1 + 2 * 2999, "every echo and ack")
        assert host.messages[0] == {"command": "emit", "tuple": [big]}
        echoed = [m["tuple"][0] for m in host.messages[1:] if m["command"] == "emit"]
        acked = [m["id"] for m in host.messages[1:] if m["command"] == "ack"]
        assert echoed == list(range(1, 3000)) and acked == [f"t{i}" for i in range(1, 3000)]
        assert proc.tuples_queued == 0 and proc.queued == 0 and host.faults == []
    finally:
        proc.stop()
    assert not proc.running and not os.path.exists(proc._pid_dir)


def held_echo(host: Host, tmp_path: Path, release: Path, max_pending: int) -> ShellProcess:
    """The echo bolt fixture that holds the tuple it read until ``release`` exists, as a
    process of ``host`` (not started)."""
    return host.process([sys.executable, str(FIXTURES / "held_echo.py")], tmp_path,
                        max_pending=max_pending,
                        env={"RELEASE_FILE": str(release), "PYTHONPATH": str(FIXTURES)})


def start_until_full(host: Host, proc: ShellProcess) -> None:
    """Start ``proc`` (a held echo of max pending 1) and send it three large tuples, until it
    has no room: its want_room() is then asked (False) and the room it makes is announced."""
    proc.start(handshake)
    host.run_until(lambda: host.ready, "the pid")
    for i in range(3):
        proc.send({"id": str(i), "comp": "c", "stream": "default", "task": 1,
                   "tuple": ["v" * 40_000]}, counted=True)
    host.run_until(lambda: not proc.has_room(), "tuples not written")
    assert not proc.want_room()


def test_tuples_not_yet_written_are_counted_and_room_is_announced_once_written(
        tmp_path: Path) -> None:
    release = tmp_path / "release"
    host = Host()
    proc = held_echo(host, tmp_path, release, max_pending=2)
    try:
        proc.start(handshake)
        host.run_until(lambda: host.ready, "the pid")
        assert proc.has_room() and proc.want_room()  # room now: no on_room() will follow
        value = "v" * 40_000
        for i in range(4):  # the first is read and held, the pipe fills with the next
            proc.send({"id": str(i), "comp": "c", "stream": "default", "task": 1, "tuple": [value]},
                      counted=True)
        host.run_until(lambda: proc.tuples_queued >= 2, "tuples not written")
        assert not proc.has_room() and not proc.want_room()
        queued = proc.tuples_queued
        proc.send({"id": "h", "comp": None, "stream": "__heartbeat", "task": -1, "tuple": []})
        assert proc.tuples_queued == queued  # only tuples sent as counted are counted
        assert host.rooms == 0
        release.touch()
        host.run_until(lambda: host.rooms == 1, "room announced")
        host.run_until(lambda: proc.tuples_queued == 0, "every tuple written")
        assert proc.has_room() and host.rooms == 1
    finally:
        proc.stop()


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


WRAPPER = textwrap.dedent('''
    import json, os, signal, subprocess, sys
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"])
    lines = []
    while True:
        line = sys.stdin.readline()
        if line.strip() == "end":
            break
    print("a line on stderr", file=sys.stderr, flush=True)
    sys.stdout.write(json.dumps({"pid": os.getpid()}) + "\\nend\\n")
    sys.stdout.write(json.dumps({"command": "log", "msg": str(child.pid)}) + "\\nend\\n")
    sys.stdout.flush()
    sys.stdin.read()
''')


def test_stop_ends_the_whole_process_group_even_what_ignores_sigterm(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "wrapper.py").write_text(WRAPPER)
    host = Host()
    proc = host.process([sys.executable, "wrapper.py"], tmp_path)
    with caplog.at_level(logging.INFO, logger="stormpy.multilang"):
        proc.start(handshake)
        try:
            host.run_until(lambda: host.messages, "the child's pid")
        finally:
            proc.stop()
        child = int(host.messages[0]["msg"])
        assert not running(proc.pid or 0)  # reaped by stop()
        wait_for(lambda: not running(child), 30, "the child killed")  # reaped by whoever adopted it
        assert "shell:1 stderr: a line on stderr" in [r.getMessage() for r in caplog.records]
    assert not proc.running and all(not t.is_alive() for t in proc._threads)
    proc.stop()  # again: nothing to do
    host.loop.run_pending()
    assert host.faults == []  # the end that stop() caused is no fault


def script(tmp_path: Path, name: str, body: str) -> list[str]:
    """A subprocess running ``body`` after answering the handshake with its pid (JSON)."""
    (tmp_path / name).write_text(textwrap.dedent('''
        import json, os, sys, time
        def write(msg):
            sys.stdout.write(json.dumps(msg) + "\\nend\\n")
            sys.stdout.flush()
        while sys.stdin.readline().strip() != "end":
            pass
        write({"pid": os.getpid()})
    ''') + textwrap.dedent(body))
    return [sys.executable, name]


@pytest.mark.parametrize(("body", "fault"), [
    ("os.close(1)\nsys.stdin.read()\n", "subprocess closed its output"),
    ("os.close(0)\nwrite({'command': 'sync'})\ntime.sleep(60)\n",
     "writing to it failed: [Errno 32] Broken pipe"),
], ids=["stdout closed", "stdin closed"])
def test_a_subprocess_that_closes_a_pipe_but_keeps_running_is_a_fault(
        tmp_path: Path, body: str, fault: str) -> None:
    host = Host()
    proc = host.process(script(tmp_path, "closing.py", body), tmp_path)
    try:
        proc.start(handshake)
        host.run_until(lambda: host.ready, "the pid")
        host.run_until(lambda: host.messages or fault.startswith("subprocess"), "its message")
        proc.send({"id": "1", "comp": "c", "stream": "default", "task": 1, "tuple": ["x" * 100_000]})
        host.run_until(lambda: host.faults, "the fault")
        assert host.faults == [fault]
        assert not proc.running  # a fault ends the delivery
    finally:
        proc.stop()


def test_an_always_watched_subprocess_silent_for_the_timeout_has_hung(tmp_path: Path) -> None:
    host = Host()
    proc = ShellProcess("shell:1", script(tmp_path, "silent.py", "sys.stdin.read()\n"),
                        str(tmp_path), dict(os.environ), JsonCodec(), 0.5, 0.1, host.loop.call_soon,
                        host.messages.append, host.faults.append)
    proc.always_watched = True
    try:
        proc.start(handshake)
        host.run_until(lambda: host.faults, "the hang")
        [fault] = host.faults
        assert fault.startswith("subprocess heartbeat timeout: nothing heard for ")
        assert fault.endswith(" s (timeout 0.5 s)")
    finally:
        proc.stop()


def test_nothing_is_delivered_after_stop(tmp_path: Path) -> None:
    host = Host()
    proc = host.process(script(tmp_path, "talking.py", '''
        write({"command": "log", "msg": "one"})
        write({"command": "log", "msg": "two"})
        sys.stdin.read()
    '''), tmp_path)
    proc.start(handshake)
    try:
        wait_for(lambda: host.loop.pending, 30, "messages handed to the loop")
    finally:
        proc.stop()
    host.loop.run_pending()
    assert host.ready == 0 and host.messages == [] and host.faults == []


def multilang_threads() -> dict[str, bool]:
    """The running threads of the subprocess named shell:1: name → daemon."""
    return {t.name: t.daemon for t in threading.enumerate() if t.name.endswith("-shell:1")}


def test_a_subprocess_is_served_by_named_daemon_threads_that_end_with_it_and_its_pipes(
        tmp_path: Path) -> None:
    host = Host()
    command = script(tmp_path, "quiet.py", "sys.stdin.read()\n")
    fds = psutil.Process().num_fds()
    proc = host.process(command, tmp_path)
    try:
        proc.start(handshake)
        host.run_until(lambda: host.ready, "the pid")
        assert multilang_threads() == {f"multilang-{what}-shell:1": True
                                       for what in ("reader", "writer", "stderr", "watchdog")}
    finally:
        proc.stop()
    wait_for(lambda: multilang_threads() == {}, 30, "the threads ended")
    assert psutil.Process().num_fds() == fds  # its three pipes closed: no descriptor leaks


def test_a_subprocess_that_never_answers_the_handshake_has_hung_and_gets_no_heartbeat(
        tmp_path: Path) -> None:
    (tmp_path / "mute.py").write_text("import sys\nsys.stdin.read()\n")
    host = Host()
    beats: list[int] = []

    def heartbeat() -> Any:
        beats.append(1)
        return {"id": "h", "comp": None, "stream": "__heartbeat", "task": -1, "tuple": []}
    proc = ShellProcess("shell:1", [sys.executable, "mute.py"], str(tmp_path), dict(os.environ),
                        JsonCodec(), 0.5, 0.1, host.loop.call_soon, host.messages.append,
                        host.faults.append, heartbeat=heartbeat)
    try:
        proc.start(handshake)
        host.run_until(lambda: host.faults, "the hang")
        assert host.faults[0].startswith("subprocess heartbeat timeout: nothing heard for ")
        assert beats == [] and host.ready == 0
    finally:
        proc.stop()


def test_the_fault_of_an_exited_subprocess_quotes_the_last_twenty_lines_of_its_stderr(
        tmp_path: Path) -> None:
    host = Host()
    proc = host.process(script(tmp_path, "noisy.py", '''
        for i in range(30):
            print(f"line {i}", file=sys.stderr)
        sys.exit(4)
    '''), tmp_path)
    try:
        proc.start(handshake)
        host.run_until(lambda: host.faults, "the exit")
        lines = "\n".join(f"line {i}" for i in range(10, 30))
        assert host.faults == [f"subprocess exited (exit code 4); its stderr ended with:\n{lines}"]
    finally:
        proc.stop()


def test_room_made_after_stop_is_not_announced(tmp_path: Path) -> None:
    release = tmp_path / "release"
    host = Host()
    proc = held_echo(host, tmp_path, release, max_pending=1)
    try:
        start_until_full(host, proc)
        release.touch()
        # the loop does not run: the room is made and its announcement waits for the loop
        wait_for(lambda: proc.tuples_queued == 0 and host.loop.pending, 30, "room made")
    finally:
        proc.stop()
    host.loop.run_pending()
    assert host.rooms == 0 and host.messages == []


def test_an_exit_is_reported_even_when_a_child_keeps_its_stderr_open(tmp_path: Path) -> None:
    """The subprocess exits; a child it started still holds its stderr pipe: the fault comes
    after a grace period with the lines read so far, not never. (The child outlives its exited
    parent, whose process group is no longer signalled once the parent is reaped: the test ends
    it.)"""
    host = Host()
    proc = host.process(script(tmp_path, "leaving.py", '''
        import subprocess
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(20)"],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        print(f"child {child.pid}", file=sys.stderr, flush=True)
        os._exit(5)
    '''), tmp_path)
    child = 0
    try:
        proc.start(handshake)
        host.run_until(lambda: host.faults, "the exit")
        [fault] = host.faults
        prefix = "subprocess exited (exit code 5); its stderr ended with:\nchild "
        assert fault.startswith(prefix) and fault[len(prefix):].isdigit()
        child = int(fault[len(prefix):])
    finally:
        proc.stop()
        if child:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)


def test_stop_without_waiting_reaps_on_a_named_daemon_thread(tmp_path: Path) -> None:
    host = Host()
    proc = host.process(script(tmp_path, "stubborn.py", '''
        import signal
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.stdin.read()
        time.sleep(60)
    '''), tmp_path)
    proc.start(handshake)
    try:
        host.run_until(lambda: host.ready, "the pid")
    finally:
        proc.stop(wait=False)  # returns at once; the process ignores SIGTERM for the grace
    assert multilang_threads().get("multilang-reap-shell:1") is True
    wait_for(lambda: not running(proc.os_pid or 0), 30, "the subprocess killed after the grace")


def test_stop_asks_the_subprocess_to_end_with_sigterm_first(tmp_path: Path) -> None:
    """A subprocess that cleans up on SIGTERM gets to do it (SIGKILL is for those that do not
    end within the grace)."""
    done, armed = tmp_path / "cleaned-up", tmp_path / "armed"
    host = Host()
    proc = host.process(script(tmp_path, "tidy.py", f'''
        import signal
        def tidy(signum, frame):
            open({str(done)!r}, "w").close()
            os._exit(0)
        signal.signal(signal.SIGTERM, tidy)
        open({str(armed)!r}, "w").close()
        sys.stdin.read()
        time.sleep(30)
    '''), tmp_path)
    proc.start(handshake)
    try:
        host.run_until(lambda: host.ready, "the pid")
        # its pid is sent before the handler is set: a stop before then would find none
        wait_for(armed.exists, 30, "the SIGTERM handler set")
    finally:
        proc.stop()
    assert done.exists()


REMOVES_PID_DIR = textwrap.dedent('''
    import json, os, shutil, sys
    lines = []
    while (line := sys.stdin.readline()).strip() != "end":
        lines.append(line)
    shutil.rmtree(json.loads("".join(lines))["pidDir"])
    sys.stdout.write(json.dumps({"pid": os.getpid()}) + "\\nend\\n")
    sys.stdout.flush()
    sys.stdin.read()
''')


def test_stop_copes_with_a_subprocess_that_removed_its_pid_dir(tmp_path: Path) -> None:
    (tmp_path / "remover.py").write_text(REMOVES_PID_DIR)
    host = Host()
    proc = host.process([sys.executable, "remover.py"], tmp_path)
    proc.start(handshake)
    try:
        host.run_until(lambda: host.ready, "the pid")
        assert not os.path.exists(proc._pid_dir)
    finally:
        proc.stop()  # no error
    assert not proc.running and host.faults == []


def test_without_max_pending_there_is_always_room(tmp_path: Path) -> None:
    host = Host()
    proc = host.process(script(tmp_path, "deaf.py", "time.sleep(20)\n"), tmp_path)  # reads nothing
    try:
        proc.start(handshake)
        host.run_until(lambda: host.ready, "the pid")
        for i in range(20):  # 400 kB: most of it cannot be written
            proc.send({"id": str(i), "comp": "c", "stream": "default", "task": 1,
                       "tuple": ["v" * 20_000]}, counted=True)
        host.run_until(lambda: proc.tuples_queued > 0, "tuples not written")
        assert proc.has_room() and proc.want_room()
    finally:
        proc.stop()


def test_want_room_answered_true_announces_no_room_later(tmp_path: Path) -> None:
    release = tmp_path / "release"
    release.touch()  # the echo bolt reads and echoes at once
    host = Host()
    proc = held_echo(host, tmp_path, release, max_pending=2)
    try:
        proc.start(handshake)
        host.run_until(lambda: host.ready, "the pid")
        assert proc.want_room()  # there is room: the caller goes on, nothing is announced
        proc.send({"id": "1", "comp": "c", "stream": "default", "task": 1, "tuple": ["a"]},
                  counted=True)
        host.run_until(lambda: host.messages, "the echo of the tuple (written and read)")
        host.loop.run_pending()
        assert host.rooms == 0
    finally:
        proc.stop()


def test_a_wrong_answer_to_the_handshake_ends_the_delivery(tmp_path: Path) -> None:
    (tmp_path / "no_pid.py").write_text(textwrap.dedent('''
        import sys
        sys.stdin.readline()
        sys.stdout.write('{"command": "sync"}\\nend\\n{"command": "log", "msg": "m"}\\nend\\n')
        sys.stdout.flush()
        sys.stdin.read()
    '''))
    host = Host()
    proc = host.process([sys.executable, "no_pid.py"], tmp_path)
    try:
        proc.start(handshake)
        host.run_until(lambda: host.faults, "the fault")
        assert host.faults == ["expected the handshake's pid message, got {'command': 'sync'}"]
        assert not proc.running and host.messages == [] and host.ready == 0
    finally:
        proc.stop()


class _ReadsFail:
    """The os module as _process sees it, but reading a pipe fails (as an I/O error would)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    @staticmethod
    def read(fd: int, size: int) -> bytes:
        raise OSError(5, "Input/output error")


def test_a_failing_read_of_its_output_is_a_fault_naming_the_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process_module, "os", _ReadsFail())
    host = Host()
    proc = host.process(script(tmp_path, "quiet.py", "sys.stdin.read()\n"), tmp_path)
    try:
        proc.start(handshake)
        host.run_until(lambda: host.faults, "the fault")
        assert host.faults == ["reading its output failed: [Errno 5] Input/output error"]
        assert not proc.running and host.ready == 0
    finally:
        proc.stop()


def test_a_write_to_a_subprocess_that_exited_names_its_exit_code(tmp_path: Path) -> None:
    """The subprocess exits while a child it started keeps its output open (so its reader sees
    no end): the write that fails says that it exited, with the code. (The child outlives its
    reaped parent: the test ends it.)"""
    child_file = tmp_path / "child.pid"
    host = Host()
    proc = host.process(script(tmp_path, "gone.py", f'''
        import subprocess
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                                 stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open({str(child_file)!r}, "w") as f:
            f.write(str(child.pid))
        os._exit(3)
    '''), tmp_path)
    try:
        proc.start(handshake)
        host.run_until(lambda: host.ready and child_file.exists() and child_file.read_text(),
                       "the pid and the child's")
        proc.send({"id": "1", "comp": "c", "stream": "default", "task": 1, "tuple": ["x" * 200_000]})
        host.run_until(lambda: host.faults, "the fault")
        assert host.faults == ["subprocess exited (exit code 3); writing to it failed: [Errno 32] "
                               "Broken pipe"]
    finally:
        proc.stop()
        if child_file.exists() and child_file.read_text():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(child_file.read_text()), signal.SIGKILL)


def test_room_is_announced_once_per_want_room(tmp_path: Path) -> None:
    """After the room a want_room asked for is announced, tuples written later announce none."""
    release = tmp_path / "release"
    host = Host()
    proc = held_echo(host, tmp_path, release, max_pending=1)
    try:
        start_until_full(host, proc)
        release.touch()
        host.run_until(lambda: host.rooms == 1 and proc.tuples_queued == 0, "room announced")
        proc.send({"id": "later", "comp": "c", "stream": "default", "task": 1, "tuple": ["w"]},
                  counted=True)
        host.run_until(lambda: proc.tuples_queued == 0, "the later tuple written")
        # whatever the writer hands the loop for that write, it hands over before it takes the
        # next message from its queue
        proc.send({"id": "h", "comp": None, "stream": "__heartbeat", "task": -1, "tuple": []})
        wait_for(lambda: proc.queued == 0, 30, "the writer took the next message")
        host.loop.run_pending()
        assert host.rooms == 1
    finally:
        proc.stop()


def test_the_pid_dir_is_a_fresh_named_temp_dir_removed_at_stop_and_after_a_failed_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    host = Host()
    with pytest.raises(FileNotFoundError):
        host.process([str(tmp_path / "no-such-command")], tmp_path).start(handshake)
    assert list(temp.iterdir()) == []  # nothing left by the start that failed
    proc = host.process(script(tmp_path, "quiet.py", "sys.stdin.read()\n"), tmp_path)
    try:
        proc.start(handshake)
        host.run_until(lambda: host.ready, "the pid")
        [pid_dir] = temp.iterdir()
        assert pid_dir.is_dir() and pid_dir.name.startswith("stormpy-multilang-pids-")
    finally:
        proc.stop()
    assert list(temp.iterdir()) == []


def test_without_max_pending_counted_tuples_never_hold_the_owner_back(tmp_path: Path) -> None:
    """The default is no limit; before its start a process has no pid and may be stopped."""
    host = Host()
    proc = ShellProcess("shell:1", ["true"], str(tmp_path), dict(os.environ), JsonCodec(), 30.0,
                        1.0, host.loop.call_soon, host.messages.append, host.faults.append)
    assert proc.os_pid is None and proc.pid is None and proc.running
    for i in range(3):
        proc.send({"id": str(i), "comp": "c", "stream": "default", "task": 1, "tuple": [i]},
                  counted=True)
    assert proc.tuples_queued == 3 and proc.queued == 3
    assert proc.has_room() and proc.want_room()
    proc.stop()
    assert not proc.running and host.faults == []


def test_no_room_is_announced_when_none_was_wanted(tmp_path: Path) -> None:
    release = tmp_path / "release"
    release.touch()
    host = Host()
    proc = held_echo(host, tmp_path, release, max_pending=2)
    try:
        proc.start(handshake)
        host.run_until(lambda: host.ready, "the pid")
        proc.send({"id": "1", "comp": "c", "stream": "default", "task": 1, "tuple": ["a"]},
                  counted=True)
        host.run_until(lambda: proc.tuples_queued == 0, "the tuple written")
        proc.send({"id": "h", "comp": None, "stream": "__heartbeat", "task": -1, "tuple": []})
        wait_for(lambda: proc.queued == 0, 30, "the writer took the next message")
        host.loop.run_pending()
        assert host.rooms == 0
    finally:
        proc.stop()


def test_a_process_nobody_waits_on_may_stay_silent_past_the_timeout(tmp_path: Path) -> None:
    """Not always watched (a spout between commands): silence is no hang; the watchdog's rounds
    go on (each asks for a heartbeat after its hang check)."""
    host = Host()
    rounds: list[float] = []

    def heartbeat() -> None:
        rounds.append(time.monotonic())
    proc = ShellProcess("shell:1", script(tmp_path, "silent.py", "sys.stdin.read()\n"),
                        str(tmp_path), dict(os.environ), JsonCodec(), 0.3, 0.05, host.loop.call_soon,
                        host.messages.append, host.faults.append, heartbeat=heartbeat)
    try:
        proc.start(handshake)
        host.run_until(lambda: proc.pid is not None, "the pid")
        heard = proc.last_heard  # the pid message: nothing is heard after it
        host.run_until(lambda: rounds and rounds[-1] > heard + 0.3 + 0.2,
                       "a watchdog round well past the timeout")
        host.loop.run_pending()
        assert host.faults == [] and proc.running
    finally:
        proc.stop()


def test_stderr_lines_that_are_no_utf8_are_kept_with_replacement_characters(
        tmp_path: Path) -> None:
    host = Host()
    proc = host.process(script(tmp_path, "bytes.py", '''
        sys.stderr.buffer.write(b"bad \\xff byte\\n")
        sys.stderr.buffer.write(b"last line\\n")
        sys.stderr.flush()
        sys.exit(2)
    '''), tmp_path)
    try:
        proc.start(handshake)
        host.run_until(lambda: host.faults, "the exit")
        assert host.faults == ["subprocess exited (exit code 2); its stderr ended with:\n"
                               "bad \ufffd byte\nlast line"]
    finally:
        proc.stop()
