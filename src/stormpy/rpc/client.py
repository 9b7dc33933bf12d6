"""RpcClient: call an :class:`~stormpy.rpc.server.RpcServer` with timeouts that never hang.

Contract:

* ``call(method, **args)`` returns the method's result or raises the server's typed
  :class:`~stormpy.rpc.errors.RpcError` subclass.
* Each attempt waits at most ``timeout_secs``; after a timeout the socket is thrown away (LINGER 0)
  and a fresh one is connected, so a restarted server is found again. A call makes at most
  ``1 + retries`` attempts, all with the same request id, so a server that already executed the
  request answers the retry from its cache instead of executing it twice.
* When every attempt times out the call raises :class:`~stormpy.rpc.errors.UnreachableError` if no
  TCP connection to the server was ever made during the call, else
  :class:`~stormpy.rpc.errors.RpcTimeoutError`; both name ``host:port`` and the wait, both are
  builtin ``TimeoutError`` s too.
* ``curve_server_key``: the link is CurveZMQ-encrypted towards the holder of that public key
  (:mod:`~stormpy.rpc.curve`); a refused handshake (wrong key, CURVE on one side only) ends the
  attempt at once and the call with AuthorizationError naming the server, not a timeout.
* With ``connect_timeout_secs`` set, an attempt on a fresh socket first waits at most that long for
  the TCP connection, and a refused or timed-out connection raises
  :class:`~stormpy.rpc.errors.UnreachableError` at once (nothing was sent, so no retry is made):
  a dead server costs the connect timeout, not the full RPC timeout. Without it (the default) the
  request is queued until the server appears or the attempt times out.
* One client may be shared by threads; calls are serialised by a lock (use one client per thread
  for parallel calls).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import zmq
from zmq.utils.monitor import recv_monitor_message

from stormpy.rpc.codec import Request, decode_response, encode_request
from stormpy.rpc.curve import HANDSHAKE_EVENTS, connect_as_client, handshake_failure, handshake_refused
from stormpy.rpc.errors import AuthorizationError, RpcError, RpcTimeoutError, UnreachableError
from stormpy.rpc.server import PING_METHOD

__all__ = ["RpcClient"]

#: How often a waiting attempt looks for a refused handshake (see ``curve_server_key``).
_HANDSHAKE_CHECK_SECS = 0.1


class RpcClient:
    """A connection to one RPC server at ``host:port``; ``service`` names it in error messages."""

    def __init__(self, host: str, port: int, *, timeout_secs: float = 10.0, retries: int = 1,
                 auth_token: str | None = None, service: str = "RPC server",
                 context: zmq.Context[zmq.Socket[bytes]] | None = None,
                 connect_timeout_secs: float | None = None,
                 curve_server_key: bytes | None = None) -> None:
        if timeout_secs <= 0:
            raise ValueError("timeout_secs must be positive")
        if connect_timeout_secs is not None and connect_timeout_secs <= 0:
            raise ValueError("connect_timeout_secs must be positive (or None)")
        if retries < 0:
            raise ValueError("retries must be >= 0")
        self.host = host
        self.port = port
        self.timeout_secs = timeout_secs
        self.retries = retries
        self.service = service
        self.connect_timeout_secs = connect_timeout_secs
        self._auth = auth_token
        self._curve = curve_server_key
        self._handshake_failed = False
        self._ctx = context or zmq.Context.instance()
        self._socket: zmq.Socket[bytes] | None = None
        self._monitor: zmq.Socket[bytes] | None = None
        self._connected = False
        self._lock = threading.Lock()
        self._closed = False

    @property
    def address(self) -> str:
        """``host:port`` of the server."""
        return f"{self.host}:{self.port}"

    # -- public calls --------------------------------------------------------------------------
    def call(self, method: str, /, **args: Any) -> Any:
        """Call ``method(**args)`` on the server with this client's timeout and retries."""
        return self.request(method, args)

    def request(self, method: str, args: Mapping[str, Any] | None = None, *,
                timeout_secs: float | None = None, retries: int | None = None) -> Any:
        """Like :meth:`call`, with the arguments as a mapping and per-call timeout/retries overrides."""
        timeout = self.timeout_secs if timeout_secs is None else timeout_secs
        attempts = 1 + (self.retries if retries is None else retries)
        request = Request(id=uuid.uuid4().hex, method=method, args=dict(args or {}), auth=self._auth)
        payload = encode_request(request)
        with self._lock:
            if self._closed:
                raise RpcError(f"RpcClient for {self.service} at {self.address} is closed")
            connected_once = False
            self._handshake_failed = False
            for _ in range(attempts):
                if not self._wait_connected():
                    self._reset()
                    raise UnreachableError(
                        f"{self.service} at {self.address}: no connection could be made within "
                        f"{self.connect_timeout_secs:g} s (call {method!r}); is it running?")
                found, value = self._attempt(request.id, payload, timeout)
                if found:
                    return value.unwrap()
                connected_once = connected_once or self._connected
                self._reset()
        if self._handshake_failed:
            raise AuthorizationError(handshake_failure(self.service, self.address, self._curve is not None))
        what = f"{self.service} at {self.address} did not answer within {timeout:g} s"
        detail = f"call {method!r}" + (f", {attempts} attempts" if attempts > 1 else "")
        if not connected_once:
            raise UnreachableError(f"{what} ({detail}): no connection could be made; is it running?")
        raise RpcTimeoutError(f"{what} ({detail}): connected, but no reply arrived")

    def ping(self, timeout_secs: float | None = None) -> bool:
        """True when the server answers the built-in ping within the timeout (one attempt)."""
        try:
            return bool(self.request(PING_METHOD, timeout_secs=timeout_secs, retries=0))
        except RpcTimeoutError:
            return False

    # -- lifecycle -----------------------------------------------------------------------------
    def close(self) -> None:
        """Close the socket; idempotent. Further calls raise RpcError."""
        with self._lock:
            self._closed = True
            self._reset()

    def __enter__(self) -> RpcClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __del__(self) -> None:
        # Best effort for clients that were never closed; never raises.
        try:
            if self._socket is not None:
                self._reset()
        except Exception:
            pass

    # -- internals -----------------------------------------------------------------------------
    def _ensure_socket(self) -> zmq.Socket[bytes]:
        if self._socket is None:
            sock = self._ctx.socket(zmq.DEALER)
            sock.linger = 0
            sock.setsockopt(zmq.RECONNECT_IVL, 100)
            sock.setsockopt(zmq.RECONNECT_IVL_MAX, 1000)
            events = zmq.EVENT_CONNECTED | HANDSHAKE_EVENTS
            if self.connect_timeout_secs is not None:
                events |= zmq.EVENT_CONNECT_RETRIED
            self._monitor = sock.get_monitor_socket(events)
            self._monitor.linger = 0
            if self._curve is not None:
                connect_as_client(sock, self._curve)
            sock.connect(f"tcp://{self.host}:{self.port}")
            self._socket = sock
            self._connected = False
        return self._socket

    def _reset(self) -> None:
        if self._socket is not None:
            try:
                self._socket.disable_monitor()
            except zmq.ZMQError:
                pass
            self._socket.close(linger=0)
            self._socket = None
        if self._monitor is not None:
            self._monitor.close(linger=0)
            self._monitor = None
        self._connected = False

    def _wait_connected(self) -> bool:
        """With a connect timeout: True once the socket is connected, False when the connection
        was refused or did not come within the timeout. Always True without one."""
        if self.connect_timeout_secs is None:
            return True
        self._ensure_socket()
        monitor = self._monitor
        if self._connected or monitor is None:
            return True
        deadline = time.monotonic() + self.connect_timeout_secs
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not monitor.poll(max(1, int(remaining * 1000)), zmq.POLLIN):
                return False
            event = recv_monitor_message(monitor)["event"]
            if event == zmq.EVENT_CONNECTED:
                self._connected = True
                return True
            if event == zmq.EVENT_CONNECT_RETRIED:
                return False

    def _note_connection_events(self) -> None:
        monitor = self._monitor
        if monitor is None:
            return
        while monitor.poll(0, zmq.POLLIN):
            event = recv_monitor_message(monitor)
            refused = handshake_refused(event, self._curve is not None)
            if refused is not None:
                self._handshake_failed = refused  # the last handshake's outcome counts
            elif event["event"] == zmq.EVENT_CONNECTED:
                self._connected = True

    def _attempt(self, request_id: str, payload: bytes, timeout: float) -> tuple[bool, Any]:
        """Send once and wait up to ``timeout``; (True, Response) on an answer, else (False, None)."""
        sock = self._ensure_socket()
        deadline = time.monotonic() + timeout
        try:
            sock.send_multipart([b"", payload], flags=zmq.NOBLOCK)
        except zmq.Again:
            # No pipe to the server yet; waiting out the timeout is the honest answer.
            time.sleep(max(0.0, min(timeout, deadline - time.monotonic())))
            self._note_connection_events()
            return False, None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._note_connection_events()
                return False, None
            if not sock.poll(max(1, int(min(remaining, _HANDSHAKE_CHECK_SECS) * 1000)), zmq.POLLIN):
                self._note_connection_events()
                if self._handshake_failed:
                    return False, None  # refused for want of the right key: no answer will come
                continue
            frames = sock.recv_multipart()
            self._connected = True
            if len(frames) != 2 or frames[0] != b"":
                raise RpcError(f"malformed response from {self.service} at {self.address}: expected an "
                               f"empty delimiter and one payload frame, got {len(frames)} frames")
            response = decode_response(frames[1])
            if response.id is None and not response.ok:
                # The server could not read our request at all; that error is ours.
                return True, response
            if response.id == request_id:
                return True, response
            # A late answer to an earlier, timed-out request on this socket: ignore it.
