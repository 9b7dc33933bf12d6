"""Transactional topologies (Storm's ``org.apache.storm.transactional``): batches processed in
parallel, committed strictly in transaction-id order, with state stored under its txid so a
replayed batch is applied once.

Built only on the public topology API: ``TransactionalTopologyBuilder.create_topology()`` returns
an ordinary ``TopologySpec`` (a coordinator spout, an emitter bolt and coordinated batch bolts)
that runs wherever a topology runs. See docs/transactional.md.
"""

from stormpy.transactional.api import (
    BatchBolt,
    BatchOutputCollector,
    Committer,
    OpaquePartitionedTransactionalSpout,
    PartitionedTransactionalSpout,
    TransactionalSpout,
)
from stormpy.transactional.attempt import TransactionAttempt
from stormpy.transactional.builder import TransactionalTopologyBuilder
from stormpy.transactional.memory import MemoryTransactionalSpout
from stormpy.transactional.settings import TRANSACTIONAL_CONFIG
from stormpy.transactional.state import (
    OpaqueValue,
    SqliteState,
    TransactionalState,
    TransactionalValue,
    ZkState,
)
from stormpy.transactional.store import MemoryStore, StoreUnavailable

__all__ = [
    "BatchBolt", "BatchOutputCollector", "Committer", "MemoryStore", "MemoryTransactionalSpout",
    "OpaquePartitionedTransactionalSpout", "OpaqueValue", "PartitionedTransactionalSpout",
    "SqliteState", "StoreUnavailable", "TRANSACTIONAL_CONFIG", "TransactionAttempt", "TransactionalSpout",
    "TransactionalState", "TransactionalTopologyBuilder", "TransactionalValue", "ZkState",
]
