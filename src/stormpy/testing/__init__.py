"""The public test kit: in-process LocalCluster, complete_topology with mocked sources, feeder
spouts, capture bolts, simulated time, quiet (tracked) waits, condition waits and free ports."""

from stormpy.testing.complete import CompleteResult, complete_topology
from stormpy.testing.components import Capture, FeederSpout, FixedTupleSpout
from stormpy.testing.local_cluster import LocalCluster, TopologyNotFound
from stormpy.testing.ports import free_port, free_ports
from stormpy.testing.waiting import WaitTimeout, stays_unchanged, wait_for
from stormpy.worker.clock import SimulatedClock

__all__ = ["Capture", "CompleteResult", "FeederSpout", "FixedTupleSpout", "LocalCluster",
           "SimulatedClock", "TopologyNotFound", "WaitTimeout", "complete_topology", "free_port",
           "free_ports", "stays_unchanged", "wait_for"]
