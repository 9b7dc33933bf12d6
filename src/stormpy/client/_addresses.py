"""Where a client finds Nimbus: one ``host:port`` parser and one list of seed addresses.

Contract:

* :func:`parse_address` turns ``"host:port"`` (or ``"host"``, on the default port) into
  ``(host, port)`` and raises ValueError naming the address and the bad part.
* :func:`seed_addresses` is the one list every client (submitter, operator, UI, supervisor,
  replicating Nimbus) asks: ``nimbus.host`` then every ``nimbus.seeds`` entry (``host`` on
  ``nimbus.thrift.port``, or ``host:port``), duplicates removed, order kept. A config naming
  neither gets the default ``nimbus.host`` on its ``nimbus.thrift.port``. A bind-all host
  (``0.0.0.0`` or ``*``: what a Nimbus listens on, not where to connect) means this host,
  ``127.0.0.1``.
* :func:`connectable` applies the same rule to one address a Nimbus named (the leader a standby
  names, or a refusal names), so every address a client connects to follows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy.config import DEFAULTS, setting

__all__ = ["BIND_ALL_HOSTS", "CONNECT_TIMEOUT_SECS", "connectable", "parse_address", "seed_addresses"]

#: Seconds a client waits for the TCP connection to a Nimbus before it counts it as dead.
CONNECT_TIMEOUT_SECS = 2.0

#: Hosts a daemon binds to that name no host to connect to: a client connects to 127.0.0.1.
BIND_ALL_HOSTS = frozenset({"0.0.0.0", "*"})


def parse_address(address: str, default_port: int = int(DEFAULTS["nimbus.thrift.port"])) -> tuple[str, int]:
    """``"host:port"`` (or ``"host"``) → ``(host, port)``; ValueError naming the bad part."""
    host, sep, port = address.rpartition(":")
    if not sep:
        host, port = address, str(default_port)
    if not host:
        raise ValueError(f"Nimbus address {address!r} has no host (expected host:port)")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"Nimbus address {address!r} has no valid port (expected host:port)")
    return host, int(port)


def connectable(address: str, default_port: int = int(DEFAULTS["nimbus.thrift.port"])) -> str:
    """``host:port`` to connect to for ``address``: a bind-all host becomes ``127.0.0.1``;
    ValueError naming a malformed address."""
    host, port = parse_address(address, default_port)
    return f"{'127.0.0.1' if host in BIND_ALL_HOSTS else host}:{port}"


def seed_addresses(conf: Mapping[str, Any]) -> list[str]:
    """``host:port`` of ``nimbus.host`` then every ``nimbus.seeds`` entry (see the module
    docstring); ValueError naming a malformed entry."""
    # 0 (a daemon binding a free port, as tests do) names no port to connect to: the default
    port = int(setting(conf, "nimbus.thrift.port")) or int(DEFAULTS["nimbus.thrift.port"])
    # the seeds and host as given, not the table's defaults: a config naming only nimbus.host
    # must not gain the default seed; neither given falls back to the default host below
    seeds = conf.get("nimbus.seeds")
    given = [] if seeds is None else [seeds] if isinstance(seeds, str) else list(seeds)
    entries = [conf.get("nimbus.host"), *given]
    if not any(entries):
        entries = [DEFAULTS["nimbus.host"]]
    out: list[str] = []
    for entry in entries:
        if not entry:
            continue
        address = connectable(str(entry), port)
        if address not in out:
            out.append(address)
    return out
