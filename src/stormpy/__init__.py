"""stormpy: Apache Storm's model as a native Python runtime.

The package re-exports the public topology API and nothing else; the runtime, daemons and
connectors live in subpackages.
"""

from typing import Any

from stormpy import _native  # noqa: F401 - first: picks compiled or source tuple-path modules
from stormpy._public import publish
from stormpy.topology import (
    DEFAULT_STREAM,
    BasicBolt,
    Bolt,
    BoltDeclarer,
    ColumnBatch,
    Component,
    ComponentDeclarer,
    CustomStreamGrouping,
    EmitError,
    FailedException,
    Fields,
    Grouping,
    InvalidTopologyError,
    Spout,
    Stream,
    TopologyBuilder,
    TopologyContext,
    TopologySpec,
    Tuple,
)


def __getattr__(name: str) -> Any:
    """``stormpy.__version__``: the installed distribution's version (written once, in
    pyproject.toml), read on first use: ``importlib.metadata`` costs every worker process ~4 MB
    and ~0.1 s to import, and only the CLI and users ask for the version."""
    if name != "__version__":
        raise AttributeError(f"module 'stormpy' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("stormpy-runtime")
    except PackageNotFoundError:  # sources never installed (a bare checkout on sys.path)
        found = "0+unknown"
    globals()["__version__"] = found
    return found

__all__ = [
    "BasicBolt", "Bolt", "BoltDeclarer", "ColumnBatch", "Component", "ComponentDeclarer",
    "CustomStreamGrouping",
    "DEFAULT_STREAM", "EmitError", "FailedException", "Fields", "Grouping", "InvalidTopologyError",
    "Spout", "Stream", "TopologyBuilder", "TopologyContext", "TopologySpec", "Tuple", "__version__",
]

publish(__name__, globals())
