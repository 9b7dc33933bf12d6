"""RpcClient as its callers see it, against a real RpcServer or a raw ROUTER: the arguments it
refuses, what each failure says, the sockets it leaves behind, and the requests a server that
cannot read them or answers late makes of it."""

from __future__ import annotations

import contextlib
import gc
import socket
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import msgpack
import pytest
import zmq
from rpc_kit import ANSWER_SECS, zctx_fixture  # noqa: F401 - a fixture

from stormpy.rpc import (
    AuthorizationError,
    InvalidRequestError,
    RpcClient,
    RpcError,
    RpcServer,
    RpcTimeoutError,
    UnreachableError,
    rpc_method,
)
from stormpy.rpc.codec import Response, encode_response
from stormpy.testing import free_port


class Echo:
    @rpc_method
    def echo(self, value: Any) -> Any:
        return value


@pytest.fixture
def server() -> Iterator[RpcServer]:
    with RpcServer(handler=Echo(), name="t").start() as srv:
        yield srv


class FullQueueSocket(zmq.Socket[bytes]):
    """A socket whose queue towards the server is always full (a send would have to wait)."""

    def send_multipart(self, *args: Any, **kwargs: Any) -> None:
        raise zmq.Again()


class FullQueueContext(zmq.Context[FullQueueSocket]):
    _socket_class = FullQueueSocket


def test_a_request_the_socket_cannot_take_waits_out_the_attempt_and_is_unreachable() -> None:
    ctx = FullQueueContext()
    try:
        with RpcClient("127.0.0.1", 9, timeout_secs=0.2, retries=1, service="Nimbus",
                       context=ctx) as client, pytest.raises(UnreachableError) as info:
            client.call("echo", value=1)
        assert str(info.value) == ("Nimbus at 127.0.0.1:9 did not answer within 0.2 s (call 'echo', "
                                   "2 attempts): no connection could be made; is it running?")
    finally:
        ctx.destroy(linger=0)


