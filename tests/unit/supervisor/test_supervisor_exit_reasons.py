"""What a supervisor publishes about a worker's exit: the reason read from the end of a large
worker log, CRITICAL lines, undecodable bytes, lines in another format, and each field of a
slot's record (when it exited, a run of exactly the quick-exit bound, slots kept by `retain`)."""

from __future__ import annotations

from pathlib import Path

from stormpy.supervisor.exits import CRASH_LOOP_EXITS, LOG_TAIL_BYTES, WorkerExits, last_logged_error
from stormpy.supervisor.sync import QUICK_EXIT_SECS

LINE = "2026-01-01 00:00:0{n},000 {level} [worker t-1:6700 pid 42] MainThread stormpy.worker.process: {msg}\n"


def line(msg: str, level: str = "INFO", n: int = 1) -> str:
    return LINE.format(n=n, level=level, msg=msg)


def test_only_the_logs_last_64_kib_are_searched_for_the_error(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    filler = line("x" * 100)
    with open(log, "w") as f:
        f.write(line("worker stopped: an error long ago", "ERROR"))
        f.write(filler * (LOG_TAIL_BYTES // len(filler) + 2))
        f.write(line("still running, last line"))
    # the old error lies before the searched tail: the log's last line is the reason
    assert last_logged_error(log) == line("still running, last line").strip()
    # within the tail it is found
    small = tmp_path / "small.log"
    small.write_text(line("worker stopped: near the end", "ERROR") + filler * 10)
    assert last_logged_error(small) == "worker stopped: near the end"


def test_a_critical_line_is_a_reason_like_an_error_line(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    log.write_text(line("fatal: the executor died", "CRITICAL") + line("flushing"))
    assert last_logged_error(log) == "fatal: the executor died"


def test_bytes_that_are_not_utf8_are_replaced_not_fatal(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    log.write_bytes(line("bad bytes \udcff follow", "ERROR").encode("utf-8", "surrogateescape"))
    assert last_logged_error(log) == "bad bytes \ufffd follow"
    # a tail that starts in the middle of a multi-byte character
    big = tmp_path / "big.log"
    big.write_bytes("é".encode() * LOG_TAIL_BYTES + b"\nlast words!\n")
    assert last_logged_error(big) == "last words!"


def test_an_error_line_in_another_format_is_given_after_its_first_colon(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    log.write_text("RuntimeError: ERROR [config never closed\n")
    assert last_logged_error(log) == "ERROR [config never closed"
    plain = tmp_path / "plain.log"
    plain.write_text("boot ERROR [worker] no colon here\n")
    assert last_logged_error(plain) == "no colon here"


def test_a_record_holds_every_field_of_the_last_exit() -> None:
    exits = WorkerExits()
    exits.exited("t-1", 6700, "exit code 1: boom", 0.5, 100.0)
    assert exits.records([], 100.5) == [{
        "topology_id": "t-1", "port": 6700, "restarts": 1, "last_exit": "exit code 1: boom",
        "last_exit_time": 100.0, "quick_exits": 1, "crash_looping": False}]


def test_a_run_of_exactly_the_quick_exit_bound_is_not_quick() -> None:
    exits = WorkerExits()
    exits.exited("t-1", 6700, "exit code 1", 0.5, 100.0)
    exits.exited("t-1", 6700, "exit code 1", QUICK_EXIT_SECS, 200.0)
    assert exits.records([], 200.0)[0]["quick_exits"] == 0
    for now in range(CRASH_LOOP_EXITS):
        exits.exited("t-1", 6700, "exit code 1", QUICK_EXIT_SECS - 0.001, 300.0 + now)
    [record] = exits.records([], 400.0)
    assert (record["quick_exits"], record["crash_looping"]) == (CRASH_LOOP_EXITS, True)


def test_retain_keeps_the_slots_still_assigned_to_the_same_topology() -> None:
    exits = WorkerExits()
    exits.exited("t-1", 6700, "exit code 1", 0.5, 100.0)
    exits.exited("t-2", 6701, "exit code 2", 0.5, 100.0)
    exits.exited("t-3", 6702, "exit code 3", 0.5, 100.0)
    exits.retain({6700: "t-1", 6701: "t-9"})
    assert [(r["port"], r["topology_id"], r["restarts"]) for r in exits.records([], 101.0)] == [
        (6700, "t-1", 1)]


def test_the_searched_tail_begins_exactly_64_kib_before_the_end(tmp_path: Path) -> None:
    # one line of exactly LOG_TAIL_BYTES: the tail is the whole line, its first byte included
    head = "X ERROR [w] t: "
    body = "b" * (LOG_TAIL_BYTES - len(head) - 1)
    log = tmp_path / "worker.log"
    log.write_text("an older line\n" + head + body + "\n")
    assert last_logged_error(log) == body[:400]
