"""What users import to describe a topology: pure description, no sockets, no ZooKeeper."""

from stormpy._public import publish
from stormpy.topology._builder import BoltDeclarer, ComponentDeclarer, TopologyBuilder
from stormpy.topology._columns import ColumnBatch
from stormpy.topology._component import BasicBolt, Bolt, Component, CustomStreamGrouping, Spout
from stormpy.topology._context import TopologyContext
from stormpy.topology._errors import EmitError, FailedException, InvalidTopologyError
from stormpy.topology._fields import Fields
from stormpy.topology._grouping import Grouping
from stormpy.topology._hooks import TaskHook
from stormpy.topology._metrics_consumer import IMetricsConsumer
from stormpy.topology._offloop import BackgroundJob, OffLoop
from stormpy.topology._spec import TopologySpec
from stormpy.topology._streams import Stream
from stormpy.topology._tuple import DEFAULT_STREAM, Tuple

__all__ = [
    "BackgroundJob", "BasicBolt", "Bolt", "BoltDeclarer", "ColumnBatch", "Component", "ComponentDeclarer",
    "CustomStreamGrouping", "DEFAULT_STREAM", "EmitError", "FailedException", "Fields", "Grouping",
    "IMetricsConsumer", "InvalidTopologyError", "OffLoop", "Spout", "Stream", "TaskHook",
    "TopologyBuilder", "TopologyContext", "TopologySpec", "Tuple",
]

publish(__name__, globals())
