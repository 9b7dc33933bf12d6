"""RpcServer and RpcClient over real ZeroMQ sockets on 127.0.0.1 with free ports."""

from __future__ import annotations

import builtins
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import msgpack
import pytest
import zmq
from rpc_kit import zctx_fixture  # noqa: F401 - a fixture

from stormpy.rpc import (
    AuthorizationError,
    InternalError,
    InvalidRequestError,
    NotFoundError,
    RpcClient,
    RpcError,
    RpcServer,
    RpcTimeoutError,
    UnreachableError,
    rpc_method,
)
from stormpy.rpc.codec import PROTOCOL_VERSION, decode_response
from stormpy.testing import free_port

pytestmark = pytest.mark.timeout(60)

HOST = "127.0.0.1"


class Handler:
    def __init__(self) -> None:
        self.counter = 0
        self.lock = threading.Lock()
        self.entered = threading.Event()
        self.release = threading.Event()

    @rpc_method
    def echo(self, value: Any) -> Any:
        return value

    @rpc_method
    def add(self, a: int, b: int) -> int:
        return a + b

    @rpc_method
    def missing(self, name: str) -> None:
        raise NotFoundError(f"no topology named {name!r}")

    @rpc_method
    def crash(self) -> None:
        raise ValueError("disk on fire")

    @rpc_method
    def unsendable(self) -> object:
        return object()

    @rpc_method
    def incr(self) -> int:
        with self.lock:
            self.counter += 1
            return self.counter

    @rpc_method
    def block(self) -> str:
        self.entered.set()
        self.release.wait(30)
        return "released"

    @rpc_method
    def slow_incr(self) -> int:
        value = self.incr()
        self.release.wait(30)
        return value

    def private_helper(self) -> None:
        raise AssertionError("not exposed")


@pytest.fixture
def handler() -> Handler:
    return Handler()


@pytest.fixture
def server(handler: Handler) -> Iterator[RpcServer]:
    srv = RpcServer(HOST, 0, handler, max_workers=4).start()
    try:
        yield srv
    finally:
        handler.release.set()
        srv.close()


@pytest.fixture
def client(server: RpcServer) -> Iterator[RpcClient]:
    with RpcClient(HOST, server.port, timeout_secs=10, retries=0, service="Nimbus") as c:
        yield c



def test_round_trip(client: RpcClient) -> None:
    value = {"name": "wc", "bytes": b"\x00\x01", "nested": [1, 2.5, None, True, {"k": "v"}], "big": 2**63 - 1}
    assert client.call("echo", value=value) == value
    assert client.call("add", a=2, b=40) == 42
    assert client.ping()


def test_typed_errors_are_reraised_and_server_keeps_serving(client: RpcClient) -> None:
    with pytest.raises(NotFoundError, match="no topology named 'wc'"):
        client.call("missing", name="wc")
    with pytest.raises(InternalError, match="crash failed: ValueError: disk on fire"):
        client.call("crash")
    with pytest.raises(InternalError, match="unsendable returned a result that is not msgpack-serialisable"):
        client.call("unsendable")
    assert client.call("add", a=1, b=1) == 2


def test_unknown_and_unexposed_methods_and_bad_args(client: RpcClient) -> None:
    with pytest.raises(InvalidRequestError, match="unknown method 'nope'"):
        client.call("nope")
    with pytest.raises(InvalidRequestError, match="unknown method 'private_helper'"):
        client.call("private_helper")
    with pytest.raises(InvalidRequestError, match="bad arguments for method 'add'"):
        client.call("add", a=1)
    assert client.call("add", a=1, b=2) == 3


