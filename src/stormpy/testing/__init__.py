"""The public test kit (see docs/testing-kit.md): in-process LocalCluster (from
:mod:`stormpy.local`), complete_topology with mocked sources on any stream, feeder spouts, capture
bolts, tracked topologies and ack trackers, simulated time, unit-testing one component
(test_tuple, RecordingCollector), condition waits and free ports (from :mod:`stormpy.host`)."""

from stormpy._public import publish
from stormpy.host.ports import free_port, free_ports
from stormpy.host.waiting import WaitTimeout, stays_unchanged, wait_for
from stormpy.local._cluster import LocalCluster, TopologyNotFound
from stormpy.testing._acks import AckFailMapTracker
from stormpy.testing._complete import CompleteResult, MockedSources, complete_topology
from stormpy.testing._components import Capture, FeederSpout, FixedTupleSpout
from stormpy.testing._tracking import AckTracker, TrackedTopology, TrackingSpout, tracked_wait
from stormpy.testing._unit import Emitted, RecordingCollector, test_tuple
from stormpy.topology.clock import SimulatedClock, simulated_time

__all__ = ["AckFailMapTracker", "AckTracker", "Capture", "CompleteResult", "Emitted",
           "FeederSpout", "FixedTupleSpout", "LocalCluster", "MockedSources", "RecordingCollector",
           "SimulatedClock", "TopologyNotFound", "TrackedTopology", "TrackingSpout", "WaitTimeout",
           "complete_topology", "free_port", "free_ports", "simulated_time", "stays_unchanged",
           "test_tuple", "tracked_wait", "wait_for"]

publish(__name__, globals())
