"""The public test kit: in-process LocalCluster (from :mod:`stormpy.local`), complete_topology
with mocked sources, feeder spouts, capture bolts, simulated time and quiet (tracked) waits."""

from stormpy.local.cluster import LocalCluster, TopologyNotFound
from stormpy.testing.complete import CompleteResult, complete_topology
from stormpy.testing.components import Capture, FeederSpout, FixedTupleSpout
from stormpy.worker.clock import SimulatedClock

__all__ = ["Capture", "CompleteResult", "FeederSpout", "FixedTupleSpout", "LocalCluster",
           "SimulatedClock", "TopologyNotFound", "complete_topology"]
