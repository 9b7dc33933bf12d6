"""The cluster documents read back exactly as written, and malformed ones refused naming the znode
and the field (what Nimbus, supervisors and workers see when they read ZooKeeper)."""

from __future__ import annotations

import msgpack
import pytest

from stormpy.cluster.errors import MalformedStateError
from stormpy.cluster.records import (
    SCHEMA_VERSION,
    Assignment,
    ErrorInfo,
    StormBase,
    SupervisorInfo,
    WorkerHeartbeat,
    decode,
    decode_value,
    encode,
    encode_value,
)


def _bytes(doc: object) -> bytes:
    return msgpack.packb(doc, use_bin_type=True)


def test_a_supervisor_record_is_written_as_this_document() -> None:
    info = SupervisorInfo("sup-1", "host-a", [6700, 6701], 12.5, "0.1.0", stats={"worker_launches": 3},
                          logviewer_port=8000,
                          workers=[{"topology_id": "t-1", "port": 6700, "restarts": 2}])
    assert msgpack.unpackb(encode(info), raw=False) == {
        "v": SCHEMA_VERSION, "supervisor_id": "sup-1", "host": "host-a", "ports": [6700, 6701],
        "start_time": 12.5, "version": "0.1.0", "stats": {"worker_launches": 3},
        "workers": [{"topology_id": "t-1", "port": 6700, "restarts": 2}], "logviewer_port": 8000}
    assert decode(SupervisorInfo, encode(info), "/s/sup-1") == info


def _refused(cls: object, doc: object, path: str = "/stormpy/x") -> str:
    """The message a reader sees when ``doc`` (as stored at ``path``) is refused."""
    with pytest.raises(MalformedStateError) as info:
        decode(cls, _bytes(doc), path)  # type: ignore[arg-type]
    assert info.value.path == path
    return str(info.value)


SUP_DOC = {"v": 1, "supervisor_id": "sup-1", "host": "host-a", "ports": [6700], "start_time": 3,
           "version": "0.1.0"}


def test_a_supervisor_record_without_its_optional_fields_reads_with_their_defaults() -> None:
    info = decode(SupervisorInfo, _bytes(SUP_DOC), "/s")
    assert info == SupervisorInfo("sup-1", "host-a", (6700,), 3.0, "0.1.0", stats={}, logviewer_port=None,
                                  workers=())
    assert type(info.start_time) is float
    assert decode(SupervisorInfo, _bytes(SUP_DOC | {"v": 0}), "/s") == info


@pytest.mark.parametrize(("change", "message"), [
    ({"supervisor_id": 7}, "field 'supervisor_id' must be a string, got 7"),
    ({"host": None}, "field 'host' must be a string, got None"),
    ({"ports": [6700, True]}, "field 'ports' must be a list of ints, got [6700, True]"),
    ({"ports": 6700}, "field 'ports' must be a list of ints, got 6700"),
    ({"start_time": "now"}, "field 'start_time' must be a number, got 'now'"),
    ({"start_time": False}, "field 'start_time' must be a number, got False"),
    ({"version": 1}, "field 'version' must be a string, got 1"),
    ({"stats": {"launches": "3"}}, "field 'stats' must be a map of numbers, got {'launches': '3'}"),
    ({"stats": [1]}, "field 'stats' must be a map of numbers, got [1]"),
    ({"logviewer_port": "8000"}, "field 'logviewer_port' must be an int or nil, got '8000'"),
    ({"workers": [{"topology_id": "t", "port": 1}]},
     "field 'workers' must be a list of worker slot records, got [{'topology_id': 't', 'port': 1}]"),
    ({"workers": [{"topology_id": 1, "port": 1, "restarts": 0}]},
     "field 'workers' must be a list of worker slot records"),
    ({"workers": [{"topology_id": "t", "port": "1", "restarts": 0}]},
     "field 'workers' must be a list of worker slot records"),
    ({"workers": [{"topology_id": "t", "port": 1, "restarts": 0.5}]},
     "field 'workers' must be a list of worker slot records"),
    ({"workers": ["t"]}, "field 'workers' must be a list of worker slot records"),
])
def test_a_malformed_supervisor_record_is_refused_naming_the_znode_and_field(change: dict,
                                                                            message: str) -> None:
    text = _refused(SupervisorInfo, SUP_DOC | change, "/stormpy/supervisors/sup-1")
    assert text.startswith("malformed cluster state at /stormpy/supervisors/sup-1: SupervisorInfo: ")
    assert message in text


