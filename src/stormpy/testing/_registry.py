"""Process-wide registry that lets test handles (feeders, captures) share state with the
component instances the runtime constructs from plain keyword arguments (no pickling).

Only meaningful in local mode, where the test and the worker share a process.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

_lock = threading.Lock()
_objects: dict[str, Any] = {}


def register(obj: Any) -> str:
    """Store ``obj`` and return the key that components receive."""
    key = uuid.uuid4().hex
    with _lock:
        _objects[key] = obj
    return key


def lookup(key: str) -> Any:
    """The registered object; KeyError explaining local-mode-only use otherwise."""
    try:
        return _objects[key]
    except KeyError:
        raise KeyError(f"no registered test object {key!r}: testing handles (FeederSpout, Capture) "
                       "only work in local mode, in the process that created them") from None


def unregister(key: str) -> None:
    with _lock:
        _objects.pop(key, None)
