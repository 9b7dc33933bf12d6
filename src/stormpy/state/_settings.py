"""The stateful bolts' settings (Storm's keys), read and checked in one place: every problem is a
:class:`~stormpy.config.SettingError` naming the setting."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stormpy.config import DEFAULTS, SettingError, setting
from stormpy.state._redis_store import PROVIDER_CONFIG_ENTRIES as REDIS_CONFIG_ENTRIES
from stormpy.state._redis_store import redis_config
from stormpy.state._sqlite import DEFAULT_TABLE, TABLE_NAME_RULE, is_table_name

__all__ = ["HOST_LOCAL_PROVIDERS", "PROVIDERS", "PROVIDER_ALIASES", "ZK_ROOT", "ZK_TIMEOUT_SECS",
           "StateSettings", "positive_number", "state_settings"]

PROVIDERS = ("memory", "sqlite", "zookeeper", "redis")
#: Storm's provider class names, and the provider each stands for here
PROVIDER_ALIASES = {
    "org.apache.storm.redis.state.RedisKeyValueStateProvider": "redis",
    "org.apache.storm.state.InMemoryKeyValueStateProvider": "memory",
}
#: the providers whose state stays on the host (or in the process) of the task that wrote it
HOST_LOCAL_PROVIDERS = ("memory", "sqlite")

PROVIDER = "topology.state.provider"
PROVIDER_CONFIG = "topology.state.provider.config"
INTERVAL = "topology.state.checkpoint.interval.ms"
CACHE_MAX_KEYS = "topology.state.cache.max.keys"
DEFAULT_CACHE_MAX_KEYS = 100_000
#: the zookeeper provider's defaults: its root znode and its operation timeout
ZK_ROOT = "/stormpy/state"
ZK_TIMEOUT_SECS = 10.0


@dataclass(frozen=True)
class StateSettings:
    """``provider``: one of :data:`PROVIDERS` (Storm's class names mapped by
    :data:`PROVIDER_ALIASES`) or a factory's import path; ``config``: the provider's settings;
    ``checkpoint_interval_secs``: how often a checkpoint starts; ``cache_max_keys``: committed
    keys a KeyValueState keeps in memory."""

    provider: str = "memory"
    config: dict[str, Any] = field(default_factory=dict)
    checkpoint_interval_secs: float = 1.0
    cache_max_keys: int = DEFAULT_CACHE_MAX_KEYS


def positive_number(setting: str, value: Any, default: float) -> float:
    """``value`` as a float > 0, ``default`` when unset (None, ``""`` or 0, as Storm reads an
    unset number); SettingError naming ``setting`` for anything else."""
    if value is None or value == "" or (value == 0 and not isinstance(value, bool)):
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise SettingError(setting, f"must be a positive number, got {value!r}")
    return float(value)


#: The entries of ``topology.state.provider.config`` each built-in provider reads; one config may
#: serve several (the stateful bolts' provider, a Trident or transactional Redis), so an entry
#: none of them reads (a misspelt one) is what gets refused
CONFIG_ENTRIES = {"sqlite": ("path", "table"),
                  "zookeeper": ("servers", "port", "root", "timeout.secs"),
                  "redis": tuple(sorted(REDIS_CONFIG_ENTRIES))}
KNOWN_CONFIG_ENTRIES = frozenset(entry for entries in CONFIG_ENTRIES.values() for entry in entries)


def _provider_config(conf: Mapping[str, Any]) -> dict[str, Any]:
    raw = conf.get(PROVIDER_CONFIG)
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):  # a JSON string, as Storm takes it
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise SettingError(PROVIDER_CONFIG, f"is not valid JSON: {exc}") from None
    if not isinstance(raw, Mapping):
        raise SettingError(PROVIDER_CONFIG, f"must be a map, got {raw!r}")
    return dict(raw)


def state_settings(conf: Mapping[str, Any]) -> StateSettings:
    """The stateful bolts' settings of ``conf``, checked (SettingError naming the setting)."""
    provider = setting(conf, PROVIDER) or DEFAULTS[PROVIDER]  # "" too: the default
    provider = PROVIDER_ALIASES.get(provider, provider) if isinstance(provider, str) else provider
    if not isinstance(provider, str) or (provider not in PROVIDERS
                                         and "." not in provider and ":" not in provider):
        raise SettingError(PROVIDER, f"must be one of {', '.join(PROVIDERS)} or the import path "
                                     f"of a factory (conf, namespace) -> store, got {provider!r}")
    config = _provider_config(conf)
    unknown = sorted(str(key) for key in set(config) - KNOWN_CONFIG_ENTRIES)
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
        root = config.get("root", ZK_ROOT)
        if not isinstance(root, str) or not root.startswith("/"):
            raise SettingError(PROVIDER_CONFIG, f"'root' must be an absolute znode path, got "
                                                f"{root!r}")
        positive_number(f"{PROVIDER_CONFIG} timeout.secs", config.get("timeout.secs"), ZK_TIMEOUT_SECS)
    if provider == "redis":
        redis_config(config, PROVIDER_CONFIG)
    interval = positive_number(INTERVAL, conf.get(INTERVAL), 1000.0) / 1000
    cache = setting(conf, CACHE_MAX_KEYS)
    if isinstance(cache, bool) or not isinstance(cache, int) or cache < 0:
        raise SettingError(CACHE_MAX_KEYS, f"must be a number of keys >= 0, got {cache!r}")
    return StateSettings(provider, config, interval, cache)
