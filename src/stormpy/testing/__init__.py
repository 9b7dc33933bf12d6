"""The public test kit: in-process LocalCluster (from :mod:`stormpy.local`), complete_topology
with mocked sources, feeder spouts, capture bolts, simulated time, quiet (tracked) waits, condition
waits and free ports (from :mod:`stormpy.host`)."""

from stormpy.host.ports import free_port, free_ports
from stormpy.host.waiting import WaitTimeout, stays_unchanged, wait_for
from stormpy.local.cluster import LocalCluster, TopologyNotFound
from stormpy.testing.complete import CompleteResult, complete_topology
from stormpy.testing.components import Capture, FeederSpout, FixedTupleSpout
from stormpy.worker.clock import SimulatedClock

__all__ = ["Capture", "CompleteResult", "FeederSpout", "FixedTupleSpout", "LocalCluster",
           "SimulatedClock", "TopologyNotFound", "WaitTimeout", "complete_topology", "free_port",
           "free_ports", "stays_unchanged", "wait_for"]
