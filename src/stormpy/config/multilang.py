"""The checks of the multilang settings (shell components), shared by the submit-time check and
the shell host that reads them when a task starts.

* ``topology.multilang.serializer``: ``json`` / ``msgpack`` (pystorm's names) or a class name as
  Storm's setting holds one (``org.apache.storm.multilang.JsonSerializer``, any
  ``...MsgpackSerializer`` / ``...MessagePackSerializer``); unset means JSON. May be set per
  component.
* ``topology.subprocess.timeout.secs``: a number of seconds > 0, or unset (None).
* ``topology.shellbolt.max.pending``: an integer >= 1, or unset (None: Storm's 100). May be set
  per component.

:func:`check_multilang_settings` checks all three in a topology's config and the two
per-component ones in each component's config, at submit (``LocalCluster.submit_topology``,
Nimbus, and the Nimbus client before it sends anything) as Storm validates a topology's config
when it is submitted, so a bad value is refused then, not when the first shell task starts. Every
problem is a :class:`~stormpy.config.SettingError` naming the setting (and the component whose
config holds it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from stormpy.config import DEFAULTS, SettingError

__all__ = ["JSON", "MAX_PENDING_KEY", "MSGPACK", "SERIALIZER_KEY", "SUBPROCESS_TIMEOUT_KEY",
           "check_multilang_settings", "max_pending_value", "serializer_kind",
           "subprocess_timeout_value"]

SERIALIZER_KEY = "topology.multilang.serializer"
SUBPROCESS_TIMEOUT_KEY = "topology.subprocess.timeout.secs"
MAX_PENDING_KEY = "topology.shellbolt.max.pending"
JSON = "json"
MSGPACK = "msgpack"


def _where(component: str | None) -> str:
    return f"component {component!r}: " if component is not None else ""


def serializer_kind(value: Any, component: str | None = None) -> str:
    """``json`` or ``msgpack``: the wire format ``topology.multilang.serializer`` names (JSON when
    unset); SettingError otherwise (naming ``component`` when its config holds the value)."""
    if value is not None and not isinstance(value, str):
        raise SettingError(SERIALIZER_KEY, f"{_where(component)}must be a serializer name, got "
                                           f"{value!r}")
    tail = (value or JSON).lower().rsplit(".", 1)[-1]
    if tail in (JSON, "jsonserializer"):
        return JSON
    if tail in (MSGPACK, "msgpackserializer", "messagepackserializer"):
        return MSGPACK
    raise SettingError(SERIALIZER_KEY, f"{_where(component)}unknown multilang serializer "
                                       f"{value!r} (json, msgpack, or a class name ending in "
                                       "JsonSerializer / MsgpackSerializer)")


def max_pending_value(value: Any, component: str | None = None) -> int:
    """``topology.shellbolt.max.pending`` as an integer >= 1 (Storm's default 100 when None);
    SettingError otherwise."""
    if value is None:
        return int(DEFAULTS[MAX_PENDING_KEY])
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SettingError(MAX_PENDING_KEY, f"{_where(component)}must be an integer >= 1, got "
                                            f"{value!r}")
    return value


def subprocess_timeout_value(value: Any, key: str = SUBPROCESS_TIMEOUT_KEY) -> float:
    """``value`` as seconds when it is a finite number > 0; SettingError naming ``key``
    (``topology.subprocess.timeout.secs`` or the ``supervisor.worker.timeout.secs`` it falls
    back to) otherwise."""
    if (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
            or value <= 0):
        raise SettingError(key, f"must be a number of seconds > 0, got {value!r}")
    return float(value)


def check_multilang_settings(conf: Mapping[str, Any],
                             component_configs: Mapping[str, Mapping[str, Any]]) -> None:
    """SettingError for the first bad multilang setting: in the topology's ``conf`` (all three)
    or, naming the component, in a component's own config (``component_configs``: component id
    → its config; the serializer and max pending, which Storm allows per component)."""
    serializer_kind(conf.get(SERIALIZER_KEY))
    max_pending_value(conf.get(MAX_PENDING_KEY))
    if conf.get(SUBPROCESS_TIMEOUT_KEY) is not None:
        subprocess_timeout_value(conf[SUBPROCESS_TIMEOUT_KEY])
    for cid, comp_conf in sorted(component_configs.items()):
        if SERIALIZER_KEY in comp_conf:
            serializer_kind(comp_conf[SERIALIZER_KEY], cid)
        if comp_conf.get(MAX_PENDING_KEY) is not None:
            max_pending_value(comp_conf[MAX_PENDING_KEY], cid)
