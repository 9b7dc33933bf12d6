"""Pins the public surface: the ``__all__`` of every public package, as literal sorted lists,
and that what they export shows its public name.

Adding a name to a public package's ``__all__``, or taking one out, fails this test until the
list here changes with it, so a change to what users may import is a visible decision. Internal
machinery stays importable from its own module (``stormpy.windowing._bolt.WindowedBoltExecutor``,
``stormpy.state._bolt.StatefulBoltExecutor``, ``stormpy.connectors.kinesis._state.StateManager``,
``stormpy.connectors.kafka._client.KafkaConsumerClient``) without being public.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import json
import os
import pickle
import pkgutil
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

import pytest

import stormpy
import stormpy.connectors
from stormpy._public import _PUBLISHED, publish, published
from stormpy.topology._imports import class_path, import_object

PUBLIC: dict[str, list[str]] = {
    "stormpy": [
        "BasicBolt", "Bolt", "BoltDeclarer", "ColumnBatch", "Component", "ComponentDeclarer",
        "CustomStreamGrouping", "DEFAULT_STREAM", "EmitError", "FailedException", "Fields",
        "Grouping", "InvalidTopologyError", "Spout", "Stream", "TopologyBuilder", "TopologyContext",
        "TopologySpec", "Tuple", "__version__",
    ],
    "stormpy.topology": [
        "BackgroundJob", "BasicBolt", "Bolt", "BoltDeclarer", "ColumnBatch", "Component",
        "ComponentDeclarer", "CustomStreamGrouping", "DEFAULT_STREAM", "EmitError",
        "FailedException", "Fields", "Grouping", "IMetricsConsumer", "InvalidTopologyError",
        "OffLoop", "Spout", "Stream", "TaskHook", "TopologyBuilder", "TopologyContext",
        "TopologySpec", "Tuple",
    ],
    "stormpy.topology.clock": [
        "Clock", "SimulatedClock", "current_clock", "now", "simulated_time", "simulating", "sleep",
    ],
    "stormpy.testing": [
        "AckFailMapTracker", "AckTracker", "Capture", "CompleteResult", "Emitted", "FeederSpout",
        "FixedTupleSpout", "LocalCluster", "MockedSources", "RecordingCollector", "SimulatedClock",
        "TopologyNotFound", "TrackedTopology", "TrackingSpout", "WaitTimeout", "complete_topology",
        "free_port", "free_ports", "simulated_time", "stays_unchanged", "test_tuple",
        "tracked_wait", "wait_for",
    ],
    # local mode and the development servers users start; how their processes are found and
    # ended is internal (free_ports is the test kit's)
    "stormpy.local": [
        "KafkaBroker", "LocalCluster", "ProcessCluster", "RedisServer", "SparkStandalone",
        "TopologyNotFound", "start_broker",
    ],
    "stormpy.state": [
        "CHECKPOINT_COMPONENT", "CHECKPOINT_STREAM", "CheckpointSpout", "CorruptStateError",
        "DocStore", "KeyValueState", "MemoryBackend", "MemoryStore", "RedisConfig", "RedisStore",
        "SqliteDocStore", "SqliteStore", "StateKeyError", "StateSettings", "StateStoreError",
        "StateUnavailableError", "StateValueError", "StatefulBolt", "Store", "ZkBackend",
        "ZkStore", "add_checkpointing", "open_redis_store", "open_store", "open_zk_store",
        "redis_config", "state_settings",
    ],
    "stormpy.windowing": [
        "Count", "Duration", "IntervalJoinBolt", "JoinBolt", "LATE_FIELDS", "StatefulWindowedBolt",
        "StatefulWindowedBoltSpec", "Window", "WindowConfig", "WindowConfigError", "WindowManager",
        "WindowedBolt", "WindowedBoltSpec",
    ],
    "stormpy.transactional": [
        "BatchBolt", "BatchOutputCollector", "Committer", "MemoryTransactionalSpout",
        "OpaquePartitionedTransactionalSpout", "OpaqueValue", "PartitionedTransactionalSpout",
        "SqliteState", "StoreUnavailable", "TRANSACTIONAL_CONFIG", "TransactionAttempt",
        "TransactionalSpout", "TransactionalState", "TransactionalTopologyBuilder",
        "TransactionalValue", "ZkState",
    ],
    "stormpy.trident": [
        "Aggregator", "ChainedAggregatorDeclarer", "CombinerAggregator", "Consumer", "Count",
        "Debug", "FeederBatchSpout", "Filter", "FirstN", "FixedBatchSpout", "FlatMapFunction",
        "Function", "GroupedStream", "MapFunction", "MapGet", "MapPutUpdater", "MapState", "Max",
        "Min", "NON_TRANSACTIONAL", "OPAQUE", "Operation", "ParquetWrite", "QueryFunction",
        "ReducerAggregator", "StateFactory", "StateUpdater", "Stream", "Sum", "TRANSACTIONAL",
        "TridentCollector", "TridentState", "TridentTopology", "TridentTuple", "TupleCollectionGet",
        "read_state",
    ],
    "stormpy.multilang": [
        "JsonCodec", "MsgpackCodec", "PystormComponent", "ShellBolt", "ShellComponentError",
        "ShellSpout", "codec_named", "pystorm_component",
    ],
    # streamparse's names for a streamparse project (``from stormpy.multilang.streamparse import``)
    "stormpy.multilang.streamparse": [
        "BatchingBolt", "Bolt", "ComponentSpec", "Grouping", "ReliableSpout", "Spout", "Stream",
        "TicklessBatchingBolt", "Topology", "spec",
    ],
    # a shell component's command: ``python -m stormpy.multilang.pystorm_run module:Class``
    "stormpy.multilang.pystorm_run": [],
    "stormpy.connectors": [],
    "stormpy.connectors.kafka": [
        "DefaultRecordTranslator", "FieldNameBasedTupleToKafkaMapper", "FirstPollOffsetStrategy",
        "KAFKA_EXTRA", "KafkaBolt", "KafkaBoltConfig", "KafkaConfigError", "KafkaOpaqueSpout",
        "KafkaRecord", "KafkaRecordError", "KafkaSpout", "KafkaSpoutConfig", "KafkaSpoutMessageId",
        "KafkaTransactionalCommitterBolt", "KafkaTransactionalConfig",
        "KafkaTransactionalStateFactory", "KafkaTransactionalUpdater", "KafkaTuple",
        "KafkaTupleListener", "KafkaUnavailableError", "OffsetAndMetadata", "OffsetManager",
        "ProcessingGuarantee", "RecordTranslator", "RetryExponentialBackoff",
        "StringRecordTranslator", "TopicPartition", "TupleToKafkaMapper", "assign_round_robin",
        "commit_metadata", "require_confluent_kafka", "start_offset",
    ],
    "stormpy.connectors.kinesis": [
        "BufferedGetter", "Checkpoint", "CheckpointError", "CheckpointStore",
        "CheckpointUnavailable", "DefaultRecordScheme", "INITIAL_POSITIONS",
        "InflightRecordTracker", "KINESIS_EXTRA", "KinesisError", "KinesisRecord", "KinesisSpout",
        "KinesisSpoutConfig", "KinesisStreamError", "KinesisUnavailableError", "Position",
        "ShardGetter", "ShardInfo", "ZkCheckpointStore", "message_id", "parse_message_id",
        "require_boto3",
    ],
    "stormpy.connectors.spark": [
        "BatchConversionError", "BatchInfo", "BatchSource", "CLOSED_BY_COUNT", "CLOSED_BY_IDLE",
        "CLOSED_BY_TIME", "SPARK_CONFIG", "SPARK_EXTRA", "SparkBatchBolt", "SparkBatchTimeout",
        "SparkCommitterBolt", "SparkMasterUnreachable", "SparkUnavailableError", "batch_dataframe",
        "get_spark", "release_spark", "require_spark", "reset_spark", "retain_spark",
        "rows_to_arrow", "ship_code", "spark_running", "spark_session", "spark_settings",
        "stop_spark",
    ],
    "stormpy.ui": [],
    # the client side of the Nimbus protocol (Storm's storm-client holds NimbusClient)
    "stormpy.client": [
        "BundleDigest", "CONNECT_TIMEOUT_SECS", "NimbusClient", "await_worker_action",
        "download_bundle", "find_leader", "leader_first", "parse_address", "request_worker_action",
        "rpc_client", "rpc_settings", "seed_addresses", "upload_bundle",
    ],
}


@pytest.mark.parametrize("package", list(PUBLIC))
def test_the_public_names_of_each_package_are_pinned(package: str) -> None:
    module = importlib.import_module(package)
    names = list(module.__all__)
    assert sorted(names) == PUBLIC[package]
    assert len(set(names)) == len(names), f"{package}.__all__ lists a name twice"
    assert [n for n in names if not hasattr(module, n)] == [], f"{package}.__all__ names what it lacks"


#: packages users do not import: the runtime, the daemons and their plumbing; and stormpy.config,
#: unpinned as it was while it was one module (users reach SettingError, ConfigSection and the
#: readers by name; it has no __all__)
INTERNAL = ["stormpy.acker", "stormpy.bundle", "stormpy.cli", "stormpy.cluster", "stormpy.config",
            "stormpy.host", "stormpy.logviewer", "stormpy.messaging", "stormpy.nimbus", "stormpy.rpc",
            "stormpy.scheduler",
            "stormpy.supervisor", "stormpy.worker"]


def test_every_package_is_pinned_or_known_internal_and_the_lists_are_sorted() -> None:
    assert [p for p, names in PUBLIC.items() if names != sorted(names)] == []
    packages = {f"stormpy.{m.name}" for m in pkgutil.iter_modules(stormpy.__path__) if m.ispkg}
    packages |= {f"stormpy.connectors.{m.name}"
                 for m in pkgutil.iter_modules(stormpy.connectors.__path__) if m.ispkg}
    assert sorted(packages - set(PUBLIC) - set(INTERNAL)) == []  # a new package: decide which


def test_the_version_is_the_installed_distributions() -> None:
    assert stormpy.__version__ == importlib.metadata.version("stormpy-runtime")


# -- public names ---------------------------------------------------------------------------------
# Every class and function in the __all__ of a public package (and of stormpy.config, whose errors
# users catch) has a public module as its __module__, which exports it under that name: a
# traceback says stormpy.state.StateUnavailableError, not stormpy.topology._state.
# StateUnavailableError, and pickling and component class paths resolve through the package.
# Pinned on the compiled tuple path and the pure one: Tuple and ColumnBatch are mypyc classes
# when compiled, whose __module__ an extension could forbid setting.
NAMED = [*PUBLIC, "stormpy.config"]


def wrong_names(packages: list[str]) -> list[str]:
    """``package.name: module`` for each exported class or function whose ``__module__`` is not
    one of ``packages`` exporting it under its own name."""
    import importlib
    import inspect

    wrong = []
    for package in packages:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if not (isinstance(obj, type) or inspect.isroutine(obj)) or obj.__qualname__ != name:
                continue  # a constant, or an alias (DocStore = Store) named where it is defined
            home = obj.__module__
            if home not in packages or getattr(importlib.import_module(home), name, None) is not obj:
                wrong.append(f"{package}.{name}: {home}")
    return wrong


def test_every_exported_class_and_function_names_its_public_module() -> None:
    assert wrong_names(NAMED) == []


@pytest.mark.parametrize("pure", ["1", ""])
def test_public_names_on_the_pure_and_the_compiled_tuple_path(pure: str) -> None:
    """In a fresh process with ``STORMPY_PURE`` set and unset: the compiled path where the
    extensions are built (``make``), the sources otherwise."""
    code = (inspect.getsource(wrong_names) + "\n"
            "import json, stormpy._native as n\n"
            "from stormpy.topology import ColumnBatch, Tuple\n"
            f"print(json.dumps({{'compiled': n.COMPILED, 'wrong': wrong_names({NAMED!r}),\n"
            "                  'tuple': [Tuple.__module__, ColumnBatch.__module__],\n"
            "                  'file': sys.modules[Tuple.__module__ + '._tuple'].__file__}))\n")
    src = str(Path(stormpy.__file__).resolve().parents[1])
    env = {**os.environ, "STORMPY_PURE": pure,
           "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", "import sys\n" + code], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["compiled"] is not bool(pure) or not seen["compiled"]
    assert seen["file"].endswith(".py") is not seen["compiled"]
    assert seen["wrong"] == []
    assert seen["tuple"] == ["stormpy.topology", "stormpy.topology"]


def test_a_traceback_names_the_public_package() -> None:
    from stormpy.config import SettingError
    from stormpy.state import StateUnavailableError

    shown = traceback.format_exception_only(StateUnavailableError("redis 127.0.0.1:6379", "down"))
    assert shown[-1].startswith("stormpy.state.StateUnavailableError: ")
    shown = traceback.format_exception_only(SettingError("topology.workers", "must be >= 1"))
    assert shown[-1] == "stormpy.config.SettingError: topology.workers: must be >= 1\n"
    error = pickle.loads(pickle.dumps(SettingError("a.b", "bad")))
    assert type(error) is SettingError and str(error) == "a.b: bad"


def test_class_paths_of_public_classes_resolve_through_their_package() -> None:
    from stormpy.trident import Max
    from stormpy.windowing import JoinBolt

    assert class_path(JoinBolt) == "stormpy.windowing:JoinBolt"
    assert class_path(Max) == "stormpy.trident:Max"
    for package in PUBLIC:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, type) and obj.__qualname__ == name:
                assert import_object(class_path(obj)) is obj, (package, name)


def plain_function() -> None:
    """A function of this module, published under a made-up package name below."""


class Plain:
    pass


def test_publish_renames_only_what_it_may() -> None:
    assert {"stormpy.state", "stormpy.topology.clock", "stormpy.config"} <= published()
    namespace: dict[str, Any] = {
        "__all__": ["int", "plain_function", "Alias", "Tuple", "Plain", "LIMIT"],
        "int": int,                      # an immutable type (an extension's): __module__ read-only
        "plain_function": plain_function,
        "Alias": Plain,                  # another name: left to where it is exported as itself
        "Tuple": stormpy.Tuple,          # published first by stormpy.topology
        "Plain": Plain,
        "LIMIT": 5,
    }
    module = plain_function.__module__
    try:
        publish("stormpy.made_up", namespace)
        assert int.__module__ == "builtins"
        assert stormpy.Tuple.__module__ == "stormpy.topology"
        assert plain_function.__module__ == "stormpy.made_up"
        assert Plain.__module__ == "stormpy.made_up"
    finally:
        plain_function.__module__ = module
        Plain.__module__ = module
        _PUBLISHED.discard("stormpy.made_up")