def test_a_missing_field_is_named() -> None:
    doc = {k: v for k, v in SUP_DOC.items() if k != "start_time"}
    assert _refused(SupervisorInfo, doc, "/s/a") == \
        "malformed cluster state at /s/a: SupervisorInfo: field 'start_time' is missing"


def test_a_supervisors_worker_slots_read_back_with_their_extra_fields() -> None:
    slot = {"topology_id": "t", "port": 6700, "restarts": 4, "last_exit": "exit code 1",
            "crash_looping": True}
    info = decode(SupervisorInfo, _bytes(SUP_DOC | {"workers": [slot], "logviewer_port": 8000,
                                                    "stats": {"worker_restarts": 4.5}}), "/s")
    assert info.workers == (slot,)
    assert info.logviewer_port == 8000
    assert info.stats == {"worker_restarts": 4.5}


@pytest.mark.parametrize(("doc", "message"), [
    ([1], "expected a map, got list"),
    ("x", "expected a map, got str"),
    ({k: v for k, v in SUP_DOC.items() if k != "v"}, "schema version 'v' must be an int, got None"),
    (SUP_DOC | {"v": True}, "schema version 'v' must be an int, got True"),
    (SUP_DOC | {"v": 2}, "schema version 2 is newer than this stormpy reads (1)"),
])
def test_a_document_of_no_readable_version_is_refused(doc: object, message: str) -> None:
    assert _refused(SupervisorInfo, doc, "/s/b") == \
        f"malformed cluster state at /s/b: SupervisorInfo: {message}"


STORM_DOC = {"v": 1, "topology_id": "wc-1", "name": "wc", "status": "active", "num_workers": 2,
             "launch_time": 10, "owner": "alice"}


def test_a_storm_base_reads_back_exactly() -> None:
    base = StormBase("wc-1", "wc", "rebalancing", 3, 10.5, "alice", {"spout": 2}, kill_wait_secs=30,
                     prev_status="inactive",
                     component_debug={"spout": {"enable": True, "samplingpct": 12.5}})
    assert msgpack.unpackb(encode(base), raw=False) == {
        "v": 1, "topology_id": "wc-1", "name": "wc", "status": "rebalancing", "num_workers": 3,
        "launch_time": 10.5, "owner": "alice", "component_executors": {"spout": 2}, "kill_wait_secs": 30,
        "prev_status": "inactive", "component_debug": {"spout": {"enable": True, "samplingpct": 12.5}}}
    back = decode(StormBase, encode(base), "/st")
    assert back == base
    assert type(back.kill_wait_secs) is float


def test_a_storm_base_without_its_optional_fields_reads_with_their_defaults() -> None:
    base = decode(StormBase, _bytes(STORM_DOC), "/st")
    assert base == StormBase("wc-1", "wc", "active", 2, 10.0, "alice", {}, None, None, {})
    assert type(base.launch_time) is float


def test_a_debug_setting_reads_as_a_flag_and_a_float_percentage() -> None:
    base = decode(StormBase, _bytes(STORM_DOC | {"component_debug": {
        "wc-1": {"enable": False, "samplingpct": 0}, "bolt": {"enable": True, "samplingpct": 5}}}), "/st")
    assert base.component_debug == {"wc-1": {"enable": False, "samplingpct": 0.0},
                                    "bolt": {"enable": True, "samplingpct": 5.0}}
    assert type(base.component_debug["bolt"]["samplingpct"]) is float