@pytest.mark.parametrize("frames", [
    [b"\xc1 this is not msgpack"],
    [msgpack.packb(["a", "list"])],
    [msgpack.packb({"v": PROTOCOL_VERSION, "id": "r1", "method": 12})],
])
def test_malformed_frame_gets_an_error_and_server_keeps_serving(
        server: RpcServer, client: RpcClient, zctx: zmq.Context[zmq.Socket[bytes]],
        frames: list[bytes]) -> None:
    raw = zctx.socket(zmq.REQ)
    raw.linger = 0
    raw.connect(f"tcp://{HOST}:{server.port}")
    raw.send_multipart(frames)
    assert raw.poll(10_000), "server did not answer a malformed frame"
    response = decode_response(raw.recv())
    raw.close()
    assert not response.ok and response.error_type == "InvalidRequestError"
    assert "malformed request" in (response.error_message or "")
    assert client.call("add", a=20, b=22) == 42


def test_multi_frame_garbage_is_refused(server: RpcServer, client: RpcClient,
                                        zctx: zmq.Context[zmq.Socket[bytes]]) -> None:
    raw = zctx.socket(zmq.DEALER)
    raw.linger = 0
    raw.connect(f"tcp://{HOST}:{server.port}")
    raw.send_multipart([b"", b"one", b"two"])
    assert raw.poll(10_000)
    delimiter, payload = raw.recv_multipart()
    raw.close()
    response = decode_response(payload)
    assert delimiter == b"" and response.error_type == "InvalidRequestError"
    assert "expected exactly one payload frame, got 2" in (response.error_message or "")
    assert client.call("add", a=1, b=2) == 3


def test_concurrent_clients(server: RpcServer) -> None:
    results: dict[int, list[int]] = {}
    failures: list[BaseException] = []

    def run(n: int) -> None:
        try:
            with RpcClient(HOST, server.port, timeout_secs=20) as c:
                results[n] = [c.call("add", a=n, b=i) for i in range(25)]
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not failures
    assert results == {n: [n + i for i in range(25)] for n in range(8)}


