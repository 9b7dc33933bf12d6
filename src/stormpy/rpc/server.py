"""RpcServer: serve a handler object's :func:`~stormpy.rpc.methods.rpc_method` methods over ZeroMQ.

Contract:

* One ROUTER socket bound on ``host:port`` (``port=0`` picks a free port; read :attr:`RpcServer.port`
  after :meth:`RpcServer.start`). Any number of REQ or DEALER clients may talk to it at once.
* Requests are read by one I/O thread and executed by ``max_workers`` handler threads (default 1:
  handler calls never overlap, so the handler needs no locking; raise it only for thread-safe
  handlers). A slow call does not stop the server from reading, refusing or de-duplicating requests.
* A handler raising :class:`~stormpy.rpc.errors.RpcError` sends that error back typed. Any other
  exception is logged with its traceback and sent back as
  :class:`~stormpy.rpc.errors.InternalError` carrying its message. Malformed frames, unknown methods
  and bad arguments are answered with InvalidRequestError. The server keeps serving in every case.
* A request id seen again (a client retry) is not executed twice: the server answers it from a
  small cache of recent responses, or, while the first attempt still runs, answers every attempt
  when it finishes (:mod:`~stormpy.rpc.retries`). This holds within one server process only.
* ``auth_token``: when set, every request must carry the same shared secret (compared in constant
  time) or it is refused with AuthorizationError. The token is encrypted on the wire only with
  ``curve_secret_key`` (below); without it, it keeps stray or misconfigured clients out, not an
  attacker on the network.
* ``curve_secret_key`` (Z85): every link is CurveZMQ-encrypted with this key pair (the token
  then travels encrypted); clients must pin its public key (:mod:`~stormpy.rpc.curve`). A client
  failing the handshake never reaches the handler; the server keeps serving.
* The built-in method ``__ping__`` answers ``True`` (subject to auth) without touching the handler.
* Refusals are logged with request ids and messages cut to
  :data:`~stormpy.rpc.refusals.LOG_FIELD_LIMIT` characters (they are chosen by the peer) and at
  most 20 per 10 seconds; the rest are counted and reported in one line when logging resumes
  (:mod:`~stormpy.rpc.refusals`).
* :meth:`RpcServer.call_stats` counts, since start, the calls each method executed, those that
  failed (typed or internal errors) and the refused requests (malformed, unauthorised, unknown
  method or bad arguments); answers from the retry cache and pings are not counted.
* While a handler method runs, :func:`current_client` is the caller's IP address (ZeroMQ's
  ``Peer-Address``; ``""`` when unknown), e.g. to apply per-client limits.
"""

from __future__ import annotations

import contextvars
import hmac
import itertools
import logging
import queue
import threading
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

import zmq

from stormpy.rpc import curve as rpc_curve
from stormpy.rpc.codec import Request, Response, decode_request, encode_response, peek_request_id
from stormpy.rpc.errors import AuthorizationError, InternalError, InvalidRequestError, RpcError
from stormpy.rpc.methods import MethodTable
from stormpy.rpc.refusals import RefusalLog, shorten
from stormpy.rpc.retries import RetryAnswers

__all__ = ["PING_METHOD", "RpcServer", "current_client"]

log = logging.getLogger(__name__)

PING_METHOD = "__ping__"
_STOP = b"stop"
_instances = itertools.count(1)
_client: contextvars.ContextVar[str] = contextvars.ContextVar("stormpy_rpc_client", default="")


def current_client() -> str:
    """The IP address of the client whose request the calling handler thread is executing."""
    return _client.get()


