"""Transactional topologies (Storm's ``org.apache.storm.transactional``): batches processed in
parallel, committed strictly in transaction-id order, with state stored under its txid so a
replayed batch is applied once.

Built only on the public topology API: ``TransactionalTopologyBuilder.create_topology()`` returns
an ordinary ``TopologySpec`` (a coordinator spout, an emitter bolt and coordinated batch bolts)
that runs wherever a topology runs; its state lives in the state layer (:mod:`stormpy.state`),
by default where the topology's state lives (in a LocalCluster, its own memory). See
docs/transactional.md.

Removed in this release: ``MemoryStore`` (one store per name for the whole process, so two
LocalClusters shared transactional state); ``transactional.store: memory`` now keeps the state
in the memory of the LocalCluster (or worker process), and a store of the state layer stands in
for it in tests (``stormpy.state.MemoryBackend().named_store("transactional", "tx", id)``).
"""

from stormpy._public import publish
from stormpy.transactional._api import (
    BatchBolt,
    BatchOutputCollector,
    Committer,
    OpaquePartitionedTransactionalSpout,
    PartitionedTransactionalSpout,
    TransactionalSpout,
)
from stormpy.transactional._attempt import TransactionAttempt
from stormpy.transactional._builder import TransactionalTopologyBuilder
from stormpy.transactional._memory import MemoryTransactionalSpout
from stormpy.transactional._settings import TRANSACTIONAL_CONFIG
from stormpy.transactional._state import (
    OpaqueValue,
    SqliteState,
    TransactionalState,
    TransactionalValue,
    ZkState,
)
from stormpy.transactional._store import StoreUnavailable

__all__ = [
    "BatchBolt", "BatchOutputCollector", "Committer", "MemoryTransactionalSpout",
    "OpaquePartitionedTransactionalSpout", "OpaqueValue", "PartitionedTransactionalSpout",
    "SqliteState", "StoreUnavailable", "TRANSACTIONAL_CONFIG", "TransactionAttempt", "TransactionalSpout",
    "TransactionalState", "TransactionalTopologyBuilder", "TransactionalValue", "ZkState",
]

publish(__name__, globals())
