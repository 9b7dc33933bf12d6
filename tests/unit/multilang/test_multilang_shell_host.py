"""What every shell component gets from its host, against real subprocesses: the directory and
environment its command runs in, the serializer it is told of, and how each way a subprocess
can go wrong (it cannot start, exits, writes garbage, answers the handshake wrongly) reaches
the user: one error naming the component, the task, the command and what happened, and a new
subprocess for the next tuples."""

from __future__ import annotations

import sys
import textwrap
import threading
from pathlib import Path

import psutil
import pytest
from mlkit import FIXTURES
from shell_rig import replay_bolt, replay_spout, shell_rig

from stormpy.multilang import ShellBolt, ShellComponentError

#: a bolt on Storm's storm.py that answers each tuple naming an environment variable with its
#: directory, that variable and the serializer it was told of
ENV_BOLT = textwrap.dedent('''
    import os
    import storm

    class EnvBolt(storm.BasicBolt):
        def process(self, tup):
            storm.emit([os.getcwd(), os.environ.get(tup.values[0]),
                        os.environ.get("STORMPY_MULTILANG_SERIALIZER")])

    EnvBolt().run()
''')


def test_the_command_runs_in_its_cwd_with_the_workers_environment_and_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "resources").mkdir()
    (tmp_path / "resources" / "env_bolt.py").write_text(ENV_BOLT)
    monkeypatch.setenv("STORMPY_TEST_WORKER_VAR", "from the worker")
    monkeypatch.setenv("STORMPY_TEST_OVERRIDDEN", "from the worker")
    bolt = ShellBolt(sys.executable, "env_bolt.py", cwd="resources",
                     env={"PYTHONPATH": str(FIXTURES), "STORMPY_TEST_OVERRIDDEN": "own"}
                     ).declare(["cwd", "value", "serializer"])
    with shell_rig(bolt, tmp_path) as rig:
        for name in ("STORMPY_TEST_WORKER_VAR", "STORMPY_TEST_OVERRIDDEN"):
            rig.execute([name])
        rig.run_until(lambda: len(rig.collector.acked) == 2, "both tuples acked")
        where = str((tmp_path / "resources").resolve())
        assert rig.collector.emitted_values() == [[where, "from the worker", "json"],
                                                  [where, "own", "json"]]
        assert rig.collector.errors == []


