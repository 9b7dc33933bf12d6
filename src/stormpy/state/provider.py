"""Opening a task's state store from ``topology.state.provider`` and
``topology.state.provider.config`` (Storm's keys)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from stormpy.cluster.zk_hosts import hosts_from_config
from stormpy.state.stores import DocStore, MemoryDocStore, SqliteDocStore, ZkDocStore
from stormpy.topology.imports import import_object

__all__ = ["PROVIDERS", "open_store", "provider_config"]

PROVIDERS = ("memory", "sqlite", "zookeeper")


def provider_config(conf: Mapping[str, Any]) -> dict[str, Any]:
    """``topology.state.provider.config`` as a map (it may be a JSON string, as in Storm)."""
    raw = conf.get("topology.state.provider.config")
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise ValueError(f"topology.state.provider.config is not valid JSON: {exc}") from None
    if not isinstance(raw, Mapping):
        raise ValueError(f"topology.state.provider.config must be a map, got {raw!r}")
    return dict(raw)


def open_store(conf: Mapping[str, Any], namespace: str, topology_id: str) -> DocStore:
    """The store of ``namespace`` (``<topology name>/<component>-<task>``): memory stores are
    per topology id (they die with the process anyway), durable ones per topology name so a
    redeployed topology continues from its state. ValueError naming the key when misconfigured."""
    kind = conf.get("topology.state.provider") or "memory"
    settings = provider_config(conf)
    if kind == "memory":
        return MemoryDocStore(f"{topology_id}/{namespace}")
    if kind == "sqlite":
        path = settings.get("path")
        if not path:
            raise ValueError("topology.state.provider is 'sqlite' but topology.state.provider."
                             "config has no 'path' (the SQLite file)")
        return SqliteDocStore(path, str(settings.get("table") or "stormpy_state"),
                              prefix=f"{namespace}/")
    if kind == "zookeeper":
        servers = settings.get("servers") or conf.get("storm.zookeeper.servers")
        if not servers:
            raise ValueError("topology.state.provider is 'zookeeper' but neither topology.state."
                             "provider.config 'servers' nor storm.zookeeper.servers is set")
        root = str(settings.get("root") or "/stormpy/state").rstrip("/")
        safe = re.sub(r"[^A-Za-z0-9_.$-]", "_", namespace.replace("/", "~"))
        return ZkDocStore(hosts_from_config(conf, servers=servers, port=settings.get("port"),
                                            servers_setting="topology.state.provider.config servers",
                                            port_setting="topology.state.provider.config port"),
                          f"{root}/{safe}",
                          operation_timeout_secs=float(settings.get("timeout.secs") or 10.0))
    if isinstance(kind, str) and "." in kind:
        factory = import_object(kind)
        store = factory(conf, namespace)
        if not isinstance(store, DocStore):
            raise ValueError(f"topology.state.provider {kind!r} returned {store!r}, not a DocStore")
        return store
    raise ValueError(f"topology.state.provider must be one of {PROVIDERS} or an import path, got "
                     f"{kind!r}")