class RpcServer:
    """Serve ``handler``'s exposed methods (plus ``methods``) on ``host:port`` from background threads.

    Use ``server = RpcServer(host, port, handler).start()`` … ``server.close()``, or a ``with`` block.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, handler: object | None = None, *,
                 methods: Mapping[str, Callable[..., Any]] | None = None,
                 auth_token: str | None = None,
                 curve_secret_key: bytes | None = None,
                 max_workers: int = 1,
                 max_message_bytes: int = 64 * 1024 * 1024,
                 response_cache_entries: int = 1024,
                 response_cache_bytes: int = 32 * 1024 * 1024,
                 name: str = "rpc") -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self.host = host
        self._requested_port = port
        self._port: int | None = None
        self._table = MethodTable(handler, methods)
        self._auth = auth_token.encode() if auth_token else None
        self._curve = curve_secret_key
        self._max_workers = max_workers
        self._max_message_bytes = max_message_bytes
        self._retries = RetryAnswers(response_cache_entries, response_cache_bytes)
        self.name = name
        self._refusals = RefusalLog(name)
        self._ctx: zmq.Context[zmq.Socket[bytes]] | None = None
        self._inproc = f"inproc://stormpy-rpc-{name}-{next(_instances)}"
        self._jobs: queue.Queue[tuple[Request, Callable[[], Any], str] | None] = queue.Queue()
        self._io_thread: threading.Thread | None = None
        self._workers: list[threading.Thread] = []
        self._ready = threading.Event()
        self._start_error: BaseException | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._peer = ""
        self._stats_lock = threading.Lock()
        self._calls: dict[str, int] = {}
        self._call_errors: dict[str, int] = {}
        self._refused = 0

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def max_message_bytes(self) -> int:
        """The largest request the server reads (ZeroMQ drops a longer message unread)."""
        return self._max_message_bytes

    @property
    def port(self) -> int:
        """The bound TCP port (valid after :meth:`start`)."""
        if self._port is None:
            raise RuntimeError("RpcServer.port is known only after start()")
        return self._port

    @property
    def address(self) -> str:
        """``host:port`` of the bound socket (valid after :meth:`start`)."""
        return f"{self.host}:{self.port}"

    def start(self, timeout_secs: float = 10.0) -> RpcServer:
        """Bind and start serving; return self. Raises RpcError when the port cannot be bound."""
        with self._lock:
            if self._io_thread is not None or self._closed:
                raise RuntimeError("an RpcServer can be started only once")
            self._ctx = zmq.Context()
            self._io_thread = threading.Thread(target=self._io_loop, name=f"{self.name}-rpc-io", daemon=True)
            self._io_thread.start()
        if not self._ready.wait(timeout_secs):
            self.close()
            raise RpcError(f"RPC server {self.name} did not start within {timeout_secs} s")
        if self._start_error is not None:
            error = self._start_error
            self.close()
            raise RpcError(f"RPC server {self.name} cannot listen on {self.host}:{self._requested_port}: "
                           f"{error}") from error
        return self

    def close(self, timeout_secs: float = 5.0) -> None:
        """Stop serving and release every socket and thread; idempotent.

        Calls still running in handler threads are given ``timeout_secs`` to finish; their answers
        are dropped.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
        ctx, io_thread = self._ctx, self._io_thread
        if ctx is None or io_thread is None:
            return
        if io_thread.is_alive():
            waker = ctx.socket(zmq.PUSH)
            waker.linger = 1000
            try:
                waker.connect(self._inproc)
                waker.send(_STOP)
            finally:
                waker.close()
            io_thread.join(timeout_secs)
        for _ in self._workers:
            self._jobs.put(None)
        stuck = []
        for worker in self._workers:
            worker.join(timeout_secs)
            if worker.is_alive():
                stuck.append(worker.name)
        if stuck or io_thread.is_alive():
            log.warning("RPC server %s: threads still busy at close (%s); leaving its context to the GC",
                        self.name, ", ".join(stuck) or io_thread.name)
            return
        ctx.term()

    def __enter__(self) -> RpcServer:
        if self._io_thread is None:
            self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- I/O thread ----------------------------------------------------------------------------
    def _io_loop(self) -> None:
        assert self._ctx is not None
        router = self._ctx.socket(zmq.ROUTER)
        replies = self._ctx.socket(zmq.PULL)
        try:
            router.linger = 0
            replies.linger = 0
            router.setsockopt(zmq.MAXMSGSIZE, self._max_message_bytes)
            if self._curve is not None:
                rpc_curve.serve(router, self._curve)
            try:
                if self._requested_port:
                    router.bind(f"tcp://{self.host}:{self._requested_port}")
                else:
                    router.bind(f"tcp://{self.host}:*")
                endpoint = router.getsockopt(zmq.LAST_ENDPOINT)
                self._port = int(bytes(endpoint).decode().rsplit(":", 1)[1])
                replies.bind(self._inproc)
            except zmq.ZMQError as exc:
                self._start_error = exc
                return
            for i in range(self._max_workers):
                worker = threading.Thread(target=self._worker_loop, name=f"{self.name}-rpc-worker-{i}",
                                          daemon=True)
                worker.start()
                self._workers.append(worker)
            self._ready.set()
            log.info("RPC server %s listening on %s:%s", self.name, self.host, self._port)
            self._serve(router, replies)
        except Exception:
            log.exception("RPC server %s: I/O loop crashed", self.name)
        finally:
            self._ready.set()
            router.close()
            replies.close()

    def _serve(self, router: zmq.Socket[bytes], replies: zmq.Socket[bytes]) -> None:
        poller = zmq.Poller()
        poller.register(router, zmq.POLLIN)
        poller.register(replies, zmq.POLLIN)
        while True:
            try:
                events = dict(poller.poll())
            except zmq.ZMQError as exc:
                if exc.errno == zmq.ETERM:
                    return
                log.warning("RPC server %s: poll failed: %s", self.name, exc)
                continue
            if replies in events:
                frames = replies.recv_multipart()
                if len(frames) == 1 and frames[0] == _STOP:
                    return
                self._deliver(router, frames[0].decode(), frames[1])
            if router in events:
                raw = router.recv_multipart(copy=False)
                frames = [bytes(f.buffer) for f in raw]
                try:
                    self._peer = _peer_address(raw[-1])
                    self._accept(router, frames)
                except Exception:
                    log.exception("RPC server %s: failed to handle a request", self.name)

    def _send(self, router: zmq.Socket[bytes], envelope: list[bytes], data: bytes) -> None:
        try:
            router.send_multipart([*envelope, data], flags=zmq.NOBLOCK)
        except zmq.Again:
            log.warning("RPC server %s: client queue full, dropped a response", self.name)

    def _refuse(self, router: zmq.Socket[bytes], envelope: list[bytes], request_id: str | None,
                error: RpcError) -> None:
        self._refusals.refused(request_id, error.message)
        with self._stats_lock:
            self._refused += 1
        self._send(router, envelope, encode_response(Response.failure(request_id, error)))

    def _accept(self, router: zmq.Socket[bytes], frames: list[bytes]) -> None:
        # REQ clients (and our DEALER client) send an empty delimiter frame before the payload.
        split = 2 if len(frames) >= 3 and frames[1] == b"" else 1
        envelope, body = frames[:split], frames[split:]
        if len(body) != 1:
            self._refuse(router, envelope, None, InvalidRequestError(
                f"malformed request: expected exactly one payload frame, got {len(body)}"))
            return
        data = body[0]
        try:
            request = decode_request(data)
        except InvalidRequestError as exc:
            self._refuse(router, envelope, peek_request_id(data), exc)
            return
        if self._auth is not None and not hmac.compare_digest(
                (request.auth or "").encode(), self._auth):
            problem = ("it sent none" if not request.auth
                       else "the token it sent does not match the server's")
            self._refuse(router, envelope, request.id, AuthorizationError(
                f"RPC server {self.name} refused {request.method!r}: the request carries no valid "
                f"auth token ({problem})"))
            return
        cached = self._retries.cached(request.id)
        if cached is not None:
            self._send(router, envelope, cached)
            return
        if self._retries.join(request.id, envelope):
            return
        if request.method == PING_METHOD:
            self._send(router, envelope, encode_response(Response.success(request.id, True)))
            return
        try:
            call = self._table.bind(request.method, request.args)
        except InvalidRequestError as exc:
            self._refuse(router, envelope, request.id, exc)
            return
        self._retries.started(request.id, envelope)
        self._jobs.put((request, call, self._peer))

    def _deliver(self, router: zmq.Socket[bytes], request_id: str, data: bytes) -> None:
        for envelope in self._retries.finished(request_id, data):
            self._send(router, envelope, data)

    # -- handler threads -----------------------------------------------------------------------
    def _worker_loop(self) -> None:
        assert self._ctx is not None
        push = self._ctx.socket(zmq.PUSH)
        push.linger = 0
        push.sndtimeo = 200  # the I/O thread may be gone during close(); never block forever
        try:
            push.connect(self._inproc)
            while True:
                job = self._jobs.get()
                if job is None:
                    return
                request, call, peer = job
                token = _client.set(peer)
                try:
                    reply = [request.id.encode(), self._execute(request, call)]
                finally:
                    _client.reset(token)
                while True:
                    try:
                        push.send_multipart(reply)
                        break
                    except zmq.Again:
                        if self._closed:
                            break  # closing: the answer is dropped, as documented
        except zmq.ZMQError as exc:
            if exc.errno != zmq.ETERM:
                log.exception("RPC server %s: handler thread failed", self.name)
        finally:
            push.close()

    def call_stats(self) -> dict[str, Any]:
        """``{"calls": {method: n}, "errors": {method: n}, "refused": n}`` since start."""
        with self._stats_lock:
            return {"calls": dict(self._calls), "errors": dict(self._call_errors),
                    "refused": self._refused}

    def _count(self, method: str, failed: bool) -> None:
        with self._stats_lock:
            self._calls[method] = self._calls.get(method, 0) + 1
            if failed:
                self._call_errors[method] = self._call_errors.get(method, 0) + 1

    def _execute(self, request: Request, call: Callable[[], Any]) -> bytes:
        try:
            response = Response.success(request.id, call())
            self._count(request.method, False)
        except RpcError as exc:
            self._count(request.method, True)
            log.debug("RPC %s(%s) raised %s: %s", request.method, shorten(request.id), exc.wire_name,
                      shorten(exc.message, 300))
            response = Response.failure(request.id, exc)
        except Exception as exc:
            self._count(request.method, True)
            log.exception("RPC method %s failed (request %s)", request.method, shorten(request.id))
            response = Response.failure(request.id, InternalError(
                f"{request.method} failed: {type(exc).__name__}: {exc}"))
        try:
            return encode_response(response)
        except RpcError as exc:
            log.error("RPC method %s returned a result that cannot be sent: %s", request.method, exc)
            return encode_response(Response.failure(request.id, InternalError(
                f"{request.method} returned a result that is not msgpack-serialisable: {exc.message}")))


def _peer_address(frame: zmq.Frame) -> str:
    """The sender's IP address as ZeroMQ reports it ('' when the transport has none)."""
    try:
        return str(frame.get("Peer-Address"))
    except (zmq.ZMQError, AttributeError, TypeError):
        return ""
