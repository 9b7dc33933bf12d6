"""stormpy: Apache Storm's model as a native Python runtime.

The package re-exports the public topology API and nothing else; the runtime, daemons and
connectors live in subpackages.
"""

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

__version__ = "0.1.0"

__all__ = [
    "BasicBolt", "Bolt", "BoltDeclarer", "ColumnBatch", "Component", "ComponentDeclarer",
    "CustomStreamGrouping",
    "DEFAULT_STREAM", "EmitError", "FailedException", "Fields", "Grouping", "InvalidTopologyError",
    "Spout", "Stream", "TopologyBuilder", "TopologyContext", "TopologySpec", "Tuple", "__version__",
]
