"""RpcServer as its owner and its peers see it: the ports it binds, its threads (named, daemon,
gone after close), starting once, closing cleanly or past a stuck call, handler calls that never
overlap by default, the answers and counts of calls that fail, the caller's address, and the
retry cache's default size."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import zmq
from rpc_kit import ANSWER_SECS, zctx_fixture  # noqa: F401 - a fixture

from stormpy.rpc import (
    NotFoundError,
    RpcClient,
    RpcError,
    RpcServer,
    current_client,
    rpc_method,
)
from stormpy.rpc.codec import Request, Response, decode_response, encode_request
from stormpy.testing import free_port, wait_for


class Handler:
    """Methods that answer, fail, hold (``gate``) and report the calls running at once."""

    def __init__(self) -> None:
        self.calls = 0
        self.running = 0
        self.most_at_once = 0
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.gate.set()
        self._lock = threading.Lock()

    @rpc_method
    def bump(self) -> int:
        self.calls += 1
        return self.calls

    @rpc_method
    def hold(self) -> str:
        with self._lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        self.entered.set()
        try:
            assert self.gate.wait(ANSWER_SECS)
        finally:
            with self._lock:
                self.running -= 1
        return "held"

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
    def whoami(self) -> str:
        return current_client()



@pytest.fixture
def handler() -> Handler:
    return Handler()


@pytest.fixture
def server(handler: Handler) -> Iterator[RpcServer]:
    with RpcServer(handler=handler, name="t").start() as srv:
        try:
            yield srv
        finally:
            handler.gate.set()


def dealer(ctx: zmq.Context[zmq.Socket[bytes]], srv: RpcServer) -> zmq.Socket[bytes]:
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(f"tcp://{srv.address}")
    return sock


def send(sock: zmq.Socket[bytes], request_id: str, method: str, auth: str | None = None,
         **args: Any) -> None:
    sock.send_multipart([b"", encode_request(Request(id=request_id, method=method, args=args, auth=auth))])


def answer(sock: zmq.Socket[bytes]) -> Response:
    """The next answer on ``sock``, which must come as an empty delimiter and one payload frame."""
    assert sock.poll(int(ANSWER_SECS * 1000)), "the RPC server did not answer"
    frames = sock.recv_multipart()
    assert len(frames) == 2 and frames[0] == b"", frames
    return decode_response(frames[1])


def threads_named(prefix: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(prefix)]


def test_servers_listen_on_free_loopback_ports_by_default(handler: Handler) -> None:
    with RpcServer(handler=handler).start() as first, RpcServer(handler=handler).start() as second:
        assert first.port != second.port and 0 not in (first.port, second.port)
        assert (first.host, first.address) == ("127.0.0.1", f"127.0.0.1:{first.port}")
        with RpcClient("127.0.0.1", second.port, timeout_secs=ANSWER_SECS) as client:
            assert client.call("bump") == 1


def test_the_port_is_known_only_after_start(handler: Handler) -> None:
    srv = RpcServer(handler=handler)
    with pytest.raises(RuntimeError, match=r"^RpcServer.port is known only after start\(\)$"):
        _ = srv.port
    srv.close()


def test_a_requested_port_is_bound_and_a_port_in_use_is_a_clear_error(handler: Handler) -> None:
    port = free_port()
    with RpcServer(port=port, handler=handler, name="t").start() as srv:
        assert srv.port == port
        taken = RpcServer(port=port, handler=handler, name="t2")
        with pytest.raises(RpcError, match=rf"^RPC server t2 cannot listen on 127\.0\.0\.1:{port}: "
                                           r"Address already in use") as info:
            taken.start()
        assert isinstance(info.value.__cause__, zmq.ZMQError)
    # closed: the port is free again
    with RpcServer(port=port, handler=handler).start() as again:
        assert again.port == port


def test_max_workers_must_be_at_least_one(handler: Handler) -> None:
    with pytest.raises(ValueError, match="^max_workers must be at least 1$"):
        RpcServer(handler=handler, max_workers=0)


@pytest.mark.parametrize("workers", [1, 2])
def test_handler_calls_overlap_only_with_more_than_one_worker(
        zctx: zmq.Context[zmq.Socket[bytes]], handler: Handler, workers: int) -> None:
    handler.gate.clear()
    kwargs = {} if workers == 1 else {"max_workers": workers}  # one worker is the default
    with RpcServer(handler=handler, name="t", **kwargs).start() as srv:  # type: ignore[arg-type]
        first, second = dealer(zctx, srv), dealer(zctx, srv)
        send(first, "h1", "hold")
        wait_for(handler.entered.is_set, ANSWER_SECS, "the first call to start")
        send(second, "h2", "hold")
        if workers == 1:
            assert not second.poll(500)  # queued behind the held call, not run beside it
        else:
            wait_for(lambda: handler.running == 2, ANSWER_SECS, "the second call to run beside the first")
        handler.gate.set()
        assert (answer(first).result, answer(second).result) == ("held", "held")
    assert handler.most_at_once == workers


def test_a_server_remembers_the_last_1024_answers_by_default(
        zctx: zmq.Context[zmq.Socket[bytes]], server: RpcServer, handler: Handler) -> None:
    sock = dealer(zctx, server)
    for i in range(1025):
        send(sock, f"r{i}", "bump")
    assert [answer(sock).result for _ in range(1025)] == list(range(1, 1026))
    send(sock, "r1", "bump")
    assert answer(sock).result == 2  # still cached: answered, not run again
    send(sock, "r0", "bump")
    assert answer(sock).result == 1026  # the oldest answer was evicted: run again


def test_a_server_is_named_rpc_by_default_in_what_it_says(
        zctx: zmq.Context[zmq.Socket[bytes]], handler: Handler) -> None:
    with RpcServer(handler=handler, auth_token="s3cret").start() as srv:
        sock = dealer(zctx, srv)
        send(sock, "a1", "bump")
        refused = answer(sock)
        assert [t.name for t in threads_named("rpc-rpc-")] == ["rpc-rpc-io", "rpc-rpc-worker-0"]
    assert refused.error_message == ("RPC server rpc refused 'bump': the request carries no valid auth "
                                     "token (it sent none)")


def test_a_curve_server_serves_a_client_that_pins_its_key(handler: Handler) -> None:
    public, secret = zmq.curve_keypair()
    with RpcServer(handler=handler, curve_secret_key=secret, auth_token="s3cret").start() as srv, \
            RpcClient("127.0.0.1", srv.port, timeout_secs=ANSWER_SECS, auth_token="s3cret",
                      curve_server_key=public) as client:
        assert client.call("bump") == 1


def test_a_server_starts_once_and_not_after_close(handler: Handler) -> None:
    srv = RpcServer(handler=handler).start()
    with pytest.raises(RuntimeError, match="^an RpcServer can be started only once$"):
        srv.start()
    srv.close()
    srv.close()
    with pytest.raises(RuntimeError, match="^an RpcServer can be started only once$"):
        srv.start()
    never_started = RpcServer(handler=handler)
    never_started.close()
    with pytest.raises(RuntimeError, match="^an RpcServer can be started only once$"):
        never_started.start()


def test_a_servers_threads_are_named_after_it_are_daemons_and_end_at_close(handler: Handler) -> None:
    with RpcServer(handler=handler, name="named", max_workers=2).start():
        threads = threads_named("named-rpc-")
        assert sorted(t.name for t in threads) == ["named-rpc-io", "named-rpc-worker-0", "named-rpc-worker-1"]
        assert all(t.daemon for t in threads)
    assert threads_named("named-rpc-") == []


def test_a_server_whose_io_thread_never_comes_up_fails_to_start(
        handler: Handler, monkeypatch: pytest.MonkeyPatch) -> None:
    srv = RpcServer(handler=handler, name="t")
    monkeypatch.setattr(srv, "_io_loop", lambda: None)  # an I/O thread that never gets ready
    with pytest.raises(RpcError, match=r"^RPC server t did not start within 0\.2 s$"):
        srv.start(timeout_secs=0.2)


def test_close_waits_for_a_running_call_only_so_long_and_says_which_thread_is_busy(
        zctx: zmq.Context[zmq.Socket[bytes]], handler: Handler, caplog: pytest.LogCaptureFixture) -> None:
    handler.gate.clear()
    srv = RpcServer(handler=handler, name="stuck").start()
    try:
        sock = dealer(zctx, srv)
        send(sock, "h1", "hold")
        wait_for(handler.entered.is_set, ANSWER_SECS, "the call to start")
        with caplog.at_level(logging.WARNING, logger="stormpy.rpc.server"):
            srv.close(timeout_secs=0.3)
        assert [r.getMessage() for r in caplog.records] == [
            "RPC server stuck: threads still busy at close (stuck-rpc-worker-0); leaving its context to "
            "the GC"]
    finally:
        handler.gate.set()
    wait_for(lambda: not threads_named("stuck-rpc-"), ANSWER_SECS, "the held call's thread to end")


def test_closing_a_server_logs_no_error(handler: Handler, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="stormpy.rpc.server"):
        with RpcServer(handler=handler, name="t").start() as srv, \
                RpcClient("127.0.0.1", srv.port, timeout_secs=ANSWER_SECS) as client:
            assert client.call("bump") == 1
        assert threads_named("t-rpc-") == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_request_whose_id_is_stop_is_served_like_any_other(
        zctx: zmq.Context[zmq.Socket[bytes]], server: RpcServer) -> None:
    sock = dealer(zctx, server)
    send(sock, "stop", "bump")
    assert (answer(sock).id, answer_of(sock, "after", "bump")) == ("stop", 2)


def answer_of(sock: zmq.Socket[bytes], request_id: str, method: str, **args: Any) -> Any:
    send(sock, request_id, method, **args)
    response = answer(sock)
    assert response.id == request_id
    return response.result


def test_a_handler_sees_the_callers_address_while_it_runs(
        zctx: zmq.Context[zmq.Socket[bytes]], server: RpcServer) -> None:
    sock = dealer(zctx, server)
    assert answer_of(sock, "w1", "whoami") == "127.0.0.1"
    sock.send_multipart([encode_request(Request(id="w2", method="whoami"))])  # no empty delimiter
    assert sock.poll(int(ANSWER_SECS * 1000))
    assert decode_response(sock.recv_multipart()[-1]).result == "127.0.0.1"
    assert current_client() == ""  # outside a call


def test_failing_calls_are_answered_under_their_id_with_what_failed_and_counted(
        zctx: zmq.Context[zmq.Socket[bytes]], server: RpcServer) -> None:
    sock = dealer(zctx, server)
    send(sock, "m1", "missing", name="wc")
    typed = answer(sock)
    send(sock, "c1", "crash")
    internal = answer(sock)
    send(sock, "u1", "unsendable")
    unsendable = answer(sock)
    assert (typed.id, typed.ok, typed.error_type, typed.error_message) == (
        "m1", False, "NotFoundError", "no topology named 'wc'")
    assert (internal.id, internal.ok, internal.error_type, internal.error_message) == (
        "c1", False, "InternalError", "crash failed: ValueError: disk on fire")
    assert (unsendable.id, unsendable.ok, unsendable.error_type) == ("u1", False, "InternalError")
    assert unsendable.error_message is not None
    assert unsendable.error_message.startswith(
        "unsendable returned a result that is not msgpack-serialisable: response is not msgpack-serialisable")
    assert answer_of(sock, "b1", "bump") == 1
    assert answer_of(sock, "b2", "bump") == 2
    send(sock, "c2", "crash")
    assert answer(sock).error_type == "InternalError"
    assert server.call_stats() == {"calls": {"missing": 1, "crash": 2, "unsendable": 1, "bump": 2},
                                   "errors": {"missing": 1, "crash": 2}, "refused": 0}


def test_methods_given_as_functions_are_served_beside_the_handlers(handler: Handler) -> None:
    def add(a: int, b: int) -> int:
        return a + b
    with RpcServer(handler=handler, methods={"add": add}, name="t").start() as srv, \
            RpcClient("127.0.0.1", srv.port, timeout_secs=ANSWER_SECS) as client:
        assert client.call("add", a=2, b=3) == 5
        assert client.call("bump") == 1
    with RpcServer(methods={"add": add}, name="t").start() as srv, \
            RpcClient("127.0.0.1", srv.port, timeout_secs=ANSWER_SECS) as client:
        assert client.call("add", a=4, b=3) == 7


def test_a_call_accepted_before_close_still_runs_and_close_ends_every_thread(
        zctx: zmq.Context[zmq.Socket[bytes]], handler: Handler, caplog: pytest.LogCaptureFixture) -> None:
    handler.gate.clear()
    srv = RpcServer(handler=handler, name="drain").start()
    closer = threading.Thread(target=srv.close, kwargs={"timeout_secs": ANSWER_SECS})
    try:
        sock = dealer(zctx, srv)
        send(sock, "h1", "hold")
        wait_for(handler.entered.is_set, ANSWER_SECS, "the held call to start")
        send(sock, "b1", "bump")  # queued behind the held call (one handler thread)
        send(sock, "p1", "__ping__")  # answered by the I/O thread once it has taken b1
        assert answer(sock).id == "p1"
        with caplog.at_level(logging.WARNING, logger="stormpy.rpc.server"):
            closer.start()
            wait_for(lambda: not threads_named("drain-rpc-io"), ANSWER_SECS, "the I/O thread to end")
            handler.gate.set()  # the held call ends with nobody left to take its answer
            closer.join(ANSWER_SECS * 3)
        assert not closer.is_alive()
        assert handler.calls == 1  # the queued call ran; its answer was dropped
        assert threads_named("drain-rpc-") == []
        assert [r.getMessage() for r in caplog.records] == []
    finally:
        handler.gate.set()
        if closer.is_alive():
            closer.join()
