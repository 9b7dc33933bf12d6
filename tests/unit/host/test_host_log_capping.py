"""Capped worker logs: rotation by the file's real size (output written behind the handler's back
included), stdout and stderr carried to the new file, the cap's settings; and the web thread the
UI and the log server run on (binding, its URL, a start that fails, its stop)."""

from __future__ import annotations

import logging
import os
import socket
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from stormpy.host.log_files import CappedLogHandler, rotate_full_logs
from stormpy.host.web_thread import WebThread


@pytest.fixture
def saved_stdio() -> Iterator[None]:
    """File descriptors 1 and 2 put back after a test pointed them at a log file."""
    saved = (os.dup(1), os.dup(2))
    try:
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


def _logger(name: str, handler: logging.Handler) -> logging.Logger:
    logger = logging.getLogger(name)
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger


def test_settings_and_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a" / "b" / "w.log"
    handler = CappedLogHandler(path, -5, 0)
    try:
        assert path.parent.is_dir() and handler.maxBytes == 0 and handler.backupCount == 1
        assert handler.capture_stdio is False
        assert handler.rotate_if_full() is False  # no cap: never rotated
    finally:
        handler.close()
    handler = CappedLogHandler(str(tmp_path / "x.log"), "100", "3")  # type: ignore[arg-type]
    try:
        assert handler.maxBytes == 100 and handler.backupCount == 3
    finally:
        handler.close()
    monkeypatch.chdir(tmp_path)
    here = CappedLogHandler("here.log", 10, 1)  # no directory part: the current one
    here.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "here.log", "x.log"]  # no other directory


def test_output_written_behind_the_handlers_back_is_rotated(tmp_path: Path) -> None:
    path = tmp_path / "w.log"
    handler = CappedLogHandler(path, 100, 2)
    logger = _logger("test.capping.behind", handler)
    try:
        with open(path, "ab") as other:
            other.write(b"p" * 100)
        assert handler.rotate_if_full() is True
        assert (tmp_path / "w.log.1").read_bytes() == b"p" * 100 and path.read_bytes() == b""
        assert handler.rotate_if_full() is False
        with open(path, "ab") as other:
            other.write(b"q" * 99)
        assert handler.rotate_if_full() is False  # one byte under the cap
        with open(path, "ab") as other:
            other.write(b"q")
        logger.info("after")  # a record judges by the real size too
        assert (tmp_path / "w.log.1").read_bytes() == b"q" * 100
        assert (tmp_path / "w.log.2").read_bytes() == b"p" * 100
        assert path.read_text() == "after\n"
    finally:
        logger.handlers = []
        handler.close()
    assert handler.rotate_if_full() is False  # closed: nothing to rotate


def test_a_record_that_fits_is_not_rotated(tmp_path: Path) -> None:
    path = tmp_path / "w.log"
    handler = CappedLogHandler(path, 1000, 1)
    logger = _logger("test.capping.fits", handler)
    try:
        logger.info("one")
        logger.info("two")
        assert path.read_text() == "one\ntwo\n" and not (tmp_path / "w.log.1").exists()
        logger.info("x" * 2000)
        assert (tmp_path / "w.log.1").read_text() == "one\ntwo\n"
    finally:
        logger.handlers = []
        handler.close()


def test_stdout_and_stderr_follow_the_current_file(tmp_path: Path, saved_stdio: None) -> None:
    path = tmp_path / "w.log"
    handler = CappedLogHandler(path, 64, 1, capture_stdio=True)
    try:
        assert handler.capture_stdio is True
        os.write(1, b"to stdout\n")
        os.write(2, b"to stderr\n")
        os.write(1, b"o" * 60)
        rotate_full_logs(_logger("test.capping.stdio", handler))
        os.write(1, b"after rotation\n")
        os.write(2, b"err after\n")
        assert (tmp_path / "w.log.1").read_bytes() == b"to stdout\nto stderr\n" + b"o" * 60
        assert path.read_bytes() == b"after rotation\nerr after\n"
    finally:
        logging.getLogger("test.capping.stdio").handlers = []
        handler.close()


