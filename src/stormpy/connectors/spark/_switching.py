"""Python's thread switch interval while Spark bolts (and ``SparkCommitterBolt`` tasks) run in a
process.

A Spark bolt's batch runs on a thread of its own (the off-loop seam) that talks to Spark over
py4j: it gives the GIL up on every call and needs it back for each reply. While the executor
loop keeps a CPU busy (filling the next batch), the interpreter hands the GIL to a waiting
thread only after its switch interval (``sys.setswitchinterval``, 5 ms by default), so every
reply waits up to that long. ``lower`` sets a shorter interval for as long as some Spark bolt
holds it; the last ``restore`` puts back the interval that was there before the first ``lower``.
``configured`` reads the interval a component holds from its topology config
(``spark.stormpy.switch.interval.secs``). The interval is the process's: in local mode it is the
user's process too (documented in docs/spark.md). Thread-safe.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping
from typing import Any

from stormpy.config import SettingError
from stormpy.connectors.spark._settings import DEFAULT_SWITCH_INTERVAL_SECS, switch_interval_secs

_lock = threading.Lock()
_holders = 0
#: the interval before the first holder lowered it (None: no holder)
_saved: float | None = None


#: ``spark.stormpy.switch.interval.secs`` when a topology does not set it
DEFAULT_INTERVAL = DEFAULT_SWITCH_INTERVAL_SECS


def configured(conf: Mapping[str, Any], component: str) -> float | None:
    """The switch interval a Spark component of ``conf`` holds (None: none; the setting may be
    None or 0). SettingError naming the setting (and ``component`` in its problem) for anything
    but a number of seconds >= 0."""
    try:
        return switch_interval_secs(conf)
    except SettingError as exc:
        raise SettingError(exc.setting, f"{exc.problem} (component {component!r})") from None


def lower(seconds: float | None) -> bool:
    """Hold the process's switch interval at ``seconds`` or less (``None`` or ``<= 0``: leave it
    alone and hold nothing). Returns whether a hold was taken (then call ``restore`` once)."""
    global _holders, _saved
    if seconds is None or seconds <= 0:
        return False
    with _lock:
        current = sys.getswitchinterval()
        if _holders == 0:
            _saved = current
        _holders += 1
        if seconds < current:
            sys.setswitchinterval(seconds)
    return True


def restore() -> None:
    """Drop one hold; the last one puts back the interval saved by the first ``lower``."""
    global _holders, _saved
    with _lock:
        if _holders == 0:
            return
        _holders -= 1
        if _holders == 0 and _saved is not None:
            sys.setswitchinterval(_saved)
            _saved = None
