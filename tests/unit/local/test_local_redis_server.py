"""The Redis child server: how the binary is found, the exact command line, the ``INFO`` probe,
which server counts as ours, crash/restart keeping port and directory, and ``stormpy dev-redis``.

Real ``redis-server`` starts (tens of milliseconds each); missing Redis skips, or fails in CI."""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from parts_kit import REDIS_INSTALL_HINT, unavailable
from stormpy.host.ports import free_port
from stormpy.local import _redis_server
from stormpy.local._redis_server import (
    INSTALL_HINT,
    RedisNotFound,
    RedisServer,
    RedisStartError,
    find_redis_server,
    redis_ping,
    run_dev_redis,
)


@pytest.fixture
def binary() -> str:
    """The real redis-server (skipped when missing, a failure in CI)."""
    try:
        return find_redis_server()
    except RedisNotFound as exc:
        unavailable("Redis", str(exc), REDIS_INSTALL_HINT)


@pytest.fixture
def server(binary: str) -> Iterator[RedisServer]:
    s = RedisServer()
    yield s
    s.stop()


def _executable(path: Path) -> Path:
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


# -- finding the binary --------------------------------------------------------------------------
def test_redis_server_env_names_the_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _executable(tmp_path / "my-redis")
    monkeypatch.setenv("REDIS_SERVER", str(fake))
    monkeypatch.setenv("PATH", "")
    assert find_redis_server() == str(fake)


def test_a_redis_server_env_that_is_not_executable_is_refused_with_the_hint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = tmp_path / "not-a-binary"
    plain.write_text("x")
    monkeypatch.setenv("REDIS_SERVER", str(plain))
    with pytest.raises(RedisNotFound) as info:
        find_redis_server()
    assert str(info.value) == f"REDIS_SERVER={plain} is not an executable; {INSTALL_HINT}"


def test_without_the_env_the_binary_is_found_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_SERVER", raising=False)
    fake = _executable(tmp_path / "redis-server")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_redis_server() == str(fake)
    monkeypatch.setenv("REDIS_SERVER", "")  # empty counts as not set
    assert find_redis_server() == str(fake)


def test_no_binary_anywhere_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_SERVER", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RedisNotFound) as info:
        find_redis_server()
    assert str(info.value) == f"redis-server was not found on PATH; {INSTALL_HINT}"


