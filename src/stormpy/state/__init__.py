"""The state layer, and stateful bolts on it.

One state-store layer (:mod:`stormpy.state.base`) with three backends: memory
(:class:`MemoryBackend`, owned by a LocalCluster instance or a worker process), SQLite
(:class:`SqliteStore`, a file) and ZooKeeper (:class:`ZkBackend`/:class:`ZkStore`, through the one
ZooKeeper client of :mod:`stormpy.cluster.storage`). It is what ``context.state_store`` and
``context.state_backend`` give components, and what stateful bolts, transactional topologies and
the Kinesis spout's checkpoints keep their state in.

Stateful bolts (Storm 2.x's ``IStatefulBolt``, ``KeyValueState`` and checkpoint protocol): a
topology with a :class:`StatefulBolt` built by ``TopologyBuilder`` gets the checkpoint spout and
executors automatically; ``topology.state.provider`` picks the store (memory, sqlite, zookeeper).
See docs/windowing-state.md.

Renamed in this release: ``DocStore`` is :class:`Store` and ``SqliteDocStore`` is
:class:`SqliteStore` (the old names still work); ``MemoryDocStore`` (shared by the whole process)
is gone: memory state belongs to a :class:`MemoryBackend`; ``ZkDocStore(hosts, root)`` is
:func:`open_zk_store`; ``stormpy.topology.state.MemoryStateBackend`` is :class:`MemoryBackend`;
``stormpy.cluster.statestore.ZkStateBackend`` is :class:`ZkBackend`.
"""

from stormpy.state.api import StatefulBolt
from stormpy.state.base import Store
from stormpy.state.bolt import CheckpointTupleForwarder, StatefulBoltExecutor
from stormpy.state.checkpoint import CHECKPOINT_COMPONENT, CHECKPOINT_STREAM, CheckpointSpout
from stormpy.state.kv import KeyValueState
from stormpy.state.memory import MemoryBackend, MemoryStore
from stormpy.state.provider import open_store
from stormpy.state.settings import StateSettings, state_settings
from stormpy.state.sqlite import SqliteStore
from stormpy.state.wiring import add_checkpointing
from stormpy.state.zookeeper import ZkBackend, ZkStore, open_zk_store

#: Earlier names (see the module doc).
DocStore = Store
SqliteDocStore = SqliteStore

__all__ = ["CHECKPOINT_COMPONENT", "CHECKPOINT_STREAM", "CheckpointSpout",
           "CheckpointTupleForwarder", "DocStore", "KeyValueState", "MemoryBackend", "MemoryStore",
           "SqliteDocStore", "SqliteStore", "StateSettings", "StatefulBolt",
           "StatefulBoltExecutor", "Store", "ZkBackend", "ZkStore", "add_checkpointing",
           "open_store", "open_zk_store", "state_settings"]
