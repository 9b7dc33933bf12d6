"""Request and response frames of the stormpy RPC protocol, encoded with msgpack.

Wire format (one ZeroMQ frame each, protocol version 1)::

    request  = {"v": 1, "id": str, "method": str, "args": {str: any}, "auth"?: str}
    response = {"v": 1, "id": str | nil, "ok": true,  "result": any}
             | {"v": 1, "id": str | nil, "ok": false, "error": {"type": str, "message": str}}

``id`` is chosen by the client and echoed by the server (``nil`` when the request was too broken to
read an id from). Values must be msgpack-serialisable: tuples arrive as lists, ``bytes`` stay bytes.
Decoding never raises anything but :class:`~stormpy.rpc.errors.InvalidRequestError` (requests) or
:class:`~stormpy.rpc.errors.RpcError` (responses), with a message naming what was wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgpack

from stormpy.rpc.errors import InvalidRequestError, RpcError, error_from_wire

__all__ = [
    "PROTOCOL_VERSION",
    "Request",
    "Response",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
]

PROTOCOL_VERSION = 1


@dataclass(frozen=True)
class Request:
    """One call: ``method`` with keyword ``args``; ``auth`` is the optional shared secret."""

    id: str
    method: str
    args: Mapping[str, Any] = field(default_factory=dict)
    auth: str | None = None


@dataclass(frozen=True)
class Response:
    """The answer to one request: ``ok`` with ``result``, or an error type name and message."""

    id: str | None
    ok: bool
    result: Any = None
    error_type: str | None = None
    error_message: str | None = None

    @classmethod
    def success(cls, request_id: str | None, result: Any) -> Response:
        """A successful response carrying ``result``."""
        return cls(id=request_id, ok=True, result=result)

    @classmethod
    def failure(cls, request_id: str | None, error: RpcError) -> Response:
        """An error response carrying ``error``'s wire type and message."""
        return cls(id=request_id, ok=False, error_type=error.wire_name, error_message=error.message)

    def unwrap(self) -> Any:
        """Return the result, or raise the typed error this response carries."""
        if self.ok:
            return self.result
        raise error_from_wire(self.error_type or "RpcError", self.error_message or "")


def _packb(doc: Mapping[str, Any], what: str) -> bytes:
    try:
        return msgpack.packb(doc, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidRequestError(f"{what} is not msgpack-serialisable: {exc}") from exc


def _unpackb(data: bytes, what: str, error: type[RpcError]) -> dict[str, Any]:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise error(f"malformed {what}: expected bytes, got {type(data).__name__}")
    try:
        doc = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises several unrelated exception types on garbage
        raise error(f"malformed {what}: not a msgpack document ({type(exc).__name__}: {exc})") from exc
    if not isinstance(doc, dict):
        raise error(f"malformed {what}: expected a map, got {type(doc).__name__}")
    version = doc.get("v")
    if version != PROTOCOL_VERSION:
        raise error(f"malformed {what}: unsupported protocol version {version!r} "
                    f"(this side speaks v{PROTOCOL_VERSION})")
    return doc


def encode_request(request: Request) -> bytes:
    """Encode ``request``; raise InvalidRequestError when its args are not serialisable."""
    doc: dict[str, Any] = {"v": PROTOCOL_VERSION, "id": request.id, "method": request.method,
                           "args": dict(request.args)}
    if request.auth is not None:
        doc["auth"] = request.auth
    return _packb(doc, f"request for method {request.method!r}")


def peek_request_id(data: bytes) -> str | None:
    """Best-effort id of a possibly malformed request (``None`` when none can be read)."""
    try:
        doc = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception:
        return None
    if isinstance(doc, dict) and isinstance(doc.get("id"), str):
        return doc["id"]
    return None


def decode_request(data: bytes) -> Request:
    """Decode a request frame; raise InvalidRequestError naming the first problem found."""
    doc = _unpackb(data, "request", InvalidRequestError)
    request_id = doc.get("id")
    if not isinstance(request_id, str) or not request_id:
        raise InvalidRequestError(f"malformed request: 'id' must be a non-empty string, got {request_id!r}")
    method = doc.get("method")
    if not isinstance(method, str) or not method:
        raise InvalidRequestError(f"malformed request {request_id}: 'method' must be a non-empty string, "
                                  f"got {method!r}")
    args = doc.get("args", {})
    if not isinstance(args, dict) or not all(isinstance(k, str) for k in args):
        raise InvalidRequestError(f"malformed request {request_id} ({method}): 'args' must be a map "
                                  "with string keys")
    auth = doc.get("auth")
    if auth is not None and not isinstance(auth, str):
        raise InvalidRequestError(f"malformed request {request_id} ({method}): 'auth' must be a string")
    return Request(id=request_id, method=method, args=args, auth=auth)


def encode_response(response: Response) -> bytes:
    """Encode ``response``; raise InvalidRequestError when its result is not serialisable."""
    doc: dict[str, Any] = {"v": PROTOCOL_VERSION, "id": response.id, "ok": response.ok}
    if response.ok:
        doc["result"] = response.result
    else:
        doc["error"] = {"type": response.error_type or "RpcError", "message": response.error_message or ""}
    return _packb(doc, "response")


def decode_response(data: bytes) -> Response:
    """Decode a response frame; raise RpcError naming the problem when it is malformed."""
    doc = _unpackb(data, "response", RpcError)
    request_id = doc.get("id")
    if request_id is not None and not isinstance(request_id, str):
        raise RpcError(f"malformed response: 'id' must be a string or nil, got {request_id!r}")
    ok = doc.get("ok")
    if ok is True:
        return Response.success(request_id, doc.get("result"))
    if ok is not False:
        raise RpcError(f"malformed response {request_id}: 'ok' must be a boolean, got {ok!r}")
    error = doc.get("error")
    if (not isinstance(error, dict) or not isinstance(error.get("type"), str)
            or not isinstance(error.get("message"), str)):
        raise RpcError(f"malformed response {request_id}: 'error' must be a map with string "
                       "'type' and 'message'")
    return Response(id=request_id, ok=False, error_type=error["type"], error_message=error["message"])
