"""Pins the public names: the top-level package and the test kit."""

import stormpy
import stormpy.testing


def test_top_level_names() -> None:
    assert sorted(stormpy.__all__) == sorted([
        "BasicBolt", "Bolt", "BoltDeclarer", "ColumnBatch", "Component", "ComponentDeclarer",
        "CustomStreamGrouping", "DEFAULT_STREAM", "EmitError", "FailedException", "Fields",
        "Grouping", "InvalidTopologyError", "Spout", "Stream", "TopologyBuilder",
        "TopologyContext", "TopologySpec", "Tuple", "__version__",
    ])
    for name in stormpy.__all__:
        assert hasattr(stormpy, name)


def test_testing_kit_names() -> None:
    assert sorted(stormpy.testing.__all__) == sorted([
        "AckFailMapTracker", "AckTracker", "Capture", "CompleteResult", "Emitted", "FeederSpout",
        "FixedTupleSpout", "LocalCluster", "MockedSources", "RecordingCollector", "SimulatedClock",
        "TopologyNotFound", "TrackedTopology", "TrackingSpout", "WaitTimeout", "complete_topology",
        "free_port", "free_ports", "simulated_time", "stays_unchanged", "test_tuple",
        "tracked_wait", "wait_for",
    ])
    for name in stormpy.testing.__all__:
        assert hasattr(stormpy.testing, name)


def test_component_clock_names() -> None:
    import stormpy.topology.clock as clock
    assert sorted(clock.__all__) == sorted(["Clock", "SimulatedClock", "current_clock", "now",
                                            "simulated_time", "simulating", "sleep"])