def test_rotate_full_logs_reaches_the_capped_handlers_of_the_root(tmp_path: Path) -> None:
    path = tmp_path / "w.log"
    handler = CappedLogHandler(path, 10, 1)
    plain = logging.FileHandler(tmp_path / "plain.log")
    root = logging.getLogger()
    root.addHandler(handler)
    root.addHandler(plain)
    try:
        with open(path, "ab") as other:
            other.write(b"z" * 10)
        rotate_full_logs()
        assert (tmp_path / "w.log.1").read_bytes() == b"z" * 10
    finally:
        root.removeHandler(handler)
        root.removeHandler(plain)
        handler.close()
        plain.close()


def test_a_handler_without_its_lock_still_rotates(tmp_path: Path) -> None:
    path = tmp_path / "w.log"
    handler = CappedLogHandler(path, 5, 1)
    try:
        handler.lock = None  # type: ignore[assignment]
        with open(path, "ab") as other:
            other.write(b"12345")
        assert handler.rotate_if_full() is True
    finally:
        handler.close()


# -- the web thread ----------------------------------------------------------------------------------


def _app() -> Starlette:
    return Starlette(routes=[Route("/", lambda _r: PlainTextResponse("hello"))])


def test_a_web_thread_serves_on_its_port_until_stopped() -> None:
    web = WebThread(_app(), "127.0.0.1", 0, name="test-web", what="test server")
    assert web.port > 0 and web.url == f"http://127.0.0.1:{web.port}"
    web.start(30)
    try:
        serving = [t for t in threading.enumerate() if t.name == "test-web"]
        assert len(serving) == 1 and serving[0].daemon  # never keeps the process alive
        with urllib.request.urlopen(web.url + "/", timeout=30) as answer:
            assert answer.read() == b"hello"
        stop = threading.Event()
        stop.set()
        web.wait(stop)  # returns at once when asked to stop
    finally:
        web.stop()
    assert "test-web" not in [t.name for t in threading.enumerate()]
    with pytest.raises(OSError):
        urllib.request.urlopen(web.url + "/", timeout=5)
    web.wait(threading.Event())  # the server ended: returns
    web.stop()  # idempotent


def test_urls_for_every_interface_and_ipv6() -> None:
    for host, shown in (("0.0.0.0", "127.0.0.1"), ("", "127.0.0.1")):
        web = WebThread(_app(), host, 0, name="t", what="t")
        try:
            assert web.url == f"http://{shown}:{web.port}"
        finally:
            web.stop()
    for host in ("::", "::1"):
        web = WebThread(_app(), host, 0, name="t", what="t")
        try:
            assert web.url == f"http://[::1]:{web.port}"
        finally:
            web.stop()


def test_a_taken_port_is_refused_and_the_socket_closed() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError):
            WebThread(_app(), "127.0.0.1", port, name="t", what="t")
    web = WebThread(_app(), "127.0.0.1", str(port), name="t", what="t")  # type: ignore[arg-type]
    try:
        assert web.port == port
    finally:
        web.stop()


def test_a_start_that_does_not_serve_in_time_is_stopped_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    web = WebThread(_app(), "127.0.0.1", 0, name="slow-web", what="log server")
    stopped = threading.Event()

    def never_serving(sockets: list[socket.socket]) -> None:
        while not web.server.should_exit:
            stopped.wait(0.01)
        stopped.set()
    monkeypatch.setattr(web.server, "run", never_serving)
    with pytest.raises(RuntimeError) as raised:
        web.start(0.2)
    message = str(raised.value)
    assert message.startswith(f"the log server did not start on {web.url} (timed out after 0.2s waiting for "
                              f"the log server to serve on {web.url}")
    assert stopped.is_set() and web._thread is None and web._sock.fileno() == -1


