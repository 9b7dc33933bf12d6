"""The worker's error reporter as a user sees it in ``stormpy info`` and the UI: every error it is
handed is written once, in order, with its time, task and full text; a write that ZooKeeper refuses
does not lose the errors after it; ``close`` writes what is still queued (the error that stops the
worker) within its timeout, and the writer runs on its own named thread."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from stormpy.cluster.errors import ClusterStateError
from stormpy.cluster.records import ErrorInfo
from stormpy.testing import wait_for
from stormpy.worker.error_reporter import ErrorReporter

TRACEBACK = 'Traceback (most recent call last):\n  File "bolt.py", line 3, in execute\nRuntimeError: boom'


class RecordingState:
    """``ClusterState.report_error`` recording what is written; refuses the messages in ``refuse``
    with the given exception, and takes ``delay`` seconds per write (a slow ZooKeeper)."""

    def __init__(self, refuse: dict[str, Exception] | None = None, delay: float = 0.0) -> None:
        self.written: list[tuple[str, ErrorInfo]] = []
        self.refuse = refuse or {}
        self.delay = delay
        self.threads: set[str] = set()

    def report_error(self, topology_id: str, error: ErrorInfo) -> None:
        self.threads.add(threading.current_thread().name)
        if self.delay:
            time.sleep(self.delay)
        if error.message in self.refuse:
            raise self.refuse[error.message]
        self.written.append((topology_id, error))


def test_an_error_is_written_once_with_its_time_task_and_traceback_text() -> None:
    state = RecordingState()
    reporter = ErrorReporter(state, "topo-9", "host-a", 6703).start()  # type: ignore[arg-type]
    try:
        before = time.time()
        reporter.report("split", 4, TRACEBACK)
        after = time.time()
        wait_for(lambda: len(state.written) == 1, 10, "the error written by the reporter's thread")
        assert state.threads == {"stormpy-error-reporter"}
    finally:
        reporter.close()
    (topology, error), = state.written  # once, not again at close
    assert topology == "topo-9"
    assert (error.component, error.task, error.message, error.host, error.port) == \
        ("split", 4, TRACEBACK, "host-a", 6703)
    assert before <= error.time <= after


def test_close_writes_what_is_queued_in_the_order_reported() -> None:
    state = RecordingState()
    reporter = ErrorReporter(state, "t", "h", 1)  # type: ignore[arg-type]  # never started
    for i in range(5):
        reporter.report("bolt", i, f"error {i}")
    assert state.written == []
    reporter.close()
    assert [(e.task, e.message) for _, e in state.written] == [(i, f"error {i}") for i in range(5)]
    reporter.close()  # idempotent: nothing written twice
    assert len(state.written) == 5


def test_a_refused_write_does_not_lose_the_errors_after_it() -> None:
    state = RecordingState(refuse={"first": ClusterStateError("ZooKeeper did not answer"),
                                   "third": ValueError("message too large")})
    reporter = ErrorReporter(state, "t", "h", 1).start()  # type: ignore[arg-type]
    try:
        for message in ("first", "second", "third", "fourth"):
            reporter.report("bolt", 1, message)
        wait_for(lambda: len(state.written) == 2, 10, "the errors after the refused ones")
    finally:
        reporter.close()
    assert [e.message for _, e in state.written] == ["second", "fourth"]


def test_close_is_bounded_by_its_timeout_on_a_slow_zookeeper() -> None:
    state = RecordingState(delay=0.05)
    reporter = ErrorReporter(state, "t", "h", 1)  # type: ignore[arg-type]
    for i in range(2000):  # 100 s of writes
        reporter.report("bolt", 1, f"error {i}")
    started = time.monotonic()
    reporter.close(timeout=0.3)
    assert time.monotonic() - started < 30
    assert 1 <= len(state.written) < 2000
    assert [e.message for _, e in state.written] == [f"error {i}" for i in range(len(state.written))]


class StalledState(RecordingState):
    """A ZooKeeper write that does not return until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def report_error(self, topology_id: str, error: ErrorInfo) -> None:
        self.entered.set()
        self.release.wait(60)
        super().report_error(topology_id, error)


def test_close_returns_within_its_timeout_while_a_write_is_stalled() -> None:
    state = StalledState()
    reporter = ErrorReporter(state, "t", "h", 1).start()  # type: ignore[arg-type]
    closer = threading.Thread(target=reporter.close, kwargs={"timeout": 0.2}, name="closer")
    try:
        reporter.report("bolt", 1, "stalled")
        wait_for(state.entered.is_set, 10, "the reporter's write to reach ZooKeeper")
        reporter.report("bolt", 1, "queued behind it")
        closer.start()
        wait_for(lambda: not closer.is_alive(), 10, "close to give up on the stalled write")
    finally:
        state.release.set()
        if closer.ident:
            closer.join(10)
        reporter.close()


def test_an_unexpected_failure_is_logged_by_the_reporter_and_the_next_errors_written(
        caplog: pytest.LogCaptureFixture) -> None:
    state = RecordingState(refuse={"bad": RuntimeError("unexpected")})
    reporter = ErrorReporter(state, "t", "h", 1).start()  # type: ignore[arg-type]
    try:
        with caplog.at_level(logging.WARNING, logger="stormpy.worker.error_reporter"):
            reporter.report("bolt", 1, "bad")
            wait_for(lambda: any("stormpy-error-reporter" in r.getMessage() for r in caplog.records),
                     10, "the failed round logged")
            reporter.report("bolt", 1, "good")
            wait_for(lambda: len(state.written) == 1, 10, "the next error written")
    finally:
        reporter.close()
    (record,) = [r for r in caplog.records if "stormpy-error-reporter" in r.getMessage()]
    assert record.name == "stormpy.worker.error_reporter"
    assert [e.message for _, e in state.written] == ["good"]
