"""Trident (Storm's ``org.apache.storm.trident``): stream operations over transactional batches
with exactly-once state, on :mod:`stormpy.transactional` and :mod:`stormpy.state`.

``TridentTopology().new_stream(txid, spout)`` gives a :class:`Stream`; ``each``/``map``/
``flat_map``/``filter``/... chain operations, ``group_by(...).persistent_aggregate(...)`` keeps
state, and ``build()`` returns an ordinary ``TopologySpec``. See docs/trident.md.
"""

from stormpy._public import publish
from stormpy.trident._builtin import Count, Debug, FirstN, Max, Min, Sum
from stormpy.trident._operation import (
    Aggregator,
    CombinerAggregator,
    Consumer,
    Filter,
    FlatMapFunction,
    Function,
    MapFunction,
    Operation,
    ReducerAggregator,
    TridentCollector,
    TridentTuple,
)
from stormpy.trident._spout import FeederBatchSpout, FixedBatchSpout
from stormpy.trident._state import (
    NON_TRANSACTIONAL,
    OPAQUE,
    TRANSACTIONAL,
    MapGet,
    MapPutUpdater,
    MapState,
    ParquetWrite,
    QueryFunction,
    StateFactory,
    StateUpdater,
    TupleCollectionGet,
    read_state,
)
from stormpy.trident._stream import ChainedAggregatorDeclarer, GroupedStream, Stream, TridentState
from stormpy.trident._topology import TridentTopology

__all__ = [
    "Aggregator", "ChainedAggregatorDeclarer", "CombinerAggregator", "Consumer", "Count", "Debug",
    "FeederBatchSpout", "Filter", "FirstN", "FixedBatchSpout", "FlatMapFunction", "Function",
    "GroupedStream", "MapFunction", "MapGet", "MapPutUpdater", "MapState", "Max", "Min",
    "NON_TRANSACTIONAL", "OPAQUE", "Operation", "ParquetWrite", "QueryFunction", "ReducerAggregator",
    "StateFactory", "StateUpdater", "Stream", "Sum", "TRANSACTIONAL", "TridentCollector",
    "TridentState", "TridentTopology", "TridentTuple", "TupleCollectionGet", "read_state",
]

publish(__name__, globals())