# -- the INFO probe ------------------------------------------------------------------------------
def _one_shot_server(parts: list[bytes], close: bool) -> tuple[int, threading.Thread, threading.Event]:
    """A TCP server answering one connection with ``parts`` (a short pause between them), then
    closing (``close``) or holding the connection until the client closes it."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    done = threading.Event()

    def serve() -> None:
        with listener:
            conn, _ = listener.accept()
            with conn:
                conn.recv(1024)
                for part in parts:
                    conn.sendall(part)
                    done.wait(0.1)  # lets the client read each part on its own
                if not close:
                    conn.settimeout(5)
                    try:
                        while conn.recv(1024):
                            pass
                    except OSError:
                        pass
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return port, thread, done


@pytest.mark.parametrize(("parts", "close"), [
    ([b"$5\r\nhel", b"lo\r\n"], False),        # a bulk reply in two pieces: waits for all of it
    ([b"$5", b"\r\nhello\r\n"], False),         # the header itself split
    ([b"-ERR unknown\r\n"], False),              # an error line: returned at once
    ([b"+OK\r\n"], False),                       # a status line
    ([b"partial"], True),                        # the server closed: what came so far
    ([], True),                                  # nothing at all
])
def test_the_probe_returns_exactly_one_whole_answer(parts: list[bytes], close: bool) -> None:
    port, thread, _ = _one_shot_server(parts, close)
    assert redis_ping("127.0.0.1", port, timeout_secs=3.0) == b"".join(parts)
    thread.join(10)


def test_the_probe_sends_info_server() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    got: list[bytes] = []

    def serve() -> None:
        with listener:
            conn, _ = listener.accept()
            with conn:
                got.append(conn.recv(1024))
                conn.sendall(b"+OK\r\n")
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    redis_ping("127.0.0.1", listener.getsockname()[1])
    thread.join(10)
    assert got == [b"INFO server\r\n"]


def test_nothing_listening_is_an_oserror() -> None:
    with pytest.raises(OSError):
        redis_ping("127.0.0.1", free_port("127.0.0.1"))


# -- the server ----------------------------------------------------------------------------------
def test_the_command_line_of_a_test_server(server: RedisServer, binary: str) -> None:
    server.start()
    assert server.command() == [
        binary, "--bind", "127.0.0.1", "--port", str(server.port), "--dir", str(server.data_dir),
        "--save", "", "--daemonize", "no", "--protected-mode", "no", "--appendonly", "no",
        "--appendfsync", "no", "--databases", "16", "--loglevel", "notice"]
    info = redis_ping(server.host, server.port)
    assert f"process_id:{server.pid}\r\n".encode() in info
    assert server.url == f"redis://127.0.0.1:{server.port}/0"
    assert server.provider_config() == {"jedisPoolConfig": {"host": "127.0.0.1", "port": server.port}}
    assert server.provider_config("p:") == {"jedisPoolConfig": {"host": "127.0.0.1", "port": server.port},
                                            "keyPrefix": "p:"}


def test_a_persistent_full_password_server(binary: str, tmp_path: Path) -> None:
    server = RedisServer(host="127.0.0.2", data_dir=tmp_path / "data", persistent=True,
                         maxmemory="2mb", password="s3cret", startup_timeout_secs=10)
    try:
        server.start()  # a NOAUTH answer counts as serving
        assert server.data_dir == (tmp_path / "data").resolve()
        assert server.command() == [
            binary, "--bind", "127.0.0.2", "--port", str(server.port), "--dir", str(server.data_dir),
            "--save", "", "--daemonize", "no", "--protected-mode", "no", "--appendonly", "yes",
            "--appendfsync", "no", "--databases", "16", "--loglevel", "notice",
            "--maxmemory", "2mb", "--maxmemory-policy", "noeviction", "--requirepass", "s3cret"]
        assert server.provider_config() == {
            "jedisPoolConfig": {"host": "127.0.0.2", "port": server.port, "password": "s3cret"}}
        assert server.url == f"redis://127.0.0.2:{server.port}/0"
        client = redis.Redis(host="127.0.0.2", port=server.port, password="s3cret")
        try:
            with pytest.raises(redis.exceptions.ResponseError, match="used memory > 'maxmemory'"):
                client.set("big", b"x" * (4 * 1024 * 1024))
        finally:
            client.close()
    finally:
        server.stop()
    assert (tmp_path / "data").is_dir()  # a given directory is kept


def test_only_a_server_answering_with_our_process_id_serves(
        server: RedisServer, monkeypatch: pytest.MonkeyPatch) -> None:
    assert server.serving() is False  # not started: no probe
    server.start()
    answers = {"ours": f"$30\r\nprocess_id:{server.pid}\r\n".encode(),
               "other": f"$30\r\nprocess_id:{server.pid}1\r\n".encode(),
               "noauth": b"-NOAUTH Authentication required.\r\n",
               "error": b"-ERR something\r\n"}
    seen = {}
    for name, answer in answers.items():
        monkeypatch.setattr(_redis_server, "redis_ping", lambda host, port, answer=answer: answer)
        seen[name] = server.serving()
    assert seen == {"ours": True, "other": False, "noauth": True, "error": False}


def _set_get(port: int, value: str | None = None) -> bytes | None:
    client = redis.Redis(host="127.0.0.1", port=port)
    try:
        if value is not None:
            client.set("k", value)
        return client.get("k")  # type: ignore[return-value]
    finally:
        client.close()


def test_a_killed_server_starts_again_on_its_port_and_directory(binary: str) -> None:
    server = RedisServer(persistent=True)
    try:
        server.start()
        port, work, pid = server.port, server.data_dir, server.pid
        assert work is not None
        _set_get(port, "v1")
        server.kill()
        assert not server.running and server.pid is None
        assert work.is_dir()
        with pytest.raises(redis.exceptions.ConnectionError):
            _set_get(port)
        server.start()
        assert (server.port, server.data_dir) == (port, work)
        assert server.pid != pid
        assert _set_get(port) == b"v1"  # the append-only file came back
        server.restart()
        assert (server.port, server.data_dir) == (port, work)
        assert _set_get(port) == b"v1"
        server.kill()
        server.restart()
        assert (server.port, server.data_dir) == (port, work)
    finally:
        server.stop()
    assert not work.exists()  # the temporary directory went with the server
    assert not server.running


def test_a_restarted_temp_server_removes_its_directory_on_stop(binary: str) -> None:
    server = RedisServer()
    try:
        server.start()
        work = server.data_dir
        assert work is not None
        server.restart()
        assert server.data_dir == work and server.running
    finally:
        server.stop()
    assert not work.exists()
    server.stop()  # idempotent


def test_dev_redis_serves_until_asked_to_stop(binary: str, tmp_path: Path) -> None:
    port = free_port("127.0.0.1")
    stop = threading.Event()
    lines: list[str] = []
    seen: dict[str, object] = {}

    def ready(server: RedisServer) -> None:
        seen["server"] = server
        seen["command"] = server.command()
        seen["running"] = server.running
        stop.set()

    code = run_dev_redis(port, tmp_path / "dev", echo=lines.append, stop_event=stop, on_ready=ready)
    assert code == 0
    server = seen["server"]
    assert isinstance(server, RedisServer)
    assert seen["running"] is True and not server.running
    command = seen["command"]
    assert isinstance(command, list)
    assert command[command.index("--appendonly") + 1] == "yes"
    assert command[command.index("--port") + 1] == str(port)
    data = (tmp_path / "dev").resolve()
    assert lines[0] == (f"Redis serving on 127.0.0.1:{port} (data {data}, log {data / 'redis.log'}); "
                        f"topology.state.provider: redis, topology.state.provider.config: "
                        f"{json.dumps({'jedisPoolConfig': {'host': '127.0.0.1', 'port': port}})}; "
                        f"Ctrl-C to stop")
    assert lines[1:] == ["stopping Redis"]
    assert data.is_dir()


def test_dev_redis_reports_a_server_that_died(binary: str, tmp_path: Path) -> None:
    lines: list[str] = []

    def ready(server: RedisServer) -> None:
        assert server.pid is not None
        os.kill(server.pid, 9)

    code = run_dev_redis(free_port("127.0.0.1"), tmp_path / "dev", echo=lines.append, on_ready=ready)
    assert code == -9
    assert lines[-1].startswith("Redis exited with status -9; last log lines:\n")


def test_stop_gives_the_server_the_grace_asked_for(server: RedisServer,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from stormpy.host import child_server
    graces: list[float] = []
    real = child_server.terminate_popen

    def recording(proc: object, grace_secs: float) -> None:
        graces.append(grace_secs)
        real(proc, grace_secs)  # type: ignore[arg-type]
    monkeypatch.setattr(child_server, "terminate_popen", recording)
    server.start()
    server.stop(grace_secs=2.5)
    assert graces == [2.5]
    server.start()
    server.stop()
    assert graces == [2.5, RedisServer.stop_grace_secs]


def test_a_killed_server_whose_directory_went_away_still_stops(binary: str) -> None:
    import shutil
    server = RedisServer()
    try:
        server.start()
        work = server.data_dir
        assert work is not None
        server.kill()
        shutil.rmtree(work)
    finally:
        server.stop()
    assert not server.running


def test_dev_redis_by_default_keeps_its_data_under_stormpy_local_on_6379(
        monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[tuple[object, ...], dict[str, object]]] = []

    class Recorder(RedisServer):
        def __init__(self, *args: object, **kwargs: object) -> None:
            made.append((args, kwargs))
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]

        def start(self) -> Recorder:
            raise RedisStartError("not in this test")
    monkeypatch.setattr(_redis_server, "RedisServer", Recorder)
    with pytest.raises(RedisStartError):
        run_dev_redis(echo=lambda line: None, stop_event=threading.Event())
    assert made == [((6379,), {"host": "127.0.0.1", "data_dir": "stormpy-local/dev-redis",
                               "persistent": True})]
    made.clear()
    with pytest.raises(RedisStartError):
        run_dev_redis(7000, "d", host="127.0.0.2", echo=lambda line: None, stop_event=threading.Event())
    assert made == [((7000,), {"host": "127.0.0.2", "data_dir": "d", "persistent": True})]


def test_a_bulk_reply_split_in_two_is_read_whole() -> None:
    port, thread, _ = _one_shot_server([b"$5\r\nhel", b"lo\r\n"], False)
    assert redis_ping("127.0.0.1", port, timeout_secs=3.0) == b"$5\r\nhello\r\n"
    thread.join(10)


def test_a_probe_of_a_port_that_never_answers_times_out() -> None:
    # accepts (backlog), never answers
    with socket.create_server(("127.0.0.1", 0)) as silent, pytest.raises(TimeoutError):
        redis_ping("127.0.0.1", silent.getsockname()[1], timeout_secs=0.3)


def test_the_port_is_known_after_start_and_is_a_free_one(binary: str) -> None:
    first, second = RedisServer(), RedisServer()
    with pytest.raises(RuntimeError, match=r"^RedisServer.port is known only after start\(\)$"):
        _ = first.port
    try:
        first.start()
        second.start()
        assert first.port != second.port
        assert first.port > 1024 and second.port > 1024
    finally:
        first.stop()
        second.stop()


def test_the_options_reach_the_process_handling() -> None:
    assert RedisServer().die_with_parent is True
    assert RedisServer(die_with_parent=False).die_with_parent is False
    assert RedisServer(startup_timeout_secs=7.5).startup_timeout_secs == 7.5


def _fake_redis(tmp_path: Path, body: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake = tmp_path / "fake-redis-server"
    fake.write_text(f"#!/bin/sh\n{body}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("REDIS_SERVER", str(fake))
    return fake


def test_a_server_that_never_answers_fails_the_start_naming_binary_and_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_redis(tmp_path, "echo 'starting slowly'\nexec sleep 60", monkeypatch)
    server = RedisServer(data_dir=tmp_path / "d", startup_timeout_secs=0.5)
    with pytest.raises(RedisStartError) as info:
        server.start()
    log = (tmp_path / "d").resolve() / "redis.log"
    message = str(info.value)
    assert message.startswith(f"Redis on 127.0.0.1:{server.port} did not start serving within 0.5 s "
                              f"(log {log}):\n")
    assert f"--- stormpy: {fake} --bind 127.0.0.1 --port {server.port}" in message
    assert message.endswith("starting slowly")
    assert not server.running


def test_a_server_that_exits_fails_the_start_with_its_status_and_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_redis(tmp_path, "echo 'bad config'\nexit 3", monkeypatch)
    server = RedisServer()
    with pytest.raises(RedisStartError) as info:
        server.start()
    message = str(info.value)
    assert message.startswith("Redis exited with status 3 during startup (log ")
    assert message.endswith("bad config")
    assert server.data_dir is not None and not server.data_dir.exists()  # its temporary dir removed
