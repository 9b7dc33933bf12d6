"""msgpack-over-ZeroMQ request/reply: :class:`RpcServer`, :class:`RpcClient` and typed errors.

A shared service: it never imports daemons. See :mod:`stormpy.rpc.codec` for the wire format.
"""

from stormpy.rpc.client import RpcClient
from stormpy.rpc.codec import PROTOCOL_VERSION, Request, Response
from stormpy.rpc.errors import (
    ERROR_TYPES,
    AlreadyExistsError,
    AuthorizationError,
    InternalError,
    InvalidRequestError,
    NotFoundError,
    NotLeaderError,
    RpcError,
    RpcTimeoutError,
    TopologyRefusedError,
    UnreachableError,
    UploadError,
    error_from_wire,
    register_error,
)
from stormpy.rpc.methods import rpc_method
from stormpy.rpc.server import RpcServer, current_client

__all__ = [
    "ERROR_TYPES",
    "PROTOCOL_VERSION",
    "AlreadyExistsError",
    "AuthorizationError",
    "InternalError",
    "InvalidRequestError",
    "NotFoundError",
    "NotLeaderError",
    "Request",
    "Response",
    "RpcClient",
    "RpcError",
    "RpcServer",
    "RpcTimeoutError",
    "TopologyRefusedError",
    "UnreachableError",
    "UploadError",
    "current_client",
    "error_from_wire",
    "register_error",
    "rpc_method",
]
