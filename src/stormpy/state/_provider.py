"""Opening a stateful task's store from ``topology.state.provider`` and
``topology.state.provider.config`` (Storm's keys), on the state layer's backends:

* ``memory`` (the default): the runtime's memory (``context.state_backend.memory``: the
  LocalCluster instance's, or the worker process's), in the topology's checkpoints area under
  ``$state/<component>-<task>``; it ends with the LocalCluster (or process) and a kill removes it;
* ``sqlite``: the file of ``{"path": ..., "table": ...}`` under ``<topology name>/<component>-<task>``;
* ``zookeeper``: its own connection to ``{"servers", "port", "root", "timeout.secs"}`` (default
  ``storm.zookeeper.*``, root ``/stormpy/state``), node ``<root>/<topology name>/<component>-<task>``;
* ``redis`` (or Storm's ``org.apache.storm.redis.state.RedisKeyValueStateProvider``): its own
  connection pool to ``{"jedisPoolConfig": {"host", "port", "timeout", "password", "database"},
  "keyPrefix": "stormpy"}``, hash ``<prefix>/<topology name>/<component>-<task>``;
* an import path: ``factory(conf, namespace)`` returning a :class:`~stormpy.state._base.Store`.

Durable stores are named by topology name, so a redeployed topology continues from its state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy.cluster.paths import encode_segment
from stormpy.cluster.zk_hosts import hosts_from_config
from stormpy.config import SettingError, setting
from stormpy.state._base import Store
from stormpy.state._memory import MemoryBackend
from stormpy.state._redis_store import open_redis_store, redis_config
from stormpy.state._settings import (
    PROVIDER,
    PROVIDER_CONFIG,
    PROVIDERS,
    ZK_ROOT,
    ZK_TIMEOUT_SECS,
    state_settings,
)
from stormpy.state._sqlite import DEFAULT_TABLE, SqliteStore
from stormpy.state._zookeeper import from_settings, open_zk_store
from stormpy.topology._context import TopologyContext
from stormpy.topology._imports import import_object
from stormpy.topology._state import CHECKPOINTS, StateStoreError

__all__ = ["PROVIDERS", "open_store"]

#: The key under which the memory provider keeps task state in the checkpoints area.
MEMORY_PREFIX = "$state"
#: what the memory provider's first store of a topology logs (the area fills ``%s``): on a
#: cluster too the state lives in the worker process, whatever ZooKeeper the cluster has
MEMORY_NOTE = ("stateful bolts' state (%s area) is kept in this process's memory "
               "(topology.state.provider: memory, the default) and lost when the process ends; "
               "set topology.state.provider to redis, zookeeper or sqlite to keep it")


def open_store(conf: Mapping[str, Any], context: TopologyContext, task_key: str) -> Store:
    """The store of ``task_key`` (``<component>-<task>``, or the checkpoint spout's component id)
    as ``conf`` configures it (see the module doc); SettingError naming the setting when it is
    misconfigured, a StateStoreError naming the store when it cannot be opened."""
    settings = state_settings(conf)
    kind, config = settings.provider, settings.config
    name = str(setting(conf, "topology.name") or context.topology_id)
    if kind == "memory":
        memory = context.state_backend.memory
        area = (memory.store(CHECKPOINTS, context.topology_id, note=MEMORY_NOTE)
                if isinstance(memory, MemoryBackend)
                else memory.store(CHECKPOINTS, context.topology_id))
        if not isinstance(area, Store):
            raise StateStoreError(area.location, "the runtime's memory backend is not one of the "
                                                 "state layer's")
        return area.sub(MEMORY_PREFIX, task_key)
    if kind == "sqlite":
        return SqliteStore(config["path"], str(config.get("table") or DEFAULT_TABLE),
                           segments=(name, task_key))
    if kind == "zookeeper":
        root = str(config.get("root") or ZK_ROOT).rstrip("/") or "/"
        hosts = hosts_from_config(conf, servers=config.get("servers"), port=config.get("port"),
                                  servers_setting=f"{PROVIDER_CONFIG} servers",
                                  port_setting=f"{PROVIDER_CONFIG} port")
        return open_zk_store(hosts, root, "/".join((root.rstrip("/"), encode_segment(name),
                                                    encode_segment(task_key))),
                             operation_timeout_secs=float(config.get("timeout.secs") or ZK_TIMEOUT_SECS),
                             **from_settings(conf))
    if kind == "redis":
        return open_redis_store(redis_config(config, PROVIDER_CONFIG), name, task_key)
    factory = import_object(kind)
    store = factory(conf, f"{name}/{task_key}")
    if not isinstance(store, Store):
        raise SettingError(PROVIDER, f"{kind!r} returned {store!r}, not a stormpy.state.Store")
    return store