def test_a_command_that_cannot_start_is_reported_and_its_tuples_wait(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    missing = str(tmp_path / "no-such-program")
    bolt = ShellBolt(missing, "arg").declare(["word"])
    with caplog.at_level("INFO", logger="stormpy.multilang"), shell_rig(bolt, tmp_path) as rig:
        # tried at once again after the first fault, then after the backoff's delay
        assert len(rig.collector.errors) == 2
        error = rig.collector.errors[0]
        assert isinstance(error, ShellComponentError)
        assert str(error).startswith(f"shell process of shell:1 ({missing} arg): cannot start "
                                     f"{[missing, 'arg']!r} in {tmp_path.resolve()}: ")
        assert "No such file or directory" in str(error)
        rig.execute(["held"])
        assert rig.metric("multilangWaiting") == 1 and rig.collector.failed == []
        assert rig.metric("multilangQueued") == 0  # no subprocess, nothing queued for one
        rig.run_until(lambda: len(rig.collector.errors) == 3, "the delayed third try")
        assert str(rig.collector.errors[2]) == str(error)
        # the worker log: each fault, and the delay before each restart that is not at once
        logged = [(r.levelname, r.getMessage()) for r in caplog.records
                  if r.name == "stormpy.multilang.shell"]
        assert logged[:4] == [("ERROR", str(error)), ("ERROR", str(error)),
                              ("WARNING", "restarting the shell process of shell:1 in 0.5 s"),
                              ("ERROR", str(error))]
        assert rig.metric("multilangWaiting") == 1 and rig.collector.failed == []


@pytest.mark.parametrize(("step", "fault"), [
    ({"exit": 3}, "subprocess exited (exit code 3)"),
    ({"raw": "{not json\nend\n"}, "sent garbage: "),
])
def test_a_subprocess_that_exits_or_writes_garbage_is_replaced(
        tmp_path: Path, step: dict[str, object], fault: str) -> None:
    runs = [[{"expect": {"id": "$t1", "tuple": ["first"]}}, step, {"hang": True}],
            [{"expect": {"id": "$t1", "tuple": ["second"]}},
             {"send": {"command": "ack", "id": "$t1"}}]]
    bolt = replay_bolt(tmp_path, runs)
    with shell_rig(bolt, tmp_path) as rig:
        first = rig.execute(["first"])
        rig.run_until(lambda: rig.collector.failed, "the first tuple failed")
        [error] = rig.collector.errors
        command = " ".join(bolt._shell.command)
        assert str(error).startswith(f"shell process of shell:1 ({command}): {fault}")
        if "exit" in step:  # it wrote nothing on stderr: nothing quoted
            assert str(error) == f"shell process of shell:1 ({command}): {fault}"
        second = rig.execute(["second"])
        rig.run_until(lambda: rig.collector.acked, "the second tuple acked")
        assert rig.collector.failed == [first] and rig.collector.acked == [second]


CRASHING = textwrap.dedent('''
    import sys
    sys.stdin.readline()
    print("first line", file=sys.stderr)
    print("", file=sys.stderr)
    print("the last line", file=sys.stderr, flush=True)
    sys.exit(7)
''')


def test_the_fault_of_an_exited_subprocess_ends_with_its_stderr(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "crashing.py").write_text(CRASHING)
    bolt = ShellBolt(sys.executable, "crashing.py").declare(["word"])
    with caplog.at_level("INFO", logger="stormpy.multilang"), shell_rig(bolt, tmp_path) as rig:
        rig.run_until(lambda: len(rig.collector.errors) >= 2, "two runs crashed")
        command = " ".join(bolt._shell.command)
        assert str(rig.collector.errors[0]) == (
            f"shell process of shell:1 ({command}): subprocess exited (exit code 7); its stderr "
            "ended with:\nfirst line\nthe last line")
        # each stderr line in the worker log, naming the task
        assert "shell:1 stderr: the last line" in [r.getMessage() for r in caplog.records]


BAD_HANDSHAKE = textwrap.dedent('''
    import sys
    sys.stdin.readline()
    sys.stdout.write('{"command": "sync"}\\nend\\n')
    sys.stdout.flush()
    sys.stdin.read()
''')


def test_a_subprocess_answering_the_handshake_without_its_pid_is_a_fault(tmp_path: Path) -> None:
    (tmp_path / "bad_handshake.py").write_text(BAD_HANDSHAKE)
    bolt = ShellBolt(sys.executable, "bad_handshake.py").declare(["word"])
    with shell_rig(bolt, tmp_path) as rig:
        rig.run_until(lambda: rig.collector.errors, "the fault")
        assert str(rig.collector.errors[0]).endswith(
            "expected the handshake's pid message, got {'command': 'sync'}")


@pytest.mark.parametrize("kind", ["bolt", "spout"])
def test_closing_a_shell_component_ends_its_subprocess_before_it_returns(
        tmp_path: Path, kind: str) -> None:
    runs = [[{"expect": {"command": "activate"}}, {"send": {"command": "sync"}}]]
    component = replay_bolt(tmp_path, runs) if kind == "bolt" else replay_spout(tmp_path, runs)
    with shell_rig(component, tmp_path) as rig:
        proc = component._process
        assert proc is not None and proc.os_pid is not None
        rig.run_until(lambda: proc.pid, "the subprocess's pid")
        if kind == "bolt":
            component.cleanup()
        else:
            component.close()
        assert not psutil.pid_exists(proc.os_pid)  # reaped: not even a zombie left
        rig.loop.run_pending()
        assert rig.collector.errors == []  # its end is no fault, and nothing restarts
        assert component._process is None


#: a subprocess that ignores SIGTERM and answers the handshake with garbage
STUBBORN = textwrap.dedent('''
    import os, signal, sys
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.stdin.readline()
    sys.stdout.write("garbage\\nend\\n")
    sys.stdout.flush()
    sys.stdin.read()
''')


def test_a_fault_does_not_hold_the_executor_while_the_dead_subprocess_is_ended(
        tmp_path: Path) -> None:
    """The old subprocess ignores SIGTERM (it is killed after a grace period): the fault is
    reported and the restart made while it still exists, not after."""
    (tmp_path / "stubborn.py").write_text(STUBBORN)
    bolt = ShellBolt(sys.executable, "stubborn.py").declare(["word"])
    with shell_rig(bolt, tmp_path) as rig:
        proc = bolt._process
        assert proc is not None and proc.os_pid is not None
        old = psutil.Process(proc.os_pid)
        seen: list[bool] = []

        def faulted() -> bool:
            if rig.collector.errors and not seen:
                seen.append(old.is_running() and old.status() != psutil.STATUS_ZOMBIE)
            return bool(seen)
        rig.run_until(faulted, "the fault")
        assert seen == [True]
        assert str(rig.collector.errors[0]).endswith("sent garbage: not JSON: 'garbage'")
        assert bolt._process is not proc  # restarted at once


def test_faults_in_a_row_wait_longer_and_longer_up_to_thirty_seconds_on_a_named_service(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The first fault restarts at once, the next ones in a row after 0.5 s doubling up to 30 s;
    the delayed restart is kept by the task's restart service."""
    missing = str(tmp_path / "no-such-program")
    bolt = ShellBolt(missing).declare(["word"])
    with caplog.at_level("INFO", logger="stormpy.multilang"), shell_rig(bolt, tmp_path):
        # prepare: the start failed, the restart at once failed: a restart is due in 0.5 s
        assert "multilang-restart-shell:1" in {t.name for t in threading.enumerate()}
        for _ in range(7):  # more faults before it is due (as a crashing subprocess gives them)
            bolt._fault("exited (exit code 1)")
        delays = [r.getMessage().rpartition(" in ")[2] for r in caplog.records
                  if r.getMessage().startswith("restarting the shell process of shell:1")]
        assert delays == ["0.5 s", "1.0 s", "2.0 s", "4.0 s", "8.0 s", "16.0 s", "30.0 s", "30.0 s"]


def test_after_a_delayed_restart_the_restart_service_restarts_nothing_more(tmp_path: Path) -> None:
    """Two exits in a row: the first restarts at once, the second after the backoff's delay,
    through the restart service; the subprocess it started is left alone by the service's later
    rounds (its idle round comes every hour; woken here)."""
    runs = [[{"exit": 1}], [{"exit": 1}], [{"expect": {"id": "$t1", "tuple": ["a"]}},
                                           {"send": {"command": "ack", "id": "$t1"}}]]
    bolt = replay_bolt(tmp_path, runs)
    with shell_rig(bolt, tmp_path) as rig:
        rig.run_until(lambda: len(rig.collector.errors) == 2, "two exits")
        rig.run_until(lambda: (rig.replay_dir / "runs").read_text() == "3", "the delayed restart")
        restarter = bolt._restarter
        rounds = restarter.rounds
        restarter.wake()
        rig.run_until(lambda: restarter.rounds > rounds, "another round of the restart service")
        tup = rig.execute(["a"])
        rig.run_until(lambda: rig.collector.acked == [tup], "the third run's ack")
        assert (rig.replay_dir / "runs").read_text() == "3" and len(rig.collector.errors) == 2
