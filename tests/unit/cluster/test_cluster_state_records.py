"""Cluster-state documents and the ZooKeeper layout, without ZooKeeper."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from stormpy.cluster import paths
from stormpy.cluster.errors import MalformedStateError
from stormpy.cluster.paths import ZkPaths
from stormpy.cluster.records import (
    SCHEMA_VERSION,
    Assignment,
    DocumentError,
    ErrorInfo,
    StormBase,
    SupervisorInfo,
    WorkerHeartbeat,
    decode,
    decode_value,
    encode,
    encode_value,
)

SUPERVISOR = SupervisorInfo("sup-1", "host-a", [6700, 6701], 1700000000.5, "0.1.0")
STORM = StormBase("wc-1-1700000000", "wc", "active", 2, 1700000000.0, "alice",
                  {"spout": 2, "count": 4, "__acker": 2}, kill_wait_secs=None, prev_status=None)
ASSIGNMENT = Assignment(
    "wc-1-1700000000", "stormdist/wc-1-1700000000/bundle.zip",
    executors={(1, 1): ("sup-1", 6700), (2, 3): ("sup-2", 6700), (4, 4): ("sup-1", 6701)},
    node_host={"sup-1": "host-a", "sup-2": "host-b"},
    executor_start_times={(1, 1): 1700000001.0, (2, 3): 1700000002.0, (4, 4): 1700000003.0})
HEARTBEAT = WorkerHeartbeat("wc-1-1700000000", "sup-1", 6700, 1700000010.0, 9.5, [(1, 1), (4, 4)],
                            {"spout": {"emitted": 10, "transferred": 10, "acked": 9, "failed": 1,
                                       "complete_latency_ms": 3.25}},
                            metrics={"spout": {"1": {"kafkaOffset": {"partitions": {"t-0": {"lag": 2}}}}}})
ERROR = ErrorInfo("count", 3, 1700000020.0, "ValueError: boom", "host-a", 6700)


@pytest.mark.parametrize("obj", [SUPERVISOR, STORM, ASSIGNMENT, HEARTBEAT, ERROR],
                         ids=lambda o: type(o).__name__)
def test_documents_round_trip(obj: Any) -> None:
    doc = obj.to_doc()
    assert doc["v"] == SCHEMA_VERSION
    assert type(obj).from_doc(doc) == obj
    assert decode(type(obj), encode(obj), "/x") == obj


def test_assignment_helpers() -> None:
    assert ASSIGNMENT.worker_ports == {"sup-1": (6700, 6701), "sup-2": (6700,)}
    assert ASSIGNMENT.workers() == {("sup-1", 6700): [(1, 1)], ("sup-2", 6700): [(2, 3)],
                                    ("sup-1", 6701): [(4, 4)]}
    assert ASSIGNMENT.executors_of("sup-1", 6700) == [(1, 1)]
    rows = ASSIGNMENT.to_doc()["executors"]
    assert rows == [[1, 1, "sup-1", 6700], [2, 3, "sup-2", 6700], [4, 4, "sup-1", 6701]]


def test_unknown_fields_are_ignored_for_forward_compatibility() -> None:
    doc = SUPERVISOR.to_doc() | {"new_optional_field": [1, 2]}
    assert SupervisorInfo.from_doc(doc) == SUPERVISOR


@pytest.mark.parametrize(("cls", "doc", "needle"), [
    (SupervisorInfo, SUPERVISOR.to_doc() | {"ports": ["x"]}, "'ports' must be a list of ints"),
    (SupervisorInfo, {k: v for k, v in SUPERVISOR.to_doc().items() if k != "host"}, "'host' is missing"),
    (StormBase, STORM.to_doc() | {"status": "paused"}, "'status' must be one of"),
    (StormBase, STORM.to_doc() | {"num_workers": True}, "'num_workers' must be an int"),
    (Assignment, ASSIGNMENT.to_doc() | {"executors": [[1, 2, "n"]]}, "'executors' must be a list of"),
    (WorkerHeartbeat, HEARTBEAT.to_doc() | {"stats": {"spout": {"acked": "many"}}}, "'stats' must be"),
    (WorkerHeartbeat, HEARTBEAT.to_doc() | {"metrics": {"spout": [1]}}, "'metrics' must be"),
    (ErrorInfo, ERROR.to_doc() | {"v": SCHEMA_VERSION + 1}, "newer than this stormpy reads"),
    (ErrorInfo, ERROR.to_doc() | {"v": "1"}, "schema version 'v' must be an int"),
    (ErrorInfo, [1, 2], "expected a map"),
])
def test_bad_documents_name_the_field(cls: Any, doc: Any, needle: str) -> None:
    with pytest.raises(DocumentError) as info:
        cls.from_doc(doc)
    assert needle in str(info.value)
    with pytest.raises(MalformedStateError) as wrapped:
        decode(cls, msgpack.packb(doc), "/stormpy/some/node")
    assert "/stormpy/some/node" in str(wrapped.value) and needle in str(wrapped.value)
    assert wrapped.value.path == "/stormpy/some/node"


def test_undecodable_bytes_name_the_path() -> None:
    with pytest.raises(MalformedStateError, match="/stormpy/assignments/t1: not a msgpack document"):
        decode(Assignment, b"\xc1\xc1", "/stormpy/assignments/t1")


def test_invalid_status_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="status 'paused'"):
        StormBase("t", "n", "paused", 1, 0.0, "me")


def test_free_form_values() -> None:
    value = {"offset": 42, "shard": "shardId-000", "pending": [1, 2]}
    assert decode_value(encode_value(value), "/p") == value
    with pytest.raises(MalformedStateError, match="/p"):
        decode_value(b"\xc1", "/p")


def test_layout_matches_the_design() -> None:
    p = ZkPaths()
    assert p.root == "/stormpy"
    assert p.supervisor("s1") == "/stormpy/supervisors/s1"
    assert p.storm("t1") == "/stormpy/storms/t1"
    assert p.assignment("t1") == "/stormpy/assignments/t1"
    assert p.workerbeat("t1", "node-a-1", 6700) == "/stormpy/workerbeats/t1/node-a-1-6700"
    assert p.component_errors("t1", "count") == "/stormpy/errors/t1/count"
    assert p.nimbus("n1") == "/stormpy/nimbuses/n1"
    assert p.checkpoint("t1", "kafka-spout", "3") == "/stormpy/checkpoints/t1/kafka-spout/3"
    assert p.transactional("t1", "coordinator", "txid") == "/stormpy/transactional/t1/coordinator/txid"
    assert ZkPaths("/custom/root/").assignments() == "/custom/root/assignments"
    assert ZkPaths("/r").assignment("t1") == "/r/assignments/t1"
    assert ZkPaths("/").storms() == "/storms"
    assert "/stormpy/nimbuses" in p.top_level() and "/stormpy/transactional" in p.top_level()
    assert set(p.topology_paths("t1")) == {
        "/stormpy/assignments/t1", "/stormpy/workerbeats/t1", "/stormpy/errors/t1",
        "/stormpy/checkpoints/t1", "/stormpy/transactional/t1", "/stormpy/blobstore/t1",
        "/stormpy/blobstore-wanted/t1", "/stormpy/logconfigs/t1", "/stormpy/workercontrol/t1",
        "/stormpy/storms/t1"}
    assert p.nimbus_leader() == "/stormpy/nimbuses/leader"
    assert p.replica("t1", "n1") == "/stormpy/blobstore/t1/n1"
    assert p.submitting("t1") == "/stormpy/submitting/t1"
    assert p.topology_paths("t1")[0] == p.assignment("t1")
    assert p.topology_paths("t1")[-1] == p.storm("t1")


@pytest.mark.parametrize("bad", ["", "a/b", ".", ".."])
def test_ids_must_be_plain_segments(bad: str) -> None:
    with pytest.raises(ValueError, match="not a valid ZooKeeper path segment"):
        ZkPaths().assignment(bad)


def test_user_names_are_encoded_reversibly() -> None:
    for name in ["count", "a/b", "..", "spaces and ünïcode", "%41"]:
        segment = paths.encode_segment(name)
        assert "/" not in segment and segment not in (".", "..")
        assert paths.decode_segment(segment) == name
    assert paths.parse_worker_key(paths.worker_key("node-with-dashes", 6701)) == ("node-with-dashes", 6701)
    with pytest.raises(ValueError, match="<node>-<port>"):
        paths.parse_worker_key("nodash")


def test_root_must_be_absolute() -> None:
    with pytest.raises(ValueError, match="absolute"):
        ZkPaths("stormpy")
