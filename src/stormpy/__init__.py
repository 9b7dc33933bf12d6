"""stormpy: Apache Storm's model as a native Python runtime.

The package re-exports the public topology API and nothing else; the runtime, daemons and
connectors live in subpackages.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _distribution_version

from stormpy import _native  # noqa: F401 - first: picks compiled or source tuple-path modules
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

#: the installed distribution's version (written once, in pyproject.toml)
try:
    __version__ = _distribution_version("stormpy-runtime")
except PackageNotFoundError:  # sources never installed (a bare checkout on sys.path)
    __version__ = "0+unknown"

__all__ = [
    "BasicBolt", "Bolt", "BoltDeclarer", "ColumnBatch", "Component", "ComponentDeclarer",
    "CustomStreamGrouping",
    "DEFAULT_STREAM", "EmitError", "FailedException", "Fields", "Grouping", "InvalidTopologyError",
    "Spout", "Stream", "TopologyBuilder", "TopologyContext", "TopologySpec", "Tuple", "__version__",
]
