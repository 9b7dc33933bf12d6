"""The stateful bolts' settings (Storm's keys), read and checked in one place: every problem is a
:class:`~stormpy.config.SettingError` naming the setting. The provider and its config are checked
by :func:`stormpy.config.state.check_state_provider`, the same check the submit check applies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stormpy.config import SettingError, setting
from stormpy.config.state import (
    CONFIG_ENTRIES,
    HOST_LOCAL_PROVIDERS,
    PROVIDER,
    PROVIDER_ALIASES,
    PROVIDER_CONFIG,
    PROVIDERS,
    ZK_ROOT,
    ZK_TIMEOUT_SECS,
    check_state_provider,
    positive_number,
)

__all__ = ["CONFIG_ENTRIES", "HOST_LOCAL_PROVIDERS", "PROVIDER", "PROVIDERS", "PROVIDER_ALIASES",
           "PROVIDER_CONFIG", "ZK_ROOT", "ZK_TIMEOUT_SECS", "StateSettings", "positive_number",
           "state_settings"]

INTERVAL = "topology.state.checkpoint.interval.ms"
CACHE_MAX_KEYS = "topology.state.cache.max.keys"
DEFAULT_CACHE_MAX_KEYS = 100_000


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


def state_settings(conf: Mapping[str, Any]) -> StateSettings:
    """The stateful bolts' settings of ``conf``, checked (SettingError naming the setting)."""
    provider, config = check_state_provider(conf)
    interval = positive_number(INTERVAL, conf.get(INTERVAL), 1000.0) / 1000
    cache = setting(conf, CACHE_MAX_KEYS)
    if isinstance(cache, bool) or not isinstance(cache, int) or cache < 0:
        raise SettingError(CACHE_MAX_KEYS, f"must be a number of keys >= 0, got {cache!r}")
    return StateSettings(provider, config, interval, cache)