@pytest.mark.parametrize(("change", "message"), [
    ({"topology_id": 1}, "field 'topology_id' must be a string, got 1"),
    ({"name": 1}, "field 'name' must be a string, got 1"),
    ({"status": "paused"},
     "field 'status' must be one of ['active', 'inactive', 'killed', 'rebalancing'], got 'paused'"),
    ({"num_workers": 2.0}, "field 'num_workers' must be an int, got 2.0"),
    ({"launch_time": None}, "field 'launch_time' must be a number, got None"),
    ({"owner": 5}, "field 'owner' must be a string, got 5"),
    ({"component_executors": {"spout": 1.5}},
     "field 'component_executors' must be a map of component → int, got {'spout': 1.5}"),
    ({"kill_wait_secs": "30"}, "field 'kill_wait_secs' must be a number or nil, got '30'"),
    ({"prev_status": 3}, "field 'prev_status' must be a string or nil, got 3"),
    ({"prev_status": "paused"},
     "prev_status 'paused' is not one of ['active', 'inactive', 'killed', 'rebalancing']"),
    ({"component_debug": {"s": {"enable": 1, "samplingpct": 5}}},
     "field 'component_debug' must be a map of name → {enable, samplingpct}"),
    ({"component_debug": {"s": {"enable": True, "samplingpct": "5"}}},
     "field 'component_debug' must be a map of name → {enable, samplingpct}"),
    ({"component_debug": {"s": {"enable": True}}},
     "field 'component_debug' must be a map of name → {enable, samplingpct}"),
    ({"component_debug": {"s": [True, 5]}},
     "field 'component_debug' must be a map of name → {enable, samplingpct}"),
])
def test_a_malformed_storm_base_is_refused_naming_the_field(change: dict, message: str) -> None:
    text = _refused(StormBase, STORM_DOC | change, "/stormpy/storms/wc-1")
    assert text.startswith("malformed cluster state at /stormpy/storms/wc-1: StormBase: ")
    assert message in text


@pytest.mark.parametrize("status", ["active", "inactive", "killed", "rebalancing"])
def test_every_storm_status_is_accepted_as_status_and_previous_status(status: str) -> None:
    base = decode(StormBase, _bytes(STORM_DOC | {"status": status, "prev_status": status}), "/st")
    assert (base.status, base.prev_status) == (status, status)


def test_a_storm_base_refuses_a_bad_previous_status_at_construction() -> None:
    with pytest.raises(ValueError, match=r"prev_status 'gone' is not one of \['active', 'inactive', "
                                         r"'killed', 'rebalancing'\]"):
        StormBase("t", "n", "active", 1, 0.0, "me", prev_status="gone")
    with pytest.raises(ValueError, match=r"^status 'gone' is not one of \['active', 'inactive', 'killed', "
                                         r"'rebalancing'\]$"):
        StormBase("t", "n", "gone", 1, 0.0, "me")


ASSIGN_DOC = {"v": 1, "topology_id": "wc-1", "bundle_key": "k", "executors": [[1, 2, "n1", 6700]],
              "node_host": {"n1": "host-1"}}


def test_an_assignment_is_written_as_sorted_rows_and_reads_back_exactly() -> None:
    assignment = Assignment("wc-1", "stormdist/wc-1/bundle.zip",
                            executors={(5, 5): ("n2", 6701), (1, 2): ("n1", 6700), (3, 4): ("n2", 6700)},
                            node_host={"n1": "host-1", "n2": "host-2"},
                            executor_start_times={(3, 4): 7, (1, 2): 5.5})
    assert msgpack.unpackb(encode(assignment), raw=False) == {
        "v": 1, "topology_id": "wc-1", "bundle_key": "stormdist/wc-1/bundle.zip",
        "executors": [[1, 2, "n1", 6700], [3, 4, "n2", 6700], [5, 5, "n2", 6701]],
        "node_host": {"n1": "host-1", "n2": "host-2"}, "executor_start_times": [[1, 2, 5.5], [3, 4, 7]]}
    back = decode(Assignment, encode(assignment), "/a")
    assert back == assignment
    assert back.executor_start_times == {(1, 2): 5.5, (3, 4): 7.0}
    assert all(type(t) is float for t in back.executor_start_times.values())
    assert back.worker_ports == {"n1": (6700,), "n2": (6700, 6701)}
    assert back.workers() == {("n1", 6700): [(1, 2)], ("n2", 6700): [(3, 4)], ("n2", 6701): [(5, 5)]}
    assert back.executors_of("n2", 6700) == [(3, 4)]
    assert back.executors_of("n2", 6702) == []


