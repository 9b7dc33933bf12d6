"""The state layer, and stateful bolts on it.

One state-store layer (:mod:`stormpy.state._base`) with four backends: memory
(:class:`MemoryBackend`, owned by a LocalCluster instance or a worker process), SQLite
(:class:`SqliteStore`, a file), ZooKeeper (:class:`ZkBackend`/:class:`ZkStore`, through the one
ZooKeeper client of :mod:`stormpy.cluster.storage`) and Redis (:class:`RedisStore`, redis-py).
It is what ``context.state_store`` and ``context.state_backend`` give components, and what
stateful bolts, transactional topologies, Trident map states and the Kinesis spout's checkpoints
keep their state in.

Stateful bolts (Storm 2.x's ``IStatefulBolt``, ``KeyValueState`` and checkpoint protocol): a
topology with a :class:`StatefulBolt` built by ``TopologyBuilder`` gets the checkpoint spout and
executors automatically; ``topology.state.provider`` picks the store (memory, sqlite, zookeeper, redis).
See docs/windowing-state.md.

The errors of every store (the contract of ``context.state_store``): :class:`StateStoreError` and
its kinds :class:`StateKeyError`, :class:`StateValueError`, :class:`CorruptStateError` and
:class:`StateUnavailableError` (the backing service cannot be reached in time).

Renamed in this release: ``DocStore`` is :class:`Store` and ``SqliteDocStore`` is
:class:`SqliteStore` (the old names still work); ``MemoryDocStore`` (shared by the whole process)
is gone: memory state belongs to a :class:`MemoryBackend`; ``ZkDocStore(hosts, root)`` is
:func:`open_zk_store`; ``stormpy.topology._state.MemoryStateBackend`` is :class:`MemoryBackend`;
``stormpy.cluster.statestore.ZkStateBackend`` is :class:`ZkBackend`.
"""

from stormpy._public import publish
from stormpy.state._api import StatefulBolt
from stormpy.state._base import Store
from stormpy.state._checkpoint import CHECKPOINT_COMPONENT, CHECKPOINT_STREAM, CheckpointSpout
from stormpy.state._kv import KeyValueState
from stormpy.state._memory import MemoryBackend, MemoryStore
from stormpy.state._provider import open_store
from stormpy.state._redis_store import RedisConfig, RedisStore, open_redis_store, redis_config
from stormpy.state._settings import StateSettings, state_settings
from stormpy.state._sqlite import SqliteStore
from stormpy.state._wiring import add_checkpointing
from stormpy.state._zookeeper import ZkBackend, ZkStore, open_zk_store
from stormpy.topology._state import (
    CorruptStateError,
    StateKeyError,
    StateStoreError,
    StateUnavailableError,
    StateValueError,
)

#: Earlier names (see the module doc).
DocStore = Store
SqliteDocStore = SqliteStore

# the executors that run stateful bolts (stormpy.state._bolt) are internal: add_checkpointing
# wires them in
__all__ = ["CHECKPOINT_COMPONENT", "CHECKPOINT_STREAM", "CheckpointSpout", "CorruptStateError",
           "DocStore", "KeyValueState", "MemoryBackend", "MemoryStore", "RedisConfig", "RedisStore",
           "SqliteDocStore", "SqliteStore", "StateKeyError", "StateSettings", "StateStoreError",
           "StateUnavailableError", "StateValueError", "StatefulBolt", "Store", "ZkBackend",
           "ZkStore", "add_checkpointing", "open_redis_store", "open_store", "open_zk_store",
           "redis_config", "state_settings"]

publish(__name__, globals())
