"""Typed RPC errors that travel over the wire and are re-raised client-side with the same class.

A server handler raises one of these; the server sends ``{"type": <wire name>, "message": ...}``; the
client looks the wire name up in :data:`ERROR_TYPES` and raises the same class with the same message.
A wire name the client does not know becomes a plain :class:`RpcError` that keeps the remote type
name in :attr:`RpcError.remote_type`, so an old client still shows a newer server's error clearly.

The wire name of a class is its ``wire_name`` attribute (by default the class name); it is a
protocol contract, so renaming a class must keep its ``wire_name``.
"""

from __future__ import annotations

import builtins

__all__ = [
    "ERROR_TYPES",
    "AlreadyExistsError",
    "AuthorizationError",
    "InternalError",
    "InvalidRequestError",
    "NotFoundError",
    "NotLeaderError",
    "RpcError",
    "RpcTimeoutError",
    "TimeoutError",
    "TopologyRefusedError",
    "UnreachableError",
    "UploadError",
    "error_from_wire",
    "register_error",
]


class RpcError(Exception):
    """Base of every error raised by an RPC call. ``message`` is the human-readable reason."""

    wire_name = "RpcError"

    def __init__(self, message: str, *, remote_type: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        #: The wire type name the server sent (set client-side; ``None`` for local errors).
        self.remote_type = remote_type

    def to_wire(self) -> dict[str, str]:
        """The ``{"type", "message"}`` map sent in an error response."""
        return {"type": self.wire_name, "message": self.message}


class NotFoundError(RpcError):
    """The named topology, upload, bundle or other object does not exist."""

    wire_name = "NotFoundError"


class AlreadyExistsError(RpcError):
    """An object with that name already exists (for example a running topology's name)."""

    wire_name = "AlreadyExistsError"


class InvalidRequestError(RpcError):
    """The request itself is wrong: malformed frame, unknown method, bad or missing arguments."""

    wire_name = "InvalidRequestError"


class TopologyRefusedError(RpcError):
    """Nimbus refused a submitted topology (its spec, name, config or size); the message says why.

    Not :class:`stormpy.topology.InvalidTopologyError` (a spec that cannot be built, raised in the
    submitter's process): this one travels over the wire, under its old wire name."""

    wire_name = "InvalidTopologyError"


class UploadError(RpcError):
    """An upload or download failed: checksum or size mismatch, path traversal, unknown upload id."""

    wire_name = "UploadError"


class AuthorizationError(RpcError):
    """The request carried no or a wrong shared secret, or the caller may not do this."""

    wire_name = "AuthorizationError"


class NotLeaderError(RpcError):
    """The Nimbus asked is a standby: only the leader changes cluster state. The message is
    ``not the leader, leader is host:port`` (or ``... no leader is elected yet``); :attr:`leader`
    parses the address back out (None when unknown)."""

    wire_name = "NotLeaderError"

    @property
    def leader(self) -> str | None:
        _, sep, rest = self.message.partition("leader is ")
        address = rest.split()[0].rstrip(";,.") if sep and rest.split() else ""
        return address if ":" in address else None


class InternalError(RpcError):
    """The server failed unexpectedly while handling the request (the server logged the traceback)."""

    wire_name = "InternalError"


class RpcTimeoutError(RpcError, builtins.TimeoutError):
    """Client side: the server did not answer in time. Also a builtin :class:`TimeoutError`."""

    wire_name = "TimeoutError"


class UnreachableError(RpcTimeoutError):
    """Client side: no connection to the server could be made at all (nothing listening, bad host)."""

    wire_name = "UnreachableError"


#: The name the brief and callers use; it shadows the builtin only inside code that imports it.
TimeoutError = RpcTimeoutError  # noqa: A001 - intentional public alias

#: Wire type name → class. Extend with :func:`register_error`.
ERROR_TYPES: dict[str, type[RpcError]] = {}


def register_error(cls: type[RpcError]) -> type[RpcError]:
    """Make ``cls`` travel over the wire under ``cls.wire_name``; usable as a class decorator.

    Raises ValueError when another class already uses that wire name.
    """
    existing = ERROR_TYPES.get(cls.wire_name)
    if existing is not None and existing is not cls:
        raise ValueError(f"RPC error wire name {cls.wire_name!r} is already used by {existing.__name__}")
    ERROR_TYPES[cls.wire_name] = cls
    return cls


for _cls in (RpcError, NotFoundError, AlreadyExistsError, InvalidRequestError, TopologyRefusedError,
             UploadError, AuthorizationError, InternalError, RpcTimeoutError, UnreachableError,
             NotLeaderError):
    register_error(_cls)


def error_from_wire(type_name: str, message: str) -> RpcError:
    """Build the error a client raises for a ``{"type", "message"}`` error response.

    Unknown type names give a plain :class:`RpcError` whose message is prefixed with the remote type.
    """
    cls = ERROR_TYPES.get(type_name)
    if cls is None:
        return RpcError(f"{type_name}: {message}", remote_type=type_name)
    return cls(message, remote_type=type_name)