def test_a_workers_executors_are_listed_in_order() -> None:
    assignment = Assignment("t", "k", executors={(9, 9): ("n", 1), (2, 2): ("n", 1), (5, 6): ("n", 1),
                                                 (7, 7): ("m", 2), (1, 1): ("m", 1)}, node_host={})
    assert assignment.executors_of("n", 1) == [(2, 2), (5, 6), (9, 9)]
    assert list(assignment.workers().items()) == [(("m", 1), [(1, 1)]), (("n", 1), [(2, 2), (5, 6), (9, 9)]),
                                                  (("m", 2), [(7, 7)])]
    assert list(assignment.worker_ports.items()) == [("m", (1, 2)), ("n", (1,))]


def test_an_assignment_without_start_times_reads_with_none() -> None:
    assert decode(Assignment, _bytes(ASSIGN_DOC), "/a").executor_start_times == {}


@pytest.mark.parametrize(("change", "message"), [
    ({"executors": [[1, 2, "n1"]]},
     "field 'executors' must be a list of [start_task, end_task, node, port] rows"),
    ({"executors": [[1, 2, "n1", 6700, 0]]},
     "field 'executors' must be a list of [start_task, end_task, node, port]"),
    ({"executors": [[1, "2", "n1", 6700]]}, "field 'executors' must be a list of"),
    ({"executors": [["1", 2, "n1", 6700]]}, "field 'executors' must be a list of"),
    ({"executors": [[1, 2, 3, 6700]]}, "field 'executors' must be a list of"),
    ({"executors": [[1, 2, "n1", "6700"]]}, "field 'executors' must be a list of"),
    ({"executors": {"1": 2}}, "field 'executors' must be a list of"),
    ({"executor_start_times": [[1, 2]]},
     "field 'executor_start_times' must be a list of [start_task, end_task, time] rows, got [[1, 2]]"),
    ({"executor_start_times": [[1, 2, "t"]]}, "field 'executor_start_times' must be a list of"),
    ({"topology_id": None}, "field 'topology_id' must be a string, got None"),
    ({"bundle_key": None}, "field 'bundle_key' must be a string, got None"),
    ({"node_host": {"n1": 1}}, "field 'node_host' must be a map of node → host, got {'n1': 1}"),
])
def test_a_malformed_assignment_is_refused_naming_the_field(change: dict, message: str) -> None:
    text = _refused(Assignment, ASSIGN_DOC | change, "/stormpy/assignments/wc-1")
    assert text.startswith("malformed cluster state at /stormpy/assignments/wc-1: Assignment: ")
    assert message in text


def test_an_assignment_without_executors_or_hosts_is_refused() -> None:
    for key in ("executors", "node_host", "topology_id", "bundle_key"):
        doc = {k: v for k, v in ASSIGN_DOC.items() if k != key}
        assert _refused(Assignment, doc).endswith(f"Assignment: field {key!r} is missing")


def test_a_map_with_a_key_that_is_not_a_string_is_refused() -> None:
    from stormpy.cluster.records import DocumentError
    with pytest.raises(DocumentError, match="field 'node_host' must be a map of node → host"):
        Assignment.from_doc(ASSIGN_DOC | {"node_host": {1: "host"}})


BEAT_DOC = {"v": 1, "topology_id": "wc-1", "node": "n1", "port": 6700, "time": 100, "uptime": 5}


