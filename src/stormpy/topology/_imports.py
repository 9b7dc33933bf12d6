"""Referencing classes by import path ("package.module:QualName").

A class defined inside a function (a closure, a class local to a test) has no import path. Its
path names it with the ``<locals>`` marker and its identity (``module:fn.<locals>.Cls@1f2e``), and
the class is kept in this process's registry of local classes, so the in-process runtime
(LocalCluster, complete_topology) resolves it; any other process cannot, and topologies naming
one are refused on the way to a cluster (:func:`is_local_path`, ``TopologySpec.from_doc``).

A path into stormpy written before its internal modules took their ``_`` prefix
(``stormpy.pkg.mod:Class`` for what is now ``stormpy.pkg._mod:Class``: a spec stored by an older
Nimbus, a path in a user's config) still resolves: when a ``stormpy.`` module is missing,
:func:`import_object` tries the same module with a ``_`` before its last part.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

#: How a class defined inside a function is told to move for a cluster (part of every refusal).
MOVE_TO_MODULE_LEVEL = ("is defined inside a function, so only this process can find it (it runs "
                        "in LocalCluster and complete_topology); a cluster's workers import "
                        "component classes by path: define it at module level")

_lock = threading.Lock()
_local: dict[str, type] = {}


def is_local_path(path: str) -> bool:
    """True for the path of a class defined inside a function."""
    return "<locals>" in path


def class_path(cls: type) -> str:
    """The import path of ``cls`` as ``module:qualname``; for a class defined inside a function,
    a process-local path (the class is registered so :func:`import_object` finds it here)."""
    path = f"{cls.__module__}:{cls.__qualname__}"
    if not is_local_path(path):
        return path
    path = f"{path}@{id(cls):x}"
    with _lock:
        _local[path] = cls  # kept for the life of the process: the spec names it by this path
    return path


def import_module(name: str) -> Any:
    """``importlib.import_module(name)``; a missing ``stormpy.a.b`` is looked for as
    ``stormpy.a._b`` (the module's internal name) before the first error is raised."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        package, _, last = name.rpartition(".")
        if exc.name != name or not package.startswith("stormpy") or last.startswith("_"):
            raise
        try:
            return importlib.import_module(f"{package}._{last}")
        except ModuleNotFoundError:
            raise exc from None


def import_object(path: str) -> Any:
    """Import ``module:attr.sub`` (or ``module.attr``), or find a registered local class;
    ImportError names the path on failure."""
    if is_local_path(path):
        try:
            return _local[path]
        except KeyError:
            name = path.partition(":")[2].partition("@")[0] or path
            raise ImportError(f"class {name} ({path!r}) {MOVE_TO_MODULE_LEVEL}") from None
    if ":" in path:
        module_name, _, attr = path.partition(":")
    else:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ImportError(f"{path!r} is not an import path like 'package.module:Name'")
    try:
        obj: Any = import_module(module_name)
    except ImportError as exc:
        raise ImportError(f"cannot import module {module_name!r} (from {path!r}): {exc}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ImportError(f"module {module_name!r} has no attribute {attr!r} (from {path!r})") \
                from None
    return obj
