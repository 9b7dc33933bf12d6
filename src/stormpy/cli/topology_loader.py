"""Loading a user's topology from ``PATH MODULE[:ATTR]`` (shared by ``local`` and ``jar``)."""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stormpy.config import ConfigError
from stormpy.topology import InvalidTopologyError, TopologyBuilder, TopologySpec


class TopologyLoadError(Exception):
    """The module or attribute cannot be loaded, or is not a topology; the message says which."""


@dataclass
class LoadedTopology:
    spec: TopologySpec
    config: dict[str, Any]
    module: str
    attr: str


def load_topology(path: str | Path, target: str) -> LoadedTopology:
    """Import ``MODULE`` with ``path`` first on ``sys.path`` and take ``ATTR`` (default
    ``topology``): a TopologySpec, a TopologyBuilder, or a no-argument callable returning either.
    A module-level ``config`` dict becomes the topology's base config.

    TopologyLoadError when the module cannot be imported ("cannot import module ..."), lacks the
    attribute or it is no topology; an InvalidTopologyError or ConfigError (SettingError) that
    importing the module raised is passed on as it is, since the import itself worked."""
    root = Path(path).resolve()
    if not root.exists():
        raise TopologyLoadError(f"topology path {str(path)!r} does not exist")
    module_name, _, attr = target.partition(":")
    attr = attr or "topology"
    base = str(root if root.is_dir() else root.parent)
    if base not in sys.path:
        sys.path.insert(0, base)
    try:
        module = importlib.import_module(module_name)
    except (InvalidTopologyError, ConfigError):
        raise  # a check the module's code ran (a builder, a settings class): its message says it
    except Exception as exc:
        raise TopologyLoadError(f"cannot import module {module_name!r} from {base}: "
                                f"{type(exc).__name__}: {exc}") from exc
    try:
        obj = getattr(module, attr)
    except AttributeError:
        raise TopologyLoadError(f"module {module_name!r} has no attribute {attr!r}") from None
    if callable(obj) and not isinstance(obj, TopologySpec | TopologyBuilder | type):
        obj = obj()
    if isinstance(obj, TopologyBuilder):
        obj = obj.create_topology()
    if not isinstance(obj, TopologySpec):
        raise TopologyLoadError(f"{module_name}:{attr} is {type(obj).__name__}, not a topology "
                                "(expected a TopologySpec, a TopologyBuilder, or a function "
                                "returning one)")
    obj.validate()
    config = getattr(module, "config", None) or {}
    if not isinstance(config, dict):
        raise TopologyLoadError(f"{module_name}.config must be a dict, got {type(config).__name__}")
    return LoadedTopology(obj, dict(config), module_name, attr)