def test_a_client_dropped_without_close_closes_its_sockets(server: RpcServer) -> None:
    client = RpcClient("127.0.0.1", server.port, timeout_secs=ANSWER_SECS, retries=0)
    assert client.call("echo", value="x") == "x"
    gc.collect()  # what earlier tests left unclosed warns now, not below
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del client
        gc.collect()
    # only the client's own: a ZeroMQ socket or context left open warns naming its class
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)
            and "zmq" in str(w.message)] == []


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"timeout_secs": 0}, "timeout_secs must be positive"),
    ({"timeout_secs": -1.0}, "timeout_secs must be positive"),
    ({"connect_timeout_secs": 0}, r"connect_timeout_secs must be positive \(or None\)"),
    ({"retries": -1}, "retries must be >= 0"),
])
def test_a_client_refuses_settings_that_cannot_work(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        RpcClient("127.0.0.1", 9, **kwargs)


def test_a_client_keeps_its_settings_and_names_its_server() -> None:
    client = RpcClient("10.0.0.7", 6627, timeout_secs=1.5, retries=0, service="Nimbus",
                       connect_timeout_secs=0.5)
    assert (client.host, client.port, client.address) == ("10.0.0.7", 6627, "10.0.0.7:6627")
    assert (client.timeout_secs, client.retries, client.service, client.connect_timeout_secs) == (
        1.5, 0, "Nimbus", 0.5)
    client.close()


def test_a_client_waits_10_s_retries_once_and_calls_its_peer_an_rpc_server_by_default() -> None:
    client = RpcClient("127.0.0.1", 9)
    assert (client.timeout_secs, client.retries, client.service, client.connect_timeout_secs) == (
        10.0, 1, "RPC server", None)
    client.close()


def test_a_closed_client_refuses_calls_naming_its_server(server: RpcServer) -> None:
    client = RpcClient("127.0.0.1", server.port, timeout_secs=ANSWER_SECS, service="Nimbus")
    assert client.call("echo", value=[1, 2]) == [1, 2]
    client.close()
    client.close()
    with pytest.raises(RpcError, match=rf"^RpcClient for Nimbus at 127\.0\.0\.1:{server.port} is closed$"):
        client.call("echo", value=1)


def test_a_client_used_as_a_context_is_closed_after_it(server: RpcServer) -> None:
    with RpcClient("127.0.0.1", server.port, timeout_secs=ANSWER_SECS) as client:
        assert client.request("echo", {"value": "v"}) == "v"
    with pytest.raises(RpcError, match="is closed"):
        client.request("echo", {"value": "v"})


@pytest.mark.timeout(60)
def test_a_connect_timeout_makes_a_dead_server_unreachable_at_once() -> None:
    port = free_port()  # nobody listens there: the connection is refused at once
    # the refusal ends the wait, not the (far longer) connect timeout; no attempt is made
    with RpcClient("127.0.0.1", port, timeout_secs=2.0, retries=1, service="Nimbus",
                   connect_timeout_secs=600) as client, pytest.raises(UnreachableError) as info:
        client.call("echo", value=1)
    assert str(info.value) == (f"Nimbus at 127.0.0.1:{port}: no connection could be made within "
                               "600 s (call 'echo'); is it running?")


@pytest.fixture
def full_listener() -> Iterator[int]:
    """A port whose listener never accepts and whose accept queue is full: a connection to it
    is neither made nor refused (the kernel drops its SYN)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            filler.connect(("127.0.0.1", port))
        fillers.append(filler)
    yield port
    for sock in (*fillers, listener):
        sock.close()


@pytest.mark.timeout(60)
def test_a_connection_that_never_comes_is_unreachable_after_the_connect_timeout(full_listener: int) -> None:
    with RpcClient("127.0.0.1", full_listener, timeout_secs=ANSWER_SECS, retries=2,
                   connect_timeout_secs=0.5) as client, pytest.raises(UnreachableError) as info:
        client.call("echo", value=1)
    assert str(info.value) == (f"RPC server at 127.0.0.1:{full_listener}: no connection could be made "
                               "within 0.5 s (call 'echo'); is it running?")


def test_a_server_that_took_the_connection_is_a_timeout_also_with_a_connect_timeout(
        zctx: zmq.Context[zmq.Socket[bytes]]) -> None:
    srv = scripted(zctx, lambda rid: [])
    try:
        with RpcClient("127.0.0.1", srv.port, timeout_secs=0.5, retries=1, connect_timeout_secs=ANSWER_SECS,
                       service="Nimbus") as client, pytest.raises(RpcTimeoutError) as info:
            client.call("echo", value=1)
        assert type(info.value) is RpcTimeoutError
        assert str(info.value).endswith("(call 'echo', 2 attempts): connected, but no reply arrived")
    finally:
        srv.close()


def test_a_connect_timeout_under_a_second_lets_a_live_server_through(server: RpcServer) -> None:
    answers = []
    for _ in range(5):  # on a busy machine one of five connections comes within 0.9 s
        with RpcClient("127.0.0.1", server.port, timeout_secs=ANSWER_SECS, retries=0,
                       connect_timeout_secs=0.9) as client, contextlib.suppress(UnreachableError):
            answers.append(client.call("echo", value=1))
        if answers:
            break
    assert answers == [1]


@pytest.mark.parametrize("client_uses_curve", [True, False])
def test_a_refused_handshake_says_which_side_lacks_the_key(client_uses_curve: bool) -> None:
    _, secret = zmq.curve_keypair()
    # a CURVE client pinning another server's key, or a plain client at a CURVE server
    pinned = zmq.curve_keypair()[0] if client_uses_curve else None
    with RpcServer(handler=Echo(), curve_secret_key=secret, name="t").start() as srv, \
            RpcClient("127.0.0.1", srv.port, timeout_secs=ANSWER_SECS, retries=2, service="Nimbus",
                      curve_server_key=pinned) as client, pytest.raises(AuthorizationError) as info:
        client.call("echo", value=1)
    where = f"Nimbus at 127.0.0.1:{srv.port}"
    if client_uses_curve:
        assert str(info.value) == (f"the CURVE handshake with {where} failed: its key does not match "
                                   "nimbus.rpc.curve.public.key (or it does not use CURVE)")
    else:
        assert str(info.value) == (f"the handshake with {where} failed: it requires CURVE; set "
                                   "nimbus.rpc.curve.public.key to its public key")


def test_a_connect_timeout_lets_calls_to_a_live_server_through_and_keeps_the_connection(
        server: RpcServer) -> None:
    # a second call on the connected socket does not wait for another connection (none comes)
    with RpcClient("127.0.0.1", server.port, timeout_secs=ANSWER_SECS, retries=0,
                   connect_timeout_secs=10.0) as client:
        assert client.call("echo", value=1) == 1
        assert client.call("echo", value=2) == 2
        assert client.ping()


def test_an_attempt_shorter_than_a_second_still_waits_for_its_answer(server: RpcServer) -> None:
    # many short attempts: on a busy machine one of them gets the answer (all carry one request id)
    with RpcClient("127.0.0.1", server.port, timeout_secs=0.9, retries=20) as client:
        assert client.call("echo", value="late") == "late"


class ScriptedServer:
    """A raw ROUTER that answers each request with the frames ``script(request_id)`` gives."""

    def __init__(self, ctx: zmq.Context[zmq.Socket[bytes]], script: Any) -> None:
        self._router = ctx.socket(zmq.ROUTER)
        self._router.linger = 0
        self.port = self._router.bind_to_random_port("tcp://127.0.0.1")
        self._script = script
        self.requests: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            if not self._router.poll(50):
                continue
            frames = self._router.recv_multipart()
            request = msgpack.unpackb(frames[-1])
            self.requests.append(request)
            for reply in self._script(request["id"]):
                self._router.send_multipart([frames[0], *reply])

    def close(self) -> None:
        self._stop.set()
        self._thread.join(ANSWER_SECS)
        self._router.close(linger=0)



def scripted(ctx: zmq.Context[zmq.Socket[bytes]], script: Any) -> ScriptedServer:
    return ScriptedServer(ctx, script)


def ok(request_id: str | None, result: Any) -> list[bytes]:
    return [b"", encode_response(Response.success(request_id, result))]


@pytest.mark.parametrize(("reply", "count"), [
    ([b"", b"x", b"y"], 3),
    ([b"not-empty", b"x"], 2),
    ([b"x"], 1),
])
def test_a_response_in_the_wrong_frames_is_an_error_naming_the_server(
        zctx: zmq.Context[zmq.Socket[bytes]], reply: list[bytes], count: int) -> None:
    srv = scripted(zctx, lambda _id: [reply])
    try:
        with RpcClient("127.0.0.1", srv.port, timeout_secs=ANSWER_SECS, retries=0,
                       service="Nimbus") as client, pytest.raises(RpcError) as info:
            client.call("echo", value=1)
        assert type(info.value) is RpcError
        assert str(info.value) == (f"malformed response from Nimbus at 127.0.0.1:{srv.port}: expected an "
                                   f"empty delimiter and one payload frame, got {count} frames")
    finally:
        srv.close()


def test_a_late_answer_to_another_request_is_skipped_for_the_callers_own(
        zctx: zmq.Context[zmq.Socket[bytes]]) -> None:
    srv = scripted(zctx, lambda rid: [ok("an-earlier-request", "stale"),
                                      [b"", encode_response(Response.failure(
                                          "another-request", InvalidRequestError("stale refusal")))],
                                      [b"", encode_response(Response.success(None, "no id"))],
                                      ok(rid, "fresh")])
    try:
        with RpcClient("127.0.0.1", srv.port, timeout_secs=ANSWER_SECS, retries=0) as client:
            assert client.call("echo", value=1) == "fresh"
    finally:
        srv.close()


def test_an_error_without_an_id_is_the_callers_own(zctx: zmq.Context[zmq.Socket[bytes]]) -> None:
    srv = scripted(zctx, lambda rid: [[b"", encode_response(Response.failure(
        None, InvalidRequestError("malformed request: not msgpack")))]])
    try:
        with RpcClient("127.0.0.1", srv.port, timeout_secs=ANSWER_SECS, retries=0) as client, \
                pytest.raises(InvalidRequestError, match="^malformed request: not msgpack$"):
            client.call("echo", value=1)
    finally:
        srv.close()


def test_a_request_carries_its_method_arguments_and_token(zctx: zmq.Context[zmq.Socket[bytes]]) -> None:
    srv = scripted(zctx, lambda rid: [ok(rid, True)])
    try:
        with RpcClient("127.0.0.1", srv.port, timeout_secs=ANSWER_SECS, retries=0,
                       auth_token="s3cret") as client:
            assert client.call("submit", name="wc", n=2) is True
            assert client.request("kill", None) is True
        first, second = srv.requests
        assert (first["method"], first["args"], first["auth"]) == ("submit", {"name": "wc", "n": 2}, "s3cret")
        assert (second["method"], second["args"]) == ("kill", {})
        assert first["id"] != second["id"]
    finally:
        srv.close()


def test_every_attempt_of_a_call_carries_the_same_id_and_a_silent_server_is_a_timeout(
        zctx: zmq.Context[zmq.Socket[bytes]]) -> None:
    srv = scripted(zctx, lambda rid: [])
    try:
        with RpcClient("127.0.0.1", srv.port, timeout_secs=0.3, retries=5, service="Nimbus") as client, \
                pytest.raises(RpcTimeoutError) as info:
            client.request("echo", {"value": 1}, timeout_secs=1.5, retries=2)
        assert str(info.value) == (f"Nimbus at 127.0.0.1:{srv.port} did not answer within 1.5 s "
                                   "(call 'echo', 3 attempts): connected, but no reply arrived")
        assert type(info.value) is RpcTimeoutError
        ids = [r["id"] for r in srv.requests]
        assert len(ids) == 3 and len(set(ids)) == 1
    finally:
        srv.close()


def test_one_attempt_is_named_without_a_count(zctx: zmq.Context[zmq.Socket[bytes]]) -> None:
    srv = scripted(zctx, lambda rid: [])
    try:
        with RpcClient("127.0.0.1", srv.port, timeout_secs=0.3, retries=0, service="Nimbus") as client, \
                pytest.raises(RpcTimeoutError) as info:
            client.call("echo", value=1)
        assert str(info.value) == (f"Nimbus at 127.0.0.1:{srv.port} did not answer within 0.3 s "
                                   "(call 'echo'): connected, but no reply arrived")
    finally:
        srv.close()
