"""The ZeroMQ transport between cluster workers.

Contract (on top of :class:`~stormpy.messaging.transport.Transport`):

* One PULL socket bound on ``tcp://<host>:<port>`` receives every frame sent to this worker;
  one PUSH socket per peer connects to the peer's ``"host:port"`` address. ZeroMQ reconnects by
  itself, so a peer restarted on the same address is found again without any call here.
* Both directions are bounded by a high-water mark of ``topology.transfer.buffer.size`` frames
  (default :data:`DEFAULT_TRANSFER_BUFFER_SIZE`). ``send`` never blocks and never drops: when the
  peer's queue is at the mark it returns False and the caller keeps the frame. Frames queued for a
  peer that is down wait in its queue until it comes back (up to the mark).
* ``send`` to a peer key not in the current peer map (its worker was moved away) discards the
  frame and counts it in :attr:`ZmqTransport.dropped_frames`: there is nowhere to deliver it, and
  tracked tuples in it are replayed by their spout's message timeout.
* ``send``/``receive``/``wait``/``set_peers``/``close`` belong to one thread (the executor loop);
  ``wake`` may be called from any thread, before or after ``close``.
* ``close`` discards unsent frames (LINGER 0) and releases every socket and descriptor.
* ``curve`` (the topology's :class:`~stormpy.messaging.curve.CurveKeyPair`, see
  :mod:`stormpy.messaging.curve`): every link is CURVE-encrypted, the PULL socket accepts only
  clients holding that pair (others fail the handshake and never deliver a frame), and each PUSH
  socket authenticates with it. A CURVE transport always owns its context (its ZAP handler).
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Mapping
from typing import Any

import zmq

from stormpy.config import DEFAULTS, setting
from stormpy.messaging import curve as curve_links
from stormpy.messaging.curve import CurveGate, CurveKeyPair
from stormpy.messaging.transport import Transport

__all__ = ["DEFAULT_TRANSFER_BUFFER_SIZE", "TRANSFER_BUFFER_KEY", "ZmqTransport", "tcp_endpoint"]

log = logging.getLogger(__name__)

#: Config key: frames queued per peer (send side) and for this worker (receive side).
TRANSFER_BUFFER_KEY = "topology.transfer.buffer.size"
DEFAULT_TRANSFER_BUFFER_SIZE: int = DEFAULTS[TRANSFER_BUFFER_KEY]
#: Milliseconds between reconnect attempts to a peer that is down.
RECONNECT_IVL_MS = 100


def tcp_endpoint(address: str) -> str:
    """``"host:port"`` (or an already complete ``tcp://host:port``) as a ZeroMQ TCP endpoint."""
    if address.startswith("tcp://"):
        return address
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"peer address {address!r} is not of the form host:port")
    return f"tcp://{address}"


