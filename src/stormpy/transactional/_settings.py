"""The transactional topologies' configuration section (``transactional.*``, Storm's keys),
registered when :mod:`stormpy.transactional` is imported, and :func:`transactional_settings`, which
reads and checks it (every problem a :class:`~stormpy.config.SettingError` naming the setting)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stormpy.config import ConfigKey, ConfigSection, SettingError, register_section
from stormpy.state._settings import positive_number

__all__ = ["STORES", "TRANSACTIONAL_CONFIG", "TransactionalSettings", "transactional_settings"]

#: The values of ``transactional.store`` (None: the topology's state backend).
STORES = ("memory", "zookeeper", "redis")

TRANSACTIONAL_CONFIG = register_section(ConfigSection(
    name="transactional",
    prefix="transactional.",
    doc="Transactional topologies (stormpy.transactional): where the coordinator and emitter state "
        "lives.",
    keys=(
        ConfigKey("transactional.store", None,
                  "Where transactional state lives. None (the default): the topology's state "
                  "backend: in LocalCluster its own memory (or the ZooKeeper its conf names), on "
                  "a cluster ZooKeeper at <storm.zookeeper.root>/transactional/tx:<transactional "
                  "id>. 'memory': the memory of the LocalCluster (or worker process), lost with "
                  "it. 'zookeeper': a connection of its own to the transactional ZooKeeper "
                  "servers below. 'redis': the Redis of topology.state.provider.config "
                  "(jedisPoolConfig), hash <keyPrefix>/transactional/tx:<transactional id>."),
        ConfigKey("transactional.zookeeper.root", None,
                  "Znode under which transactional topologies keep their coordinator and emitter "
                  "state (one child per transactional id) on the transactional servers; setting "
                  "it implies transactional.store 'zookeeper'. None: "
                  "<storm.zookeeper.root>/transactional/tx:<transactional id>."),
        ConfigKey("transactional.zookeeper.servers", None,
                  "ZooKeeper hosts of the transactional state; setting them implies "
                  "transactional.store 'zookeeper'. None means storm.zookeeper.servers."),
        ConfigKey("transactional.zookeeper.port", None,
                  "ZooKeeper port of the transactional state; None means storm.zookeeper.port."),
        ConfigKey("transactional.zookeeper.operation.timeout.secs", 2.0,
                  "Longest wait of one transactional state operation on a connection of its own; "
                  "while ZooKeeper is unreachable the coordinator starts and commits nothing and "
                  "retries."),
    ),
))


@dataclass(frozen=True)
class TransactionalSettings:
    """``store``: None (the topology's state backend), ``"memory"`` or ``"zookeeper"`` (a
    connection of its own to ``servers``/``port``, under ``root`` when given)."""

    store: str | None = None
    servers: Any = None
    port: int | None = None
    root: str | None = None
    operation_timeout_secs: float = 2.0


def transactional_settings(conf: Mapping[str, Any]) -> TransactionalSettings:
    """The ``transactional.*`` settings of ``conf``, checked."""
    store = conf.get("transactional.store")
    if store is not None and store not in STORES:
        raise SettingError("transactional.store", f"must be one of {', '.join(STORES)} or None "
                                                  f"(the topology's state backend), got {store!r}")
    servers = conf.get("transactional.zookeeper.servers")
    if servers is not None and not (isinstance(servers, str) or (
            isinstance(servers, (list, tuple)) and servers
            and all(isinstance(s, str) and s for s in servers))):
        raise SettingError("transactional.zookeeper.servers",
                           f"must be a host name or a list of them, got {servers!r}")
    port = conf.get("transactional.zookeeper.port")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int)
                             or not 0 < port < 65536):
        raise SettingError("transactional.zookeeper.port", f"must be a TCP port, got {port!r}")
    root = conf.get("transactional.zookeeper.root")
    if root is not None and (not isinstance(root, str) or not root.startswith("/")
                             or root.rstrip("/") == ""):
        raise SettingError("transactional.zookeeper.root",
                           f"must be an absolute znode path below '/', got {root!r}")
    timeout = positive_number("transactional.zookeeper.operation.timeout.secs",
                              conf.get("transactional.zookeeper.operation.timeout.secs"), 2.0)
    if store is None and (servers is not None or root is not None):
        store = "zookeeper"
    if store == "memory" and (servers is not None or root is not None):
        raise SettingError("transactional.store", "is 'memory' but transactional.zookeeper."
                                                  "servers or .root is set too; drop one")
    return TransactionalSettings(store, servers, port, None if root is None else root.rstrip("/"),
                                 timeout)
