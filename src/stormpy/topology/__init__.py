"""What users import to describe a topology: pure description, no sockets, no ZooKeeper."""

from stormpy.topology.builder import BoltDeclarer, ComponentDeclarer, TopologyBuilder
from stormpy.topology.columns import ColumnBatch
from stormpy.topology.component import BasicBolt, Bolt, Component, CustomStreamGrouping, Spout
from stormpy.topology.context import TopologyContext
from stormpy.topology.errors import EmitError, FailedException, InvalidTopologyError
from stormpy.topology.fields import Fields
from stormpy.topology.grouping import Grouping
from stormpy.topology.hooks import TaskHook
from stormpy.topology.metrics_consumer import IMetricsConsumer
from stormpy.topology.offloop import BackgroundJob, OffLoop
from stormpy.topology.spec import TopologySpec
from stormpy.topology.streams import Stream
from stormpy.topology.tuple import DEFAULT_STREAM, Tuple

__all__ = [
    "BackgroundJob", "BasicBolt", "Bolt", "BoltDeclarer", "ColumnBatch", "Component", "ComponentDeclarer",
    "CustomStreamGrouping", "DEFAULT_STREAM", "EmitError", "FailedException", "Fields", "Grouping",
    "IMetricsConsumer", "InvalidTopologyError", "OffLoop", "Spout", "Stream", "TaskHook",
    "TopologyBuilder", "TopologyContext", "TopologySpec", "Tuple",
]
