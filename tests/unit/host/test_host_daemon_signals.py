"""What every daemon shares: its log file's lines and levels, SIGTERM and SIGINT stopping it
cleanly (the previous handlers back afterwards), the foreground loop of the development servers,
and the exit watch of a child server."""

from __future__ import annotations

import logging
import os
import re
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stormpy.host.daemon import STOP_SIGNALS, Daemon, child_exit_watch, log_to_file, serve_until_stopped
from stormpy.host.waiting import wait_for


@pytest.fixture
def bare_root() -> Iterator[logging.Logger]:
    """The root logger, its handlers, levels and kazoo's level put back afterwards (a test
    empties its handlers first: pytest adds its own when the test's call begins)."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level, logging.getLogger("kazoo").level)
    levels = [h.level for h in saved[0]]
    try:
        yield root
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers = saved[0]
        for handler, level in zip(saved[0], levels, strict=True):
            handler.setLevel(level)
        root.setLevel(saved[1])
        logging.getLogger("kazoo").setLevel(saved[2])


LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (\w+) \[(.+?)\] (\S+) (\S+): (.*)$")


def test_the_root_gets_every_record_in_the_daemons_line_format(tmp_path: Path,
                                                               bare_root: logging.Logger) -> None:
    bare_root.handlers = []
    shown: list[str] = []
    stderr_like = logging.Handler()
    stderr_like.emit = lambda record: shown.append(record.getMessage())  # type: ignore[method-assign]
    bare_root.addHandler(stderr_like)
    bare_root.setLevel(logging.ERROR)
    path = tmp_path / "deep" / "dir" / "nimbus.log"
    handler = log_to_file(path, "nimbus")
    assert handler in bare_root.handlers and stderr_like in bare_root.handlers
    assert bare_root.level == logging.INFO and handler.level == logging.INFO
    assert stderr_like.level == logging.ERROR  # it keeps showing what it showed
    assert logging.getLogger("kazoo").level == logging.WARNING
    logging.getLogger("stormpy.x").info("hello %d", 5)
    logging.getLogger("stormpy.x").debug("not written")
    logging.getLogger("stormpy.x").error("bad")
    handler.flush()
    lines = path.read_text().splitlines()
    assert [LINE.match(line).groups() for line in lines] == [  # type: ignore[union-attr]
        ("INFO", "nimbus", "MainThread", "stormpy.x", "hello 5"),
        ("ERROR", "nimbus", "MainThread", "stormpy.x", "bad")]
    assert shown == ["bad"]
    assert isinstance(handler, logging.FileHandler)


def test_replace_removes_the_handlers_and_a_lower_level_is_kept(tmp_path: Path,
                                                                bare_root: logging.Logger) -> None:
    bare_root.handlers = []
    old = logging.NullHandler()
    bare_root.addHandler(old)
    bare_root.setLevel(logging.DEBUG)
    handler = log_to_file(tmp_path / "w.log", "worker", replace=True, level=logging.WARNING)
    assert bare_root.handlers == [handler]
    assert bare_root.level == logging.DEBUG and handler.level == logging.WARNING
    assert old.level == logging.NOTSET


def test_an_unset_root_level_counts_as_warning(tmp_path: Path, bare_root: logging.Logger) -> None:
    bare_root.handlers = []
    other = logging.NullHandler()
    bare_root.addHandler(other)
    bare_root.setLevel(logging.NOTSET)
    log_to_file(tmp_path / "w.log", "w", level=logging.ERROR)
    assert other.level == logging.WARNING and bare_root.level == logging.WARNING


def test_a_named_logger_only_and_a_handler_of_the_callers(tmp_path: Path,
                                                          bare_root: logging.Logger) -> None:
    bare_root.handlers = []
    logger = logging.getLogger("test.embedded.daemon")
    logger.propagate = False
    given = logging.FileHandler(tmp_path / "given.log")
    try:
        handler = log_to_file(tmp_path / "sub" / "ignored.log", "supervisor s1", logger=logger,
                              level=logging.DEBUG, handler=given)
        assert handler is given and logger.handlers == [given] and logger.level == logging.DEBUG
        assert bare_root.handlers == [] and (tmp_path / "sub").is_dir()
        logger.debug("detail")
        given.flush()
        assert LINE.match((tmp_path / "given.log").read_text()).groups()[:2] == (  # type: ignore[union-attr]
            "DEBUG", "supervisor s1")
    finally:
        logger.handlers = []
        logger.propagate = True
        given.close()


class Recorder(Daemon):
    def __init__(self) -> None:
        super().__init__()
        self.stops = 0
        self.in_loop = threading.Event()

    def stop(self) -> None:
        self.stops += 1


def test_the_base_daemon_has_no_start_or_stop() -> None:
    daemon = Daemon()
    with pytest.raises(NotImplementedError):
        daemon.start()
    with pytest.raises(NotImplementedError):
        daemon.stop()
    assert not daemon.stop_requested
    daemon.request_stop()
    assert daemon.stop_requested


@pytest.mark.parametrize("signum", STOP_SIGNALS)
def test_a_stop_signal_ends_run_forever_once_and_the_old_handler_comes_back(signum: int) -> None:
    assert STOP_SIGNALS == (signal.SIGTERM, signal.SIGINT)
    assert threading.current_thread() is threading.main_thread()
    daemon = Recorder()
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    sent: list[bool] = []

    def send() -> None:
        wait_for(lambda: all(signal.getsignal(s) is not previous[s] for s in STOP_SIGNALS), 30,
                 "the daemon's handlers")
        sent.append(True)
        os.kill(os.getpid(), signum)
    sender = threading.Thread(target=send)
    sender.start()
    daemon.run_forever()
    sender.join(30)
    assert sent == [True] and daemon.stop_requested and daemon.stops == 1
    assert {sig: signal.getsignal(sig) for sig in STOP_SIGNALS} == previous


def test_run_forever_stops_on_a_request_from_another_thread() -> None:
    daemon = Recorder()
    threading.Timer(0.05, daemon.request_stop).start()
    daemon.run_forever()
    assert daemon.stops == 1


def test_off_the_main_thread_no_handler_is_installed() -> None:
    daemon = Recorder()
    previous = signal.getsignal(signal.SIGTERM)
    seen: list[Any] = []

    def body() -> None:
        with daemon.stopping_on_signals():
            seen.append(signal.getsignal(signal.SIGTERM))
    thread = threading.Thread(target=body)
    thread.start()
    thread.join(30)
    assert seen == [previous]


def test_stop_runs_when_the_wait_fails() -> None:
    daemon = Recorder()

    def broken(_timeout: float) -> bool:
        raise RuntimeError("interrupted")
    daemon._stop_requested.wait = broken  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        daemon.run_forever()
    assert daemon.stops == 1


def test_serve_until_stopped_returns_the_servers_own_status() -> None:
    calls: list[str] = []
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    statuses = [None, 3]

    def exited() -> int | None:
        calls.append("exited")
        return statuses.pop(0) if len(statuses) > 1 else statuses[0]
    halt = threading.Event()
    code = serve_until_stopped(lambda: calls.append("start"), lambda: calls.append("stop"), exited,
                               stopping="stopping", echo=calls.append, stop_event=halt)
    assert code == 3 and calls == ["start", "exited", "exited", "stop"]
    assert {sig: signal.getsignal(sig) for sig in STOP_SIGNALS} == previous


def test_serve_until_stopped_ends_on_the_stop_event_or_a_signal() -> None:
    calls: list[str] = []
    halt = threading.Event()
    halt.set()
    code = serve_until_stopped(lambda: calls.append("start"), lambda: calls.append("stop"), lambda: 9,
                               stopping="stopping the server", echo=calls.append, stop_event=halt)
    assert code == 0 and calls == ["start", "stopping the server", "stop"]
    calls.clear()

    def start() -> None:
        calls.append("start")
        os.kill(os.getpid(), signal.SIGTERM)  # handled while serving: a clean stop
    fallback = threading.Event()
    caught: list[int] = []

    def safety(signum: int, _frame: Any) -> None:  # only if serve_until_stopped installed none
        caught.append(signum)
        fallback.set()
    previous = signal.signal(signal.SIGTERM, safety)
    try:
        code = serve_until_stopped(start, lambda: calls.append("stop"), lambda: None, stopping="bye",
                                   echo=calls.append, stop_event=fallback)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert code == 0 and calls == ["start", "bye", "stop"] and caught == []


def test_serve_until_stopped_stops_when_start_fails() -> None:
    calls: list[str] = []
    previous = signal.getsignal(signal.SIGINT)

    def start() -> None:
        raise OSError("no port")
    with pytest.raises(OSError, match="no port"):
        serve_until_stopped(start, lambda: calls.append("stop"), lambda: None, stopping="x",
                            echo=calls.append)
    assert calls == ["stop"] and signal.getsignal(signal.SIGINT) is previous


def test_off_the_main_thread_serve_until_stopped_leaves_signals_alone() -> None:
    seen: list[Any] = []
    previous = signal.getsignal(signal.SIGTERM)
    halt = threading.Event()

    def start() -> None:
        seen.append(signal.getsignal(signal.SIGTERM))
        halt.set()
    thread = threading.Thread(target=lambda: seen.append(serve_until_stopped(
        start, lambda: None, lambda: None, stopping="s", echo=lambda _m: None, stop_event=halt)))
    thread.start()
    thread.join(30)
    assert seen == [previous, 0]


class FakeServer:
    def __init__(self, running: bool, returncode: int | None) -> None:
        self.running = running
        self.returncode = returncode

    def log_tail(self) -> str:
        return "line 1\nline 2"


def test_the_exit_watch_reports_a_dead_child_server_once_it_died() -> None:
    echoed: list[str] = []
    assert child_exit_watch(FakeServer(True, None), "ZooKeeper", echoed.append)() is None
    assert echoed == []
    assert child_exit_watch(FakeServer(False, 7), "ZooKeeper", echoed.append)() == 7
    assert echoed == ["ZooKeeper exited with status 7; last log lines:\nline 1\nline 2"]
    assert child_exit_watch(FakeServer(False, 0), "Redis", echoed.append)() == 1
    assert child_exit_watch(FakeServer(False, None), "Redis", echoed.append)() == 1
    assert echoed[-1] == "Redis exited with status None; last log lines:\nline 1\nline 2"


def test_a_bare_file_name_is_written_in_the_current_directory(tmp_path: Path, bare_root: logging.Logger,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    bare_root.handlers = []
    monkeypatch.chdir(tmp_path)
    handler = log_to_file("daemon.log", "d")
    handler.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["daemon.log"]  # no other directory made
