"""One "RPC client from config": the settings every client of Nimbus takes from a config.

Contract: :func:`rpc_settings` reads ``nimbus.rpc.timeout.secs``, ``nimbus.rpc.retries``,
``nimbus.rpc.auth.token`` and ``nimbus.rpc.curve.public.key`` (defaults from the key table) into
the keyword arguments of :class:`~stormpy.rpc.RpcClient`, with the connect timeout of
:data:`~stormpy.client._addresses.CONNECT_TIMEOUT_SECS`; :func:`rpc_client` builds the client for
one ``host:port`` from them. Keyword arguments override the config.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy.client._addresses import CONNECT_TIMEOUT_SECS, parse_address
from stormpy.config import DEFAULTS, rpc_auth_token
from stormpy.rpc import RpcClient
from stormpy.rpc.curve import server_public_key

__all__ = ["rpc_client", "rpc_settings"]


def rpc_settings(conf: Mapping[str, Any], **overrides: Any) -> dict[str, Any]:
    """``timeout_secs``, ``retries``, ``auth_token``, ``curve_server_key`` and
    ``connect_timeout_secs`` for an RPC client to Nimbus, from ``conf``; ``overrides`` win."""
    settings: dict[str, Any] = {
        "timeout_secs": float(conf.get("nimbus.rpc.timeout.secs", DEFAULTS["nimbus.rpc.timeout.secs"])),
        "retries": int(conf.get("nimbus.rpc.retries", DEFAULTS["nimbus.rpc.retries"])),
        "auth_token": rpc_auth_token(conf),
        "curve_server_key": server_public_key(conf),
        "connect_timeout_secs": CONNECT_TIMEOUT_SECS,
    }
    settings.update(overrides)
    return settings


def rpc_client(conf: Mapping[str, Any], address: str, **overrides: Any) -> RpcClient:
    """An RPC client for the Nimbus at ``address`` (``host:port``) with the settings of ``conf``
    (:func:`rpc_settings`; ``overrides`` win)."""
    host, port = parse_address(address)
    return RpcClient(host, port, service="Nimbus", **rpc_settings(conf, **overrides))
