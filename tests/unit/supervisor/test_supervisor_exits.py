"""The supervisor's record of its workers' exits: the reason read from the worker log (this run's
lines only), restarts, crash loops, and slots forgotten when their topology changes."""

from __future__ import annotations

from pathlib import Path

from stormpy.cluster import SupervisorInfo
from stormpy.supervisor.exits import WorkerExits, last_logged_error
from stormpy.supervisor.sync import QUICK_EXIT_SECS


def test_the_reason_is_the_last_error_this_run_logged(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    log.write_text("2026-01-01 00:00:00,000 ERROR [worker t:1 pid 1] MainThread x: an older run's error\n")
    offset = log.stat().st_size
    assert last_logged_error(log, offset) is None
    with open(log, "a") as f:
        f.write("2026-01-01 00:00:01,000 INFO [worker t:1 pid 2] MainThread x: starting\n"
                "2026-01-01 00:00:02,000 ERROR [worker t:1 pid 2] MainThread stormpy.worker.process: "
                "worker stopped: component 'lines' task 1: open failed: FileNotFoundError: [Errno 2] "
                "No such file or directory: 'access.log'\n"
                "2026-01-01 00:00:02,100 INFO [worker t:1 pid 2] MainThread x: bye\n")
    assert last_logged_error(log, offset) == ("worker stopped: component 'lines' task 1: open failed: "
                                              "FileNotFoundError: [Errno 2] No such file or directory: "
                                              "'access.log'")
    with open(log, "a") as f:
        f.write("Traceback (most recent call last):\nSystemError: printed, not logged\n")
    assert "access.log" in (last_logged_error(log, offset) or "")
    plain = tmp_path / "plain.log"
    plain.write_text("Fatal Python error: Segmentation fault\n\n")
    assert last_logged_error(plain) == "Fatal Python error: Segmentation fault"
    assert last_logged_error(tmp_path / "none.log") is None


def test_restarts_crash_loops_and_forgotten_slots() -> None:
    exits = WorkerExits()
    exits.exited("t-1", 6700, "exit code 1: boom", 0.5, 100.0)
    [one] = exits.records([], 100.0)
    assert (one["restarts"], one["quick_exits"], one["crash_looping"]) == (1, 1, False)
    exits.exited("t-1", 6700, "exit code 1: boom", 0.5, 101.0)
    assert exits.records([(6700, 101.5)], 102.0)[0]["crash_looping"]
    # a worker that has run QUICK_EXIT_SECS since is not crash looping (its restarts stay)
    settled = exits.records([(6700, 101.5)], 101.5 + QUICK_EXIT_SECS)[0]
    assert settled["restarts"] == 2 and not settled["crash_looping"]
    exits.exited("t-1", 6700, "heartbeat is 32.7 s old", QUICK_EXIT_SECS + 5, 200.0)
    record = exits.records([], 200.0)[0]
    assert record["quick_exits"] == 0 and record["last_exit"] == "heartbeat is 32.7 s old"
    exits.exited("t-2", 6700, "exit code 2", 0.1, 201.0)  # another topology on the slot: afresh
    assert [(r["topology_id"], r["restarts"]) for r in exits.records([], 201.0)] == [("t-2", 1)]
    exits.retain({6701: "t-2"})
    assert exits.records([], 202.0) == []


def test_supervisor_info_carries_the_records_and_reads_older_ones() -> None:
    exits = WorkerExits()
    exits.exited("t-1", 6700, "exit code 1", 0.5, 100.0)
    info = SupervisorInfo("sup-a", "h", (6700,), 1.0, "v", workers=tuple(exits.records([], 100.0)))
    assert SupervisorInfo.from_doc(info.to_doc()) == info
    old = info.to_doc()
    del old["workers"]
    assert SupervisorInfo.from_doc(old).workers == ()
