"""The RPC server's answers as its peers see them: retried requests (stormpy.rpc.retries) are
answered from a bounded cache or join the running call; malformed, unknown and unauthorised
requests are refused under their own id and counted; the client tells a silent server from an
absent one, pings once, and reports a refused CURVE handshake at once."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import msgpack
import pytest
import zmq
from rpc_kit import ANSWER_SECS, zctx_fixture  # noqa: F401 - a fixture

from stormpy.rpc import AuthorizationError, RpcClient, RpcServer, RpcTimeoutError, rpc_method
from stormpy.rpc.codec import Request, Response, decode_response, encode_request, encode_response
from stormpy.rpc.retries import ResponseCache, RetryAnswers
from stormpy.testing import wait_for


def test_attempts_of_a_running_request_wait_for_its_answer_which_is_then_cached() -> None:
    answers = RetryAnswers(max_entries=4, max_bytes=1024)
    assert answers.cached("r1") is None
    assert not answers.join("r1", [b"client-a"])
    answers.started("r1", [b"client-a"])
    assert answers.join("r1", [b"client-b"])
    assert answers.finished("r1", b"answer") == [[b"client-a"], [b"client-b"]]
    assert answers.cached("r1") == b"answer"
    assert not answers.join("r1", [b"client-c"])  # no longer running: the cache answers it
    assert answers.finished("r2", b"late") == []  # nobody waiting: cached all the same
    assert answers.cached("r2") == b"late"


def test_the_cache_evicts_the_oldest_by_count_and_by_bytes() -> None:
    cache = ResponseCache(max_entries=2, max_bytes=10)
    cache.put("a", b"1234")
    cache.put("b", b"1234")
    cache.put("c", b"1234")
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (None, b"1234", b"1234")
    cache.put("d", b"123456789")
    assert (len(cache), cache.get("c"), cache.get("d")) == (1, None, b"123456789")
    cache.put("huge", b"x" * 11)  # bigger than the whole cache: not kept
    assert cache.get("huge") is None and cache.get("d") == b"123456789"


def test_putting_an_id_again_replaces_its_answer_without_counting_it_twice() -> None:
    cache = ResponseCache(max_entries=4, max_bytes=8)
    cache.put("a", b"1234")
    cache.put("a", b"5678")
    cache.put("b", b"1234")
    assert (cache.get("a"), cache.get("b")) == (b"5678", b"1234")


class Counter:
    """A handler whose ``bump`` can be held (``gate``) to keep a request running."""

    def __init__(self) -> None:
        self.calls = 0
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.gate.set()

    @rpc_method
    def bump(self) -> int:
        self.entered.set()
        assert self.gate.wait(ANSWER_SECS)
        self.calls += 1
        return self.calls

    @rpc_method
    def boom(self) -> None:
        raise ValueError("boom")



@pytest.fixture
def counter() -> Counter:
    return Counter()


@pytest.fixture
def server(counter: Counter) -> Iterator[RpcServer]:
    with RpcServer(handler=counter, name="t").start() as srv:
        try:
            yield srv
        finally:
            counter.gate.set()  # a held handler must not hold up close()


def dealer(ctx: zmq.Context[zmq.Socket[bytes]], srv: RpcServer) -> zmq.Socket[bytes]:
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(f"tcp://{srv.address}")
    return sock


def frame(request_id: str, method: str, auth: str | None = None) -> bytes:
    return encode_request(Request(id=request_id, method=method, auth=auth))


def answer(sock: zmq.Socket[bytes]) -> Response:
    """The next answer on ``sock``, which must come as an empty delimiter and one payload frame."""
    assert sock.poll(int(ANSWER_SECS * 1000)), "the RPC server did not answer"
    frames = sock.recv_multipart()
    assert len(frames) == 2 and frames[0] == b"", frames
    return decode_response(frames[1])


def test_a_finished_request_sent_again_is_answered_from_the_cache_not_run_again(
        zctx: zmq.Context[zmq.Socket[bytes]], server: RpcServer, counter: Counter) -> None:
    first, second = dealer(zctx, server), dealer(zctx, server)
    first.send_multipart([b"", frame("r1", "bump")])
    assert answer(first).result == 1
    first.send_multipart([b"", frame("r1", "bump")])
    second.send_multipart([b"", frame("r1", "bump")])
    assert (answer(first).result, answer(second).result) == (1, 1)
    assert counter.calls == 1


def test_a_request_sent_again_while_it_runs_gets_the_one_answer(
        zctx: zmq.Context[zmq.Socket[bytes]], server: RpcServer, counter: Counter) -> None:
    counter.gate.clear()
    first, second = dealer(zctx, server), dealer(zctx, server)
    first.send_multipart([b"", frame("r2", "bump")])
    wait_for(counter.entered.is_set, ANSWER_SECS, "the handler to start the first attempt")
    second.send_multipart([b"", frame("r2", "bump")])
    second.send_multipart([b"", frame("p2", "__ping__")])
    assert answer(second).id == "p2"  # the server has taken the retry in (one socket is in order)
    counter.gate.set()
    assert (answer(first).result, answer(second).result) == (1, 1)
    assert counter.calls == 1


def test_a_request_without_the_empty_delimiter_is_served_and_one_with_extra_frames_refused(
        zctx: zmq.Context[zmq.Socket[bytes]], server: RpcServer) -> None:
    sock = dealer(zctx, server)
    sock.send_multipart([frame("r3", "__ping__")])
    assert sock.poll(int(ANSWER_SECS * 1000))
    frames = sock.recv_multipart()
    assert len(frames) == 1
    assert decode_response(frames[0]).ok and decode_response(frames[0]).id == "r3"
    sock.send_multipart([b"x", b"y", frame("r4", "bump")])
    assert sock.poll(int(ANSWER_SECS * 1000))
    frames = sock.recv_multipart()
    assert len(frames) == 1  # answered to the sender itself, not to an envelope made of its frames
    refused = decode_response(frames[0])
    assert not refused.ok and refused.error_type == "InvalidRequestError"
    assert refused.error_message == "malformed request: expected exactly one payload frame, got 3"


def test_refusals_carry_the_request_id_are_logged_and_counted(
        zctx: zmq.Context[zmq.Socket[bytes]], server: RpcServer, caplog: pytest.LogCaptureFixture) -> None:
    sock = dealer(zctx, server)
    with caplog.at_level(logging.INFO, logger="stormpy.rpc.server"):
        sock.send_multipart([b"", msgpack.packb({"v": 99, "id": "r5", "method": "bump"})])
        malformed = answer(sock)
        sock.send_multipart([b"", frame("r6", "no_such_method")])
        unknown = answer(sock)
    assert (malformed.id, malformed.ok, malformed.error_type) == ("r5", False, "InvalidRequestError")
    assert (unknown.id, unknown.ok, unknown.error_type) == ("r6", False, "InvalidRequestError")
    logged = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("RPC server t: refused request r6: unknown method 'no_such_method'")
               for m in logged), logged
    sock.send_multipart([b"", frame("r7", "bump")])
    sock.send_multipart([b"", frame("r8", "boom")])
    assert (answer(sock).result, answer(sock).error_type) == (1, "InternalError")
    assert server.call_stats() == {"calls": {"bump": 1, "boom": 1}, "errors": {"boom": 1}, "refused": 2}


@pytest.mark.parametrize("token", ["s3cret", "XXXX"])
def test_a_server_with_a_token_refuses_requests_without_it_and_says_why(
        zctx: zmq.Context[zmq.Socket[bytes]], counter: Counter, token: str) -> None:
    with RpcServer(handler=counter, auth_token=token, name="t").start() as srv:
        sock = dealer(zctx, srv)
        sock.send_multipart([b"", frame("a1", "bump")])
        none = answer(sock)
        sock.send_multipart([b"", frame("a2", "bump", auth="wrong")])
        wrong = answer(sock)
        sock.send_multipart([b"", frame("a3", "bump", auth=token)])
        assert answer(sock).result == 1
    assert (none.id, none.error_type) == ("a1", "AuthorizationError")
    assert none.error_message == ("RPC server t refused 'bump': the request carries no valid auth "
                                  "token (it sent none)")
    assert (wrong.id, wrong.error_type) == ("a2", "AuthorizationError")
    assert wrong.error_message == ("RPC server t refused 'bump': the request carries no valid auth "
                                   "token (the token it sent does not match the server's)")
    assert counter.calls == 1


class SilentServer:
    """A ROUTER that takes requests and answers only an attempt it has seen before (a retry)."""

    def __init__(self, ctx: zmq.Context[zmq.Socket[bytes]]) -> None:
        self._router = ctx.socket(zmq.ROUTER)
        self._router.linger = 0
        self.port = self._router.bind_to_random_port("tcp://127.0.0.1")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        seen: set[str] = set()
        while not self._stop.is_set():
            if not self._router.poll(50):
                continue
            envelope = self._router.recv_multipart()
            request_id = msgpack.unpackb(envelope[-1])["id"]
            if request_id in seen:
                self._router.send_multipart(
                    [*envelope[:-1], encode_response(Response.success(request_id, True))])
            seen.add(request_id)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(ANSWER_SECS)
        self._router.close(linger=0)


@pytest.fixture
def silent(zctx: zmq.Context[zmq.Socket[bytes]]) -> Iterator[SilentServer]:
    srv = SilentServer(zctx)
    yield srv
    srv.close()


def test_a_ping_is_one_attempt_whatever_the_clients_retries(silent: SilentServer) -> None:
    with RpcClient("127.0.0.1", silent.port, timeout_secs=ANSWER_SECS, retries=2) as client:
        assert client.ping(timeout_secs=1.0) is False  # only a retry would have been answered


def test_a_server_that_takes_the_connection_but_never_answers_is_a_timeout_not_unreachable(
        silent: SilentServer) -> None:
    with RpcClient("127.0.0.1", silent.port, timeout_secs=3.0, retries=0, service="Nimbus") as client, \
            pytest.raises(RpcTimeoutError, match="connected, but no reply arrived") as info:
        client.call("bump")
    assert type(info.value) is RpcTimeoutError  # not its UnreachableError subclass


def test_a_curve_client_with_the_wrong_server_key_is_refused_at_once_not_timed_out() -> None:
    _, secret = zmq.curve_keypair()
    other_public, _ = zmq.curve_keypair()
    with RpcServer(handler=Counter(), curve_secret_key=secret, name="t").start() as srv, \
            RpcClient("127.0.0.1", srv.port, timeout_secs=ANSWER_SECS, retries=0, service="Nimbus",
                      curve_server_key=other_public) as client, \
            pytest.raises(AuthorizationError, match="the CURVE handshake with Nimbus at .* failed"):
        client.call("bump")


def test_an_answer_of_exactly_the_cache_size_is_kept() -> None:
    cache = ResponseCache(max_entries=4, max_bytes=4)
    cache.put("a", b"1234")
    assert cache.get("a") == b"1234"
