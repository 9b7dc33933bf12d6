"""Pins the public names: the top-level package and the test kit."""

import stormpy
import stormpy.testing


def test_top_level_names() -> None:
    assert sorted(stormpy.__all__) == sorted([
        "BasicBolt", "Bolt", "BoltDeclarer", "Component", "ComponentDeclarer",
        "CustomStreamGrouping", "DEFAULT_STREAM", "EmitError", "FailedException", "Fields",
        "Grouping", "InvalidTopologyError", "Spout", "Stream", "TopologyBuilder",
        "TopologyContext", "TopologySpec", "Tuple", "__version__",
    ])
    for name in stormpy.__all__:
        assert hasattr(stormpy, name)


def test_testing_kit_names() -> None:
    for name in ("LocalCluster", "complete_topology", "FeederSpout", "Capture", "SimulatedClock",
                 "FixedTupleSpout", "CompleteResult", "wait_for", "stays_unchanged", "WaitTimeout",
                 "free_port", "free_ports"):
        assert name in stormpy.testing.__all__