class ZmqTransport(Transport):
    """PULL on ``host:port`` (``port=0`` picks a free port, see :attr:`port`), PUSH per peer.

    ``hwm`` overrides the high-water mark taken from ``conf``. ``context`` is used when given
    (and then not terminated by :meth:`close`); otherwise the transport owns a context.
    """

    def __init__(self, host: str, port: int, conf: Mapping[str, Any] | None = None, *,
                 hwm: int | None = None, context: zmq.Context[Any] | None = None,
                 curve: CurveKeyPair | None = None) -> None:
        if hwm is None:
            hwm = int(setting(conf or {}, TRANSFER_BUFFER_KEY))
        if hwm < 1:
            raise ValueError(f"{TRANSFER_BUFFER_KEY} must be at least 1, got {hwm}")
        if curve is not None and context is not None:
            raise ValueError("a CURVE transport owns its ZeroMQ context (its ZAP handler); "
                             "do not pass one")
        self.hwm = hwm
        self.curve = curve
        self._own_context = context is None
        self._ctx: zmq.Context[Any] = context if context is not None else zmq.Context(io_threads=1)
        self._peers: dict[str, tuple[str, zmq.Socket[bytes]]] = {}
        self._wake_lock = threading.RLock()  # re-entrant: signal handlers may wake
        self._closed = False
        self.dropped_frames = 0
        self._gate = CurveGate(self._ctx, frozenset([curve.public])) if curve is not None else None
        self._pull: zmq.Socket[bytes] = self._ctx.socket(zmq.PULL)
        try:
            self._pull.setsockopt(zmq.LINGER, 0)
            if curve is not None:
                curve_links.serve(self._pull, curve)
            self._pull.setsockopt(zmq.RCVHWM, hwm)
            self._pull.bind(f"tcp://{host}:{port}" if port else f"tcp://{host}:*")
        except zmq.ZMQError as exc:
            self._pull.close(linger=0)
            self._end_context()
            raise OSError(f"cannot bind the worker transport on {host}:{port}: {exc}") from exc
        if curve is not None:
            log.info("transport: CURVE on (topology key %s); only holders of its pair connect",
                     curve.public.decode())
        endpoint = self._pull.getsockopt(zmq.LAST_ENDPOINT)
        self.host = host
        self.port = int(bytes(endpoint).decode().rsplit(":", 1)[1])
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._poller = zmq.Poller()
        self._poller.register(self._pull, zmq.POLLIN)
        self._poller.register(self._wake_r, zmq.POLLIN)

    @property
    def peers(self) -> dict[str, str]:
        """Peer key → endpoint of the current peer sockets."""
        return {key: endpoint for key, (endpoint, _) in self._peers.items()}

    def set_peers(self, peers: Mapping[str, str]) -> None:
        """Connect to new peers, keep unchanged ones, close (LINGER 0) removed or moved ones."""
        wanted = {key: tcp_endpoint(addr) for key, addr in peers.items()}
        for key, (endpoint, sock) in list(self._peers.items()):
            if wanted.get(key) != endpoint:
                sock.close(linger=0)
                del self._peers[key]
                log.info("transport: disconnected from peer %s (%s)", key, endpoint)
        for key, endpoint in wanted.items():
            if key in self._peers:
                continue
            push: zmq.Socket[bytes] = self._ctx.socket(zmq.PUSH)
            push.setsockopt(zmq.LINGER, 0)
            push.setsockopt(zmq.SNDHWM, self.hwm)
            push.setsockopt(zmq.RECONNECT_IVL, RECONNECT_IVL_MS)
            if self.curve is not None:
                curve_links.connect_as_client(push, self.curve, self.curve.public)
            push.connect(endpoint)
            self._peers[key] = (endpoint, push)
            log.info("transport: connecting to peer %s at %s", key, endpoint)

    def send(self, peer: str, frame: bytes) -> bool:
        entry = self._peers.get(peer)
        if entry is None:
            self.dropped_frames += 1
            if self.dropped_frames == 1 or self.dropped_frames % 1000 == 0:
                log.warning("transport: discarded %d frame(s) for unknown peer %s (moved away?)",
                            self.dropped_frames, peer)
            return True
        try:
            entry[1].send(frame, zmq.NOBLOCK, copy=False)
        except zmq.Again:
            return False
        return True

    def receive(self, max_frames: int) -> list[Any]:
        """``zmq.Frame`` objects (bytes-like; they know the sender's address, see ``sender``)."""
        frames: list[Any] = []
        recv = self._pull.recv
        try:
            while len(frames) < max_frames:
                frames.append(recv(zmq.NOBLOCK, copy=False))
        except zmq.Again:
            pass
        return frames

    def sender(self, frame: Any) -> str:
        """The sending peer's address (``Peer-Address``, e.g. ``127.0.0.1``) of a received frame."""
        try:
            return str(frame.get("Peer-Address")) if isinstance(frame, zmq.Frame) else ""
        except zmq.ZMQError:
            return ""

    def wait(self, timeout: float) -> None:
        ms = math.ceil(timeout * 1000) if timeout > 0 else 0
        events = self._poller.poll(ms)
        for sock, _ in events:
            if sock == self._wake_r:
                self._drain_wake()

    def _drain_wake(self) -> None:
        try:
            while os.read(self._wake_r, 4096):
                pass
        except BlockingIOError:
            pass

    def wake(self) -> None:
        with self._wake_lock:
            if self._closed:
                return
            try:
                os.write(self._wake_w, b"\x01")
            except BlockingIOError:
                pass  # the pipe is full: a wake-up is pending anyway

    def close(self) -> None:
        """Close every socket (unsent frames are discarded) and the wake pipe; idempotent."""
        with self._wake_lock:
            if self._closed:
                return
            self._closed = True
            os.close(self._wake_r)
            os.close(self._wake_w)
        for _, sock in self._peers.values():
            sock.close(linger=0)
        self._peers.clear()
        self._pull.close(linger=0)
        self._end_context()

    def _end_context(self) -> None:
        if self._gate is not None:
            self._gate.stop()
        if self._own_context:
            self._ctx.term()