def test_one_shared_client_is_thread_safe(client: RpcClient) -> None:
    out: list[int] = []
    threads = [threading.Thread(target=lambda n=n: out.append(client.call("add", a=n, b=0)))
               for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(out) == list(range(6))


def test_slow_call_does_not_block_other_clients(server: RpcServer, handler: Handler) -> None:
    outcome: list[str] = []
    with RpcClient(HOST, server.port, timeout_secs=20) as slow:
        blocked = threading.Thread(target=lambda: outcome.append(slow.call("block")))
        blocked.start()
        assert handler.entered.wait(10)
        with RpcClient(HOST, server.port, timeout_secs=10) as fast:
            assert fast.call("add", a=1, b=2) == 3
        handler.release.set()
        blocked.join(20)
    assert outcome == ["released"]


def test_unreachable_server_fails_promptly_naming_the_address() -> None:
    port = free_port(HOST)
    with RpcClient(HOST, port, timeout_secs=0.3, retries=1, service="Nimbus") as c:
        with pytest.raises(UnreachableError) as info:
            c.call("add", a=1, b=2)
        assert not c.ping(timeout_secs=0.2)
    message = str(info.value)
    assert f"Nimbus at {HOST}:{port} did not answer within 0.3 s" in message and "'add'" in message
    assert isinstance(info.value, builtins.TimeoutError)


def test_connected_but_silent_server_is_a_timeout(server: RpcServer, handler: Handler) -> None:
    with RpcClient(HOST, server.port, timeout_secs=0.3, retries=0) as c, \
            pytest.raises(RpcTimeoutError) as info:
        c.call("block")
    assert not isinstance(info.value, UnreachableError)
    assert f"{HOST}:{server.port}" in str(info.value) and "connected" in str(info.value)


def test_retries_do_not_execute_a_call_twice(server: RpcServer, handler: Handler) -> None:
    # The first attempt is still running when the client gives up on it; retries reuse the
    # request id, so the server answers them with the first attempt's result.
    timer = threading.Timer(1.0, handler.release.set)
    timer.start()
    try:
        with RpcClient(HOST, server.port, timeout_secs=0.25, retries=40) as c:
            assert c.call("slow_incr") == 1
    finally:
        timer.cancel()
    assert handler.counter == 1


def test_repeated_request_id_is_answered_from_cache(server: RpcServer, handler: Handler,
                                                    zctx: zmq.Context[zmq.Socket[bytes]]) -> None:
    raw = zctx.socket(zmq.DEALER)
    raw.linger = 0
    raw.connect(f"tcp://{HOST}:{server.port}")
    request = msgpack.packb({"v": PROTOCOL_VERSION, "id": uuid.uuid4().hex, "method": "incr", "args": {}})
    answers = []
    for _ in range(2):
        raw.send_multipart([b"", request])
        assert raw.poll(10_000)
        answers.append(decode_response(raw.recv_multipart()[1]).unwrap())
    raw.close()
    assert answers == [1, 1] and handler.counter == 1


def test_client_recovers_when_server_restarts(handler: Handler) -> None:
    first = RpcServer(HOST, 0, handler).start()
    port = first.port
    with RpcClient(HOST, port, timeout_secs=0.5, retries=0) as c:
        try:
            assert c.call("add", a=1, b=1) == 2
        finally:
            first.close()
        with pytest.raises(RpcTimeoutError):
            c.call("add", a=1, b=1)
        with RpcServer(HOST, port, handler) as second:
            assert second.port == port
            assert c.request("add", {"a": 2, "b": 2}, timeout_secs=2, retries=5) == 4


def test_auth_token(handler: Handler) -> None:
    with RpcServer(HOST, 0, handler, auth_token="s3cret") as srv:
        with RpcClient(HOST, srv.port, timeout_secs=10, retries=0) as anonymous, \
                pytest.raises(AuthorizationError, match="no valid auth token"):
            anonymous.call("add", a=1, b=1)
        with RpcClient(HOST, srv.port, timeout_secs=10, auth_token="wrong") as wrong, \
                pytest.raises(AuthorizationError):
            wrong.call("add", a=1, b=1)
        with RpcClient(HOST, srv.port, timeout_secs=10, auth_token="s3cret") as good:
            assert good.call("add", a=1, b=1) == 2


def test_port_in_use_is_a_clear_error(server: RpcServer, handler: Handler) -> None:
    with pytest.raises(RpcError, match=f"cannot listen on {HOST}:{server.port}"):
        RpcServer(HOST, server.port, handler).start()


def test_closed_client_and_server_are_idempotent(handler: Handler) -> None:
    srv = RpcServer(HOST, 0, handler).start()
    c = RpcClient(HOST, srv.port, timeout_secs=5)
    assert c.call("add", a=1, b=2) == 3
    c.close()
    c.close()
    with pytest.raises(RpcError, match="closed"):
        c.call("add", a=1, b=2)
    srv.close()
    srv.close()


def test_close_releases_threads_even_with_a_call_in_flight(handler: Handler) -> None:
    name = f"leakcheck{uuid.uuid4().hex[:6]}"
    srv = RpcServer(HOST, 0, handler, name=name, max_workers=2).start()
    with RpcClient(HOST, srv.port, timeout_secs=0.3, retries=0) as c, pytest.raises(RpcTimeoutError):
        c.call("block")
    assert handler.entered.wait(10)
    handler.release.set()
    srv.close()
    assert [t.name for t in threading.enumerate() if t.name.startswith(name)] == []


def test_call_stats_count_calls_errors_and_refusals(server: RpcServer, client: RpcClient) -> None:
    assert client.call("add", a=1, b=2) == 3
    assert client.call("add", a=2, b=2) == 4
    with pytest.raises(NotFoundError):
        client.call("missing", name="x")
    with pytest.raises(InternalError):
        client.call("crash")
    with pytest.raises(InvalidRequestError):
        client.call("no_such_method")
    stats = server.call_stats()
    assert stats["calls"] == {"add": 2, "missing": 1, "crash": 1}
    assert stats["errors"] == {"missing": 1, "crash": 1}
    assert stats["refused"] == 1
