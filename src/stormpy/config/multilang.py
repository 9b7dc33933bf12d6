"""The multilang settings' values as shell components read them, and the check of the
serializer name the key table (:mod:`stormpy.config.keys`) applies at submit.

* ``topology.multilang.serializer``: ``json`` / ``msgpack`` (pystorm's names) or a class name as
  Storm's setting holds one (``org.apache.storm.multilang.JsonSerializer``, any
  ``...MsgpackSerializer`` / ``...MessagePackSerializer``); unset means JSON. May be set per
  component.
* ``topology.subprocess.timeout.secs``: a number of seconds > 0, or unset (None).
* ``topology.shellbolt.max.pending``: an integer >= 1 (Storm's 100 by default). May be set per
  component.

All three are checked at submit with every other key, by the one submit check
(:func:`stormpy.config.validate.check_topology_config`); the readers here raise the same
:class:`~stormpy.config.SettingError` for a conf that reached a task some other way. This module
imports only :mod:`stormpy.config.errors`, as the key table imports it.
"""

from __future__ import annotations

import math
from typing import Any

from stormpy.config.errors import SettingError

__all__ = ["JSON", "MAX_PENDING_KEY", "MSGPACK", "SERIALIZER_KEY", "SUBPROCESS_TIMEOUT_KEY",
           "max_pending_value", "serializer_kind", "subprocess_timeout_value"]

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
    """``topology.shellbolt.max.pending`` (read with :func:`stormpy.config.setting`, so the
    table's default when unset) when it is an integer >= 1; SettingError otherwise."""
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
