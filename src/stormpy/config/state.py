"""The state provider's settings (Storm's ``topology.state.provider`` and
``topology.state.provider.config``) as the state layer reads them, and their check at submit.

Contract:

* :func:`check_state_provider` is the whole check of the two keys together: the provider is one
  of :data:`PROVIDERS`, one of Storm's class names :data:`PROVIDER_ALIASES` maps, or the import
  path of a factory (any other ``org.apache.storm.`` class is refused: no Python factory has that
  name); the provider config is a map or its JSON; an entry no built-in provider reads is
  refused (a misspelt one), and the chosen built-in provider's entries have their types (SQLite's
  ``path`` and ``table``; ZooKeeper's ``servers`` or ``storm.zookeeper.servers``, ``root``,
  ``timeout.secs``; Redis's ``jedisPoolConfig`` entries through :func:`redis_config`). An
  import-path provider's config is its own. Every problem is one
  :class:`~stormpy.config.errors.SettingError` naming the key (and the entry), the value and what
  was expected. The one submit check (:func:`stormpy.config.validate.check_topology_config`)
  calls it, so a bad provider config is refused by ``stormpy local``, ``stormpy jar`` and
  Nimbus's ``submit_topology`` before anything runs; the state layer
  (``stormpy.state.state_settings``) reads the same values through it on the workers.
* Nothing is opened or connected here: reachability (a Redis that does not answer) shows when a
  task opens its store.

Like :mod:`stormpy.config.multilang`, this module imports only :mod:`stormpy.config.errors`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stormpy.config.errors import SettingError

__all__ = ["CONFIG_ENTRIES", "DEFAULT_PREFIX", "DEFAULT_TABLE", "DEFAULT_TIMEOUT_MS",
           "HOST_LOCAL_PROVIDERS", "PROVIDER", "PROVIDERS", "PROVIDER_ALIASES", "PROVIDER_CONFIG",
           "REDIS_CONFIG_ENTRIES", "RedisConfig", "TABLE_NAME_RULE", "ZK_ROOT", "ZK_TIMEOUT_SECS",
           "check_state_provider", "is_table_name", "positive_number", "provider_config",
           "provider_name", "redis_config"]

PROVIDER = "topology.state.provider"
PROVIDER_CONFIG = "topology.state.provider.config"
PROVIDERS = ("memory", "sqlite", "zookeeper", "redis")
#: Storm's provider class names, and the provider each stands for here
PROVIDER_ALIASES = {
    "org.apache.storm.redis.state.RedisKeyValueStateProvider": "redis",
    "org.apache.storm.state.InMemoryKeyValueStateProvider": "memory",
}
#: the providers whose state stays on the host (or in the process) of the task that wrote it
HOST_LOCAL_PROVIDERS = ("memory", "sqlite")

#: the zookeeper provider's defaults: its root znode and its operation timeout
ZK_ROOT = "/stormpy/state"
ZK_TIMEOUT_SECS = 10.0
#: the sqlite provider's table when its config names none, and what a table name may be
DEFAULT_TABLE = "stormpy_state"
TABLE_NAME_RULE = "letters, digits and '_', not starting with a digit"
#: the redis provider's key prefix when its config names none
DEFAULT_PREFIX = "stormpy"
#: Jedis's default timeout (ms), used when ``jedisPoolConfig`` names none
DEFAULT_TIMEOUT_MS = 2000
#: The entries of a Redis provider config: stormpy's, and Storm's (its serialisation entries are
#: accepted for configs written for Storm and ignored: keys and values are msgpack here)
REDIS_CONFIG_ENTRIES = frozenset({"jedisPoolConfig", "jedisClusterConfig", "keyPrefix",
                                  "keyClass", "valueClass", "keySerializerClass",
                                  "valueSerializerClass"})
_POOL_ENTRIES = ("host", "port", "timeout", "password", "database")
#: The entries of ``topology.state.provider.config`` each built-in provider reads; one config may
#: serve several (the stateful bolts' provider, a Trident or transactional Redis), so an entry
#: none of them reads (a misspelt one) is what gets refused
CONFIG_ENTRIES = {"sqlite": ("path", "table"),
                  "zookeeper": ("servers", "port", "root", "timeout.secs"),
                  "redis": tuple(sorted(REDIS_CONFIG_ENTRIES))}
_KNOWN_CONFIG_ENTRIES = frozenset(entry for entries in CONFIG_ENTRIES.values() for entry in entries)


def is_table_name(name: object) -> bool:
    """True when ``name`` is a table name the SQLite store accepts (:data:`TABLE_NAME_RULE`)."""
    return isinstance(name, str) and name.isidentifier()


def positive_number(setting: str, value: Any, default: float) -> float:
    """``value`` as a float > 0, ``default`` when unset (None, ``""`` or 0, as Storm reads an
    unset number); SettingError naming ``setting`` for anything else."""
    if value is None or value == "" or (value == 0 and not isinstance(value, bool)):
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise SettingError(setting, f"must be a positive number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class RedisConfig:
    """Where the Redis backend connects (Storm's ``jedisPoolConfig``) and its key prefix."""

    host: str = "127.0.0.1"
    port: int = 6379
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    password: str | None = None
    database: int = 0
    prefix: str = DEFAULT_PREFIX

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def redis_config(config: Mapping[str, Any], setting: str = PROVIDER_CONFIG) -> RedisConfig:
    """The Redis settings of a provider config in Storm's shape, ``{"jedisPoolConfig": {"host",
    "port", "timeout", "password", "database"}, "keyPrefix": ...}``; SettingError naming
    ``setting`` and the entry when one is wrong (``jedisClusterConfig`` is refused: Redis Cluster
    is not supported). Without ``jedisPoolConfig`` the server is 127.0.0.1:6379 (Storm's default);
    a ``jedisPoolConfig`` must name its ``host``, and its other entries left out take their
    defaults (port 6379, timeout 2000 ms, database 0)."""
    if "jedisClusterConfig" in config:
        raise SettingError(setting, "jedisClusterConfig: Redis Cluster is not supported by the "
                                    "redis provider; give jedisPoolConfig (one Redis server)")
    pool = config.get("jedisPoolConfig") or {}
    if not isinstance(pool, Mapping):
        raise SettingError(setting, f"jedisPoolConfig must be a map, got {pool!r}")
    unknown = sorted(map(str, set(pool) - set(_POOL_ENTRIES)))
    if unknown:
        raise SettingError(setting, f"jedisPoolConfig: unknown entries {unknown} (host, port, "
                                    "timeout, password, database)")
    port = pool.get("port", RedisConfig.port)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise SettingError(setting, f"jedisPoolConfig.port must be a TCP port, got {port!r}")
    timeout = pool.get("timeout", DEFAULT_TIMEOUT_MS)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise SettingError(setting, f"jedisPoolConfig.timeout must be a positive number of ms, "
                                    f"got {timeout!r}")
    password = pool.get("password")
    if password is not None and not isinstance(password, str):
        raise SettingError(setting, "jedisPoolConfig.password must be a string")
    database = pool.get("database", 0)
    if isinstance(database, bool) or not isinstance(database, int) or database < 0:
        raise SettingError(setting, f"jedisPoolConfig.database must be an index >= 0, got "
                                    f"{database!r}")
    host = pool.get("host", RedisConfig.host)
    if not isinstance(host, str) or not host.strip():
        raise SettingError(setting, f"jedisPoolConfig.host must be a host name, got {host!r}")
    if config.get("jedisPoolConfig") is not None and "host" not in pool:
        # Storm reads a given jedisPoolConfig as written: no host is a null host, which never
        # connects (only a config without jedisPoolConfig gets the 127.0.0.1:6379 default)
        raise SettingError(setting, "jedisPoolConfig names no host: give the Redis server's "
                                    "host (or leave jedisPoolConfig out for 127.0.0.1:6379)")
    prefix = config.get("keyPrefix", DEFAULT_PREFIX)
    if not isinstance(prefix, str) or not prefix:
        raise SettingError(setting, f"keyPrefix must be a non-empty string, got {prefix!r}")
    # whole milliseconds, rounded up: a fractional timeout below 1 ms must not become 0 (no
    # timeout at all for the socket: non-blocking)
    return RedisConfig(host, port, math.ceil(timeout), password or None, database, prefix)


def provider_name(value: Any) -> str:
    """The provider ``value`` names (unset: ``memory``; Storm's class names mapped); SettingError
    naming ``topology.state.provider`` otherwise (see the module contract)."""
    if value is None or value == "":
        return "memory"
    provider = PROVIDER_ALIASES.get(value, value) if isinstance(value, str) else value
    storm_class = isinstance(provider, str) and provider.startswith("org.apache.storm.")
    if (not isinstance(provider, str) or storm_class
            or (provider not in PROVIDERS and "." not in provider and ":" not in provider)):
        storm = f" (Storm's class names stormpy knows: {', '.join(PROVIDER_ALIASES)})" \
            if storm_class else ""
        raise SettingError(PROVIDER, f"must be one of {', '.join(PROVIDERS)} or the import path "
                                     f"of a factory (conf, namespace) -> store, got "
                                     f"{value!r}{storm}")
    return provider


def provider_config(raw: Any) -> dict[str, Any]:
    """``topology.state.provider.config`` as a dict (a copy): a map, or its JSON as Storm takes
    it; unset is ``{}``; SettingError naming the key otherwise."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise SettingError(PROVIDER_CONFIG, f"is not valid JSON: {exc}") from None
    if not isinstance(raw, Mapping):
        raise SettingError(PROVIDER_CONFIG, f"must be a map, got {raw!r}")
    return dict(raw)


def _servers(value: Any) -> bool:
    """True when ``value`` names ZooKeeper servers as the connect-string builder reads them."""
    entries = value.split(",") if isinstance(value, str) else value
    return (isinstance(entries, list | tuple) and all(isinstance(e, str) for e in entries)
            and any(e.strip() for e in entries))


def _port(value: Any) -> bool:
    """True when ``value`` is a port number (or its digits) in 1..65535."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535


def check_state_provider(conf: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The provider and its config of ``conf`` (a topology's effective config), checked as the
    module contract says; SettingError naming the key and entry otherwise."""
    provider = provider_name(conf.get(PROVIDER))
    config = provider_config(conf.get(PROVIDER_CONFIG))
    unknown = sorted(str(key) for key in set(config) - _KNOWN_CONFIG_ENTRIES)
    if unknown and provider in PROVIDERS:  # an import-path provider's config is its own
        known = "; ".join(f"{name}: {', '.join(entries)}" for name, entries in CONFIG_ENTRIES.items())
        raise SettingError(PROVIDER_CONFIG, f"unknown entries {unknown} (the providers take {known})")
    if provider == "sqlite":
        if not config.get("path") or not isinstance(config["path"], str):
            raise SettingError(PROVIDER_CONFIG, "provider 'sqlite' needs 'path' (the SQLite "
                                                f"file), got {config!r}")
        table = config.get("table", DEFAULT_TABLE)
        if not is_table_name(table):
            raise SettingError(PROVIDER_CONFIG, f"'table' must be {TABLE_NAME_RULE}, got {table!r}")
    if provider == "zookeeper":
        if not (config.get("servers") or conf.get("storm.zookeeper.servers")):
            raise SettingError(PROVIDER_CONFIG, "provider 'zookeeper' needs 'servers' (or "
                                                "storm.zookeeper.servers)")
        servers = config.get("servers")
        if servers and not _servers(servers):
            raise SettingError(f"{PROVIDER_CONFIG} servers", "must name ZooKeeper servers (a host, "
                                                             "'h1,h2' or a list of hosts), got "
                                                             f"{servers!r}")
        port = config.get("port")
        if port is not None and port != "" and not _port(port):
            raise SettingError(f"{PROVIDER_CONFIG} port", f"must be a port number in 1..65535, got "
                                                          f"{port!r}")
        root = config.get("root", ZK_ROOT)
        if not isinstance(root, str) or not root.startswith("/"):
            raise SettingError(PROVIDER_CONFIG, f"'root' must be an absolute znode path, got "
                                                f"{root!r}")
        positive_number(f"{PROVIDER_CONFIG} timeout.secs", config.get("timeout.secs"),
                        ZK_TIMEOUT_SECS)
    if provider == "redis":
        redis_config(config, PROVIDER_CONFIG)
    return provider, config
