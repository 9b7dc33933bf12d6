"""Referencing classes by import path ("package.module:QualName")."""

from __future__ import annotations

import importlib
from typing import Any


def class_path(cls: type) -> str:
    """The import path of ``cls`` as ``module:qualname``."""
    return f"{cls.__module__}:{cls.__qualname__}"


def import_object(path: str) -> Any:
    """Import ``module:attr.sub`` (or ``module.attr``); ImportError names the path on failure."""
    if ":" in path:
        module_name, _, attr = path.partition(":")
    else:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ImportError(f"{path!r} is not an import path like 'package.module:Name'")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(f"cannot import module {module_name!r} (from {path!r}): {exc}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ImportError(f"module {module_name!r} has no attribute {attr!r} (from {path!r})") \
                from None
    return obj