def test_a_worker_heartbeat_is_written_as_this_document_and_reads_back_exactly() -> None:
    beat = WorkerHeartbeat("wc-1", "n1", 6700, 100.5, 5.25, [[1, 2], (3, 3)],
                           {"spout": {"emitted": 10, "complete_latency_ms": 1.5}},
                           tasks=[{"task": 1, "component": "spout", "emitted": {"default": 4}, "acked": 2}],
                           process={"rss_bytes": 1024},
                           metrics={"spout": {"1": {"lag": {"p0": 2}, "raw": b"\x00\xff"}}},
                           events=[{"ts": 1, "component": "spout", "values": ["a"]}])
    assert beat.executors == ((1, 2), (3, 3))
    assert msgpack.unpackb(encode(beat), raw=False) == {
        "v": 1, "topology_id": "wc-1", "node": "n1", "port": 6700, "time": 100.5, "uptime": 5.25,
        "executors": [[1, 2], [3, 3]], "stats": {"spout": {"emitted": 10, "complete_latency_ms": 1.5}},
        "tasks": [{"task": 1, "component": "spout", "emitted": {"default": 4}, "acked": 2}],
        "process": {"rss_bytes": 1024}, "metrics": {"spout": {"1": {"lag": {"p0": 2}, "raw": b"\x00\xff"}}},
        "events": [{"ts": 1, "component": "spout", "values": ["a"]}]}
    assert decode(WorkerHeartbeat, encode(beat), "/w") == beat


def test_a_worker_heartbeat_of_an_older_worker_reads_with_empty_optional_parts() -> None:
    beat = decode(WorkerHeartbeat, _bytes(BEAT_DOC), "/w")
    assert beat == WorkerHeartbeat("wc-1", "n1", 6700, 100.0, 5.0, (), {}, (), {}, {}, ())
    assert (type(beat.time), type(beat.uptime)) == (float, float)


def test_a_task_map_without_emitted_counts_is_accepted() -> None:
    task = {"task": 3, "component": "bolt", "executed": 7}
    assert decode(WorkerHeartbeat, _bytes(BEAT_DOC | {"tasks": [task]}), "/w").tasks == (task,)


@pytest.mark.parametrize(("change", "message"), [
    ({"topology_id": 1}, "field 'topology_id' must be a string, got 1"),
    ({"node": 1}, "field 'node' must be a string, got 1"),
    ({"port": "6700"}, "field 'port' must be an int, got '6700'"),
    ({"time": "t"}, "field 'time' must be a number, got 't'"),
    ({"uptime": None}, "field 'uptime' must be a number, got None"),
    ({"executors": [[1]]}, "field 'executors' must be a list of [start_task, end_task] pairs, got [[1]]"),
    ({"executors": [[1, "2"]]}, "field 'executors' must be a list of [start_task, end_task] pairs"),
    ({"stats": {"spout": {"acked": "x"}}},
     "field 'stats' must be a map of component → map of counter → number"),
    ({"stats": {"spout": 3}}, "field 'stats' must be a map of component → map of counter → number"),
    ({"tasks": [{"component": "s"}]},
     "field 'tasks' must be a list of task maps (task, component, emitted, counters), "
     "got [{'component': 's'}]"),
    ({"tasks": [{"task": 1, "component": 2}]}, "field 'tasks' must be a list of task maps"),
    ({"tasks": [{"task": "1", "component": "s"}]}, "field 'tasks' must be a list of task maps"),
    ({"tasks": [{"task": 1, "component": "s", "emitted": {"default": "4"}}]},
     "field 'tasks' must be a list of task maps"),
    ({"tasks": [{"task": 1, "component": "s", "emitted": [4]}]}, "field 'tasks' must be a list of task maps"),
    ({"tasks": [{"task": 1, "component": "s", "acked": "2"}]}, "field 'tasks' must be a list of task maps"),
    ({"tasks": [[1, "s"]]}, "field 'tasks' must be a list of task maps"),
    ({"process": {"rss_bytes": "1"}}, "field 'process' must be a map of counter → number"),
    ({"metrics": {"spout": {"1": 5}}},
     "field 'metrics' must be a map of component → map of task → map of metric → value"),
    ({"events": ["e"]}, "field 'events' must be a list of sampled tuple maps, got ['e']"),
])
def test_a_malformed_heartbeat_is_refused_naming_the_field(change: dict, message: str) -> None:
    text = _refused(WorkerHeartbeat, BEAT_DOC | change, "/stormpy/workerbeats/wc-1/n1-6700")
    assert text.startswith("malformed cluster state at /stormpy/workerbeats/wc-1/n1-6700: WorkerHeartbeat: ")
    assert message in text


