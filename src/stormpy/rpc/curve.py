"""CURVE (CurveZMQ) on RPC links: the server's key pair, the client's pinned server key.

Contract:

* A server given a secret key (:func:`server_secret_key`: ``nimbus.rpc.curve.secret.key.file``,
  a file holding the Z85 secret key, written by :func:`write_secret_key_file`) encrypts every
  link; it accepts any client key (the clients are anonymous to CURVE) and the token check
  (``nimbus.rpc.auth.token``) stays on top, now encrypted.
* A client given the server's public key (:func:`server_public_key`:
  ``nimbus.rpc.curve.public.key``) connects with a fresh key pair per socket and talks only to
  the holder of the matching secret key. A handshake that fails (wrong key, or one side without
  CURVE) is reported by the client as :class:`~stormpy.rpc.errors.AuthorizationError` naming the
  server and the setting, see :func:`handshake_failure`.
* Bad keys or unreadable files raise :class:`~stormpy.config.SettingError` naming the setting.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import zmq
from zmq.utils import z85

from stormpy.config import SettingError

__all__ = ["HANDSHAKE_EVENTS", "PUBLIC_KEY", "SECRET_KEY_FILE", "handshake_failure",
           "handshake_refused", "server_public_key", "server_secret_key", "write_secret_key_file"]

SECRET_KEY_FILE = "nimbus.rpc.curve.secret.key.file"
PUBLIC_KEY = "nimbus.rpc.curve.public.key"
_HANDSHAKE_FAILED = (zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                     | zmq.EVENT_HANDSHAKE_FAILED_AUTH)
#: Monitor events :func:`handshake_refused` reads.
HANDSHAKE_EVENTS = _HANDSHAKE_FAILED | zmq.EVENT_HANDSHAKE_SUCCEEDED


def _key(value: Any, setting: str) -> bytes:
    raw = value.strip().encode("ascii", "replace") if isinstance(value, str) else value
    if not isinstance(raw, bytes) or len(raw) != 40:
        raise SettingError(setting, "must hold a CURVE key in Z85 text (40 characters)")
    try:
        z85.decode(raw)
    except (ValueError, KeyError, IndexError):
        raise SettingError(setting, "is not valid Z85 text (a CURVE key)") from None
    return raw


def server_secret_key(conf: Mapping[str, Any]) -> bytes | None:
    """The server's secret key read from ``nimbus.rpc.curve.secret.key.file``; None when unset."""
    path = conf.get(SECRET_KEY_FILE)
    if not path:
        return None
    try:
        text = Path(str(path)).read_text()
    except OSError as exc:
        raise SettingError(SECRET_KEY_FILE, f"cannot read {path}: {exc.strerror or exc}") from None
    return _key(text, SECRET_KEY_FILE)


def server_public_key(conf: Mapping[str, Any]) -> bytes | None:
    """The server public key clients pin (``nimbus.rpc.curve.public.key``); None when unset."""
    value = conf.get(PUBLIC_KEY)
    return None if value in (None, "") else _key(value, PUBLIC_KEY)


def write_secret_key_file(path: Path) -> bytes:
    """Write a fresh secret key to ``path`` (mode 0600, refusing to overwrite); return the
    public key clients must pin."""
    public, secret = zmq.curve_keypair()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(secret.decode() + "\n")
    return bytes(public)


def serve(sock: zmq.Socket[Any], secret: bytes) -> None:
    """Make ``sock`` (before it binds) a CURVE server with ``secret``."""
    sock.curve_secretkey = secret
    sock.curve_publickey = zmq.curve_public(secret)
    sock.curve_server = True


def connect_as_client(sock: zmq.Socket[Any], server_public: bytes) -> None:
    """Make ``sock`` (before it connects) a CURVE client of ``server_public`` with fresh keys."""
    public, secret = zmq.curve_keypair()
    sock.curve_publickey, sock.curve_secretkey, sock.curve_serverkey = public, secret, server_public


def handshake_refused(event: Mapping[str, Any], curve: bool) -> bool | None:
    """What a socket monitor ``event`` says of the last handshake: True when it failed for want of
    the right key (a CURVE client: any failed handshake; a plain client: the server's mechanism
    is not NULL, i.e. it requires CURVE), False when one succeeded, None otherwise."""
    kind = event["event"]
    if kind == zmq.EVENT_HANDSHAKE_SUCCEEDED:
        return False
    if not kind & _HANDSHAKE_FAILED:
        return None
    if curve:
        return True
    mismatch = kind == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL and \
        event["value"] == zmq.PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH
    return True if mismatch else None


def handshake_failure(service: str, address: str, curve: bool) -> str:
    """The message of a failed handshake with ``service`` at ``address``."""
    if curve:
        return (f"the CURVE handshake with {service} at {address} failed: its key does not match "
                f"{PUBLIC_KEY} (or it does not use CURVE)")
    return (f"the handshake with {service} at {address} failed: it requires CURVE; set {PUBLIC_KEY} "
            "to its public key")
