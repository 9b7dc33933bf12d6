"""CURVE (CurveZMQ) on worker links: a topology's key pair, socket set-up and the ZAP gate.

Contract:

* ``storm.messaging.curve.enabled`` (default False, like Storm's plain Netty links) turns CURVE on
  for the worker links of topologies submitted while it is set. At submit Nimbus makes one key pair
  per topology (:meth:`CurveKeyPair.generate`) and puts it in the topology's config as
  ``topology.messaging.curve.public.key`` / ``topology.messaging.curve.secret.key`` (Z85 text, 40
  characters each); supervisors receive that config over Nimbus RPC and store it in a file only
  their user may read, and :func:`topology_keys` gives the worker its pair back.
* Every worker of the topology is a CURVE server with that pair on its receiving socket, and a
  CURVE client with the same pair on each sending socket. The receiving socket's ZAP handler
  (:class:`CurveGate`, pyzmq's ``ThreadAuthenticator``) accepts only the topology's own public key
  as a client key: a worker of another topology, or a process with a key pair of its own, cannot
  finish the handshake, and frames are encrypted and authenticated end to end.
* Bad keys raise :class:`~stormpy.config.SettingError` naming the setting.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import zmq
from zmq.utils import z85

from stormpy.config import SettingError, setting

__all__ = ["CURVE_ENABLED_KEY", "PUBLIC_KEY", "SECRET_KEY", "ZAP_DOMAIN", "CurveGate", "CurveKeyPair",
           "curve_enabled", "topology_keys"]

CURVE_ENABLED_KEY = "storm.messaging.curve.enabled"
PUBLIC_KEY = "topology.messaging.curve.public.key"
SECRET_KEY = "topology.messaging.curve.secret.key"
#: ZAP domain of the workers' receiving sockets.
ZAP_DOMAIN = "stormpy-worker"
_Z85_KEY_LENGTH = 40


def z85_key(value: Any, setting: str) -> bytes:
    """``value`` as a 40-character Z85 CURVE key (bytes); SettingError naming ``setting`` if not."""
    raw = value.encode("ascii", "replace") if isinstance(value, str) else value
    if not isinstance(raw, bytes) or len(raw) != _Z85_KEY_LENGTH:
        raise SettingError(setting, "must be a CURVE key in Z85 text (40 characters), "
                                    f"got {_describe(value)}")
    # a non-ASCII character would have been replaced by "?", itself a Z85 character: refused
    # here, not taken for another key
    if isinstance(value, str) and not value.isascii():
        raise SettingError(setting, "is not valid Z85 text (a CURVE key)")
    try:
        z85.decode(raw)
    except (ValueError, KeyError, IndexError, struct.error):  # struct.error: a group past 2**32
        raise SettingError(setting, "is not valid Z85 text (a CURVE key)") from None
    return raw


def _describe(value: Any) -> str:
    if isinstance(value, (str, bytes)):
        return f"{len(value)} characters"
    return type(value).__name__


@dataclass(frozen=True)
class CurveKeyPair:
    """A CURVE key pair in Z85 text (40 bytes each). ``repr`` never shows the secret."""

    public: bytes
    secret: bytes

    @classmethod
    def generate(cls) -> CurveKeyPair:
        """A fresh pair from libzmq's CSPRNG."""
        public, secret = zmq.curve_keypair()
        return cls(public, secret)

    @classmethod
    def from_secret(cls, secret: Any, setting: str = SECRET_KEY) -> CurveKeyPair:
        """The pair of ``secret`` (its public key derived from it)."""
        raw = z85_key(secret, setting)
        return cls(zmq.curve_public(raw), raw)

    def __repr__(self) -> str:
        return f"CurveKeyPair(public={self.public.decode()!r}, secret=<hidden>)"

    def as_conf(self) -> dict[str, str]:
        """The topology config entries carrying this pair."""
        return {PUBLIC_KEY: self.public.decode(), SECRET_KEY: self.secret.decode()}


def curve_enabled(conf: Mapping[str, Any]) -> bool:
    """``storm.messaging.curve.enabled`` of ``conf`` (a bool; anything else is a SettingError)."""
    value = setting(conf, CURVE_ENABLED_KEY)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise SettingError(CURVE_ENABLED_KEY, f"must be true or false, got {value!r}")
    return value


def topology_keys(conf: Mapping[str, Any]) -> CurveKeyPair | None:
    """The topology's key pair from a worker's config; None when its links are plain.

    A public key that does not belong to the secret key is a SettingError.
    """
    secret = conf.get(SECRET_KEY)
    if secret is None or secret == "":
        return None
    pair = CurveKeyPair.from_secret(secret)
    public = conf.get(PUBLIC_KEY)
    if public not in (None, "") and z85_key(public, PUBLIC_KEY) != pair.public:
        raise SettingError(PUBLIC_KEY, f"does not belong to {SECRET_KEY}")
    return pair


def serve(sock: zmq.Socket[Any], keys: CurveKeyPair) -> None:
    """Make ``sock`` (before it binds) a CURVE server with ``keys`` in the ZAP domain of the gate."""
    sock.curve_secretkey = keys.secret
    sock.curve_publickey = keys.public
    sock.curve_server = True
    sock.zap_domain = ZAP_DOMAIN.encode()


def connect_as_client(sock: zmq.Socket[Any], keys: CurveKeyPair, server_public: bytes) -> None:
    """Make ``sock`` (before it connects) a CURVE client with ``keys`` towards ``server_public``."""
    sock.curve_secretkey = keys.secret
    sock.curve_publickey = keys.public
    sock.curve_serverkey = server_public


class _AllowedKeys:
    """pyzmq's credentials provider: a client key is accepted when it is one of ``allowed``."""

    def __init__(self, allowed: frozenset[bytes]) -> None:
        self.allowed = allowed

    def callback(self, domain: str, key: bytes) -> bool:
        return key in self.allowed


class CurveGate:
    """The ZAP handler of one ZeroMQ context: CURVE clients of :data:`ZAP_DOMAIN` are accepted
    only with a public key in ``allowed``. Start it before binding; :meth:`stop` before the
    context ends. One gate per context (ZAP is bound once per context)."""

    def __init__(self, context: zmq.Context[Any], allowed: frozenset[bytes]) -> None:
        # imported here: pyzmq's authenticator pulls in asyncio, which a worker without CURVE
        # never needs (memory and start-up of every worker process)
        from zmq.auth.thread import ThreadAuthenticator

        self._auth = ThreadAuthenticator(context)
        self._auth.start()
        self._auth.configure_curve_callback(ZAP_DOMAIN, credentials_provider=_AllowedKeys(allowed))

    def stop(self) -> None:
        """End the handler thread; idempotent."""
        if self._auth.is_alive():
            self._auth.stop()
