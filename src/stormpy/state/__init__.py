"""Stateful bolts with checkpointed state (Storm 2.x's ``IStatefulBolt``, ``KeyValueState`` and
checkpoint protocol), and the durable document stores shared with transactional topologies.

A topology with a :class:`StatefulBolt` built by ``TopologyBuilder`` gets the checkpoint spout and
executors automatically; ``topology.state.provider`` picks the store (memory, sqlite, zookeeper).
See docs/windowing-state.md.
"""

from stormpy.state.api import StatefulBolt
from stormpy.state.bolt import CheckpointTupleForwarder, StatefulBoltExecutor
from stormpy.state.checkpoint import CHECKPOINT_COMPONENT, CHECKPOINT_STREAM, CheckpointSpout
from stormpy.state.kv import KeyValueState
from stormpy.state.provider import open_store
from stormpy.state.stores import DocStore, MemoryDocStore, SqliteDocStore, ZkDocStore
from stormpy.state.wiring import add_checkpointing

__all__ = ["CHECKPOINT_COMPONENT", "CHECKPOINT_STREAM", "CheckpointSpout",
           "CheckpointTupleForwarder", "DocStore", "KeyValueState", "MemoryDocStore",
           "SqliteDocStore", "StatefulBolt", "StatefulBoltExecutor", "ZkDocStore",
           "add_checkpointing", "open_store"]