def test_a_server_thread_that_ends_is_a_start_error(monkeypatch: pytest.MonkeyPatch) -> None:
    web = WebThread(_app(), "127.0.0.1", 0, name="dying-web", what="UI")
    monkeypatch.setattr(web.server, "run", lambda sockets: None)
    with pytest.raises(RuntimeError, match=r"\(the UI's server thread ended\)$"):
        web.start(30)


def test_a_handler_without_capture_leaves_stdout_alone(tmp_path: Path, saved_stdio: None) -> None:
    path = tmp_path / "w.log"
    handler = CappedLogHandler(path, 1000, 1)
    try:
        handler.doRollover()
        os.write(1, b"not for the log\n")
        assert path.read_bytes() == b""
    finally:
        handler.close()


def test_no_cap_means_no_rotation_by_records_either(tmp_path: Path) -> None:
    path = tmp_path / "w.log"
    handler = CappedLogHandler(path, 0, 1)
    logger = _logger("test.capping.uncapped", handler)
    try:
        for i in range(3):
            logger.info("record %d", i)
        assert path.read_text() == "record 0\nrecord 1\nrecord 2\n" and not (tmp_path / "w.log.1").exists()
    finally:
        logger.handlers = []
        handler.close()


def test_a_one_byte_cap_rotates_a_one_byte_file(tmp_path: Path) -> None:
    path = tmp_path / "w.log"
    handler = CappedLogHandler(path, 1, 1)
    try:
        assert handler.rotate_if_full() is False
        with open(path, "ab") as other:
            other.write(b"x")
        assert handler.rotate_if_full() is True and (tmp_path / "w.log.1").read_bytes() == b"x"
    finally:
        handler.close()


def test_a_file_that_cannot_be_sized_is_not_rotated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stormpy.host import log_files

    handler = CappedLogHandler(tmp_path / "w.log", 1, 1)
    try:
        with open(tmp_path / "w.log", "ab") as other:
            other.write(b"full")

        def fstat(_fd: int) -> os.stat_result:
            raise OSError("gone")
        monkeypatch.setattr(log_files.os, "fstat", fstat)
        assert handler.rotate_if_full() is False
        monkeypatch.undo()
        assert not (tmp_path / "w.log.1").exists()
    finally:
        handler.close()


def test_a_rotation_waits_for_a_record_being_written(tmp_path: Path) -> None:
    from stormpy.host.waiting import stays_unchanged, wait_for

    path = tmp_path / "w.log"
    handler = CappedLogHandler(path, 1, 1)
    try:
        assert handler.rotate_if_full() is False  # empty (and asked on this thread too)
        with open(path, "ab") as other:
            other.write(b"x")
        done: list[bool] = []
        assert handler.lock is not None
        handler.lock.acquire()  # a record is being written on another thread
        try:
            rotating = threading.Thread(target=lambda: done.append(handler.rotate_if_full()))
            rotating.start()
            stays_unchanged(lambda: list(done), 0.2, "the rotation while the handler is locked")
        finally:
            handler.lock.release()
        wait_for(lambda: done == [True], 30, "the rotation after the record")
        rotating.join(30)
    finally:
        handler.close()


def test_uvicorn_logs_warnings_only_and_no_access_lines() -> None:
    for name in ("uvicorn.error", "uvicorn.access", "uvicorn.asgi"):
        logging.getLogger(name).setLevel(logging.NOTSET)
    logging.getLogger("uvicorn.access").propagate = True
    web = WebThread(_app(), "127.0.0.1", 0, name="t", what="t")
    web.stop()
    assert [logging.getLogger(n).level for n in ("uvicorn.error", "uvicorn.access", "uvicorn.asgi")] == [
        logging.WARNING] * 3
    assert logging.getLogger("uvicorn.access").propagate is False


def test_wait_blocks_while_the_server_runs_until_asked_to_stop() -> None:
    web = WebThread(_app(), "127.0.0.1", 0, name="waiting-web", what="t")
    web.start(30)
    try:
        stop = threading.Event()
        threading.Timer(1.0, stop.set).start()
        web.wait(stop)
        assert stop.is_set()  # returned because asked, not while the server still runs
    finally:
        web.stop()