def test_a_sampled_event_with_a_key_that_is_not_a_string_is_refused() -> None:
    from stormpy.cluster.records import DocumentError
    with pytest.raises(DocumentError, match="field 'events' must be a list of sampled tuple maps"):
        WorkerHeartbeat.from_doc(BEAT_DOC | {"events": [{1: "x"}]})


def test_an_error_record_reads_back_exactly() -> None:
    error = ErrorInfo("count", 3, 20, "ValueError: boom", "host-a", 6700)
    assert msgpack.unpackb(encode(error), raw=False) == {
        "v": 1, "component": "count", "task": 3, "time": 20, "message": "ValueError: boom",
        "host": "host-a", "port": 6700}
    back = decode(ErrorInfo, encode(error), "/e")
    assert back == error and type(back.time) is float


@pytest.mark.parametrize(("key", "bad", "expected"), [
    ("component", 1, "a string"), ("task", "3", "an int"), ("time", "t", "a number"),
    ("message", None, "a string"), ("host", 1, "a string"), ("port", 1.5, "an int")])
def test_a_malformed_error_record_is_refused_naming_the_field(key: str, bad: object, expected: str) -> None:
    doc = ErrorInfo("count", 3, 20.0, "boom", "host-a", 6700).to_doc() | {key: bad}
    assert _refused(ErrorInfo, doc, "/stormpy/errors/wc-1/count/e1") == (
        f"malformed cluster state at /stormpy/errors/wc-1/count/e1: ErrorInfo: field {key!r} must be "
        f"{expected}, got {bad!r}")


def test_bytes_that_are_no_document_are_refused_naming_the_znode_and_the_decoder_error() -> None:
    with pytest.raises(MalformedStateError) as info:
        decode(ErrorInfo, b"\xc1", "/stormpy/errors/e")
    assert info.value.path == "/stormpy/errors/e"
    assert str(info.value).startswith(
        "malformed cluster state at /stormpy/errors/e: not a msgpack document (")
    assert info.value.problem.startswith("not a msgpack document (")


def test_a_free_form_value_reads_back_exactly_with_its_bytes() -> None:
    value = {"offset": 42, "blob": b"\x00\xff", "names": ["a"]}
    data = encode_value(value)
    assert msgpack.unpackb(data, raw=False) == {"v": 1, "value": value}
    assert decode_value(data, "/p") == value
    assert decode_value(_bytes({"v": 1}), "/p") is None


@pytest.mark.parametrize(("doc", "problem"), [
    ({"v": 2, "value": 1}, "schema version 2 is newer than this stormpy reads (1)"),
    ([1], "expected a map, got list"),
])
def test_a_free_form_value_of_no_readable_version_is_refused_naming_the_znode(doc: object,
                                                                             problem: str) -> None:
    with pytest.raises(MalformedStateError) as info:
        decode_value(_bytes(doc), "/stormpy/checkpoints/t/k")
    assert str(info.value) == f"malformed cluster state at /stormpy/checkpoints/t/k: {problem}"
    with pytest.raises(MalformedStateError, match="^malformed cluster state at /p: not a msgpack document"):
        decode_value(b"\xc1", "/p")


@pytest.mark.parametrize(("data", "problem"), [
    (b"\xc1", "not a msgpack document (FormatError: "),
    (b"\x01\x02", "not a msgpack document (ExtraData: "),
])
def test_bytes_that_are_no_document_are_refused_naming_the_decoders_error(data: bytes, problem: str) -> None:
    with pytest.raises(MalformedStateError) as info:
        decode(ErrorInfo, data, "/stormpy/errors/e")
    assert info.value.problem.startswith(problem)  # the decoder's own wording varies by version


class _LegacyReader:
    """A document reader that is an object, not a class (it has ``from_doc`` but no ``__name__``)."""

    def __repr__(self) -> str:
        return "legacy-reader"

    def from_doc(self, doc: object) -> object:
        ErrorInfo.from_doc(doc)
        return doc


def test_a_refusal_by_a_reader_object_names_the_reader() -> None:
    with pytest.raises(MalformedStateError) as info:
        decode(_LegacyReader(), _bytes({"v": 1}), "/x")
    assert str(info.value) == "malformed cluster state at /x: legacy-reader: field 'component' is missing"
