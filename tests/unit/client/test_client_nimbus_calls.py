"""NimbusClient's calls, as a Nimbus receives them and as the caller gets their answers: the
submit (the chunked upload of the bundle, then the spec, the conf and the initial status), the
operator calls with their defaults, the information calls, the worker heartbeats and the bundle
download; and a submit that meets a change of leader starts over on the new leader, taking the
topology the lost leader accepted as the answer. Stand-in Nimbus servers over real RPC on
loopback, recording every call."""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stormpy.client import NimbusClient
from stormpy.cluster import WorkerHeartbeat
from stormpy.rpc import RpcServer, rpc_method
from stormpy.rpc.errors import AlreadyExistsError, NotFoundError, NotLeaderError, UploadError
from stormpy.testing import FeederSpout
from stormpy.topology import InvalidTopologyError, Spout, TopologyBuilder

#: an RPC timeout no test waits out: a call that returned did not wait for it
NEVER = 3600.0
BUNDLE = b"0123456789"  # three chunks of 4, 4 and 2 bytes


def spec_doc() -> dict[str, Any]:
    builder = TopologyBuilder()
    builder.set_spout("feed", FeederSpout(["word"]))
    return builder.create_topology().to_doc()


class RecordingNimbus:
    """A leading Nimbus stand-in (the handler's method signatures) that records every call."""

    def __init__(self, name: str = "nimbus", chunk_size: int = 4) -> None:
        self.name = name
        self.address = ""
        self.chunk_size = chunk_size
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.uploads: dict[str, bytearray] = {}
        self.bundles: dict[str, bytes] = {}
        self.topologies: dict[str, str] = {}
        self.warnings: Any = None
        self.answers: dict[str, Any] = {}
        self.keep_bundles = True

    def record(self, method: str, **args: Any) -> None:
        self.calls.append((method, args))

    def called(self, method: str) -> list[dict[str, Any]]:
        return [args for name, args in self.calls if name == method]

    @rpc_method
    def get_leader(self) -> dict[str, Any]:
        return {"leader": self.address, "is_leader": True, "self": self.address}

    @rpc_method
    def begin_upload(self, size: Any) -> dict[str, Any]:
        self.record("begin_upload", size=size)
        upload_id = f"{self.name}-upload-{len(self.uploads)}"
        self.uploads[upload_id] = bytearray()
        return {"upload_id": upload_id, "chunk_size": self.chunk_size}

    @rpc_method
    def upload_chunk(self, upload_id: Any, data: Any, offset: Any) -> dict[str, Any]:
        self.record("upload_chunk", upload_id=upload_id, data=bytes(data), offset=offset)
        if upload_id not in self.uploads:
            raise UploadError(f"no upload session {upload_id}")
        self.uploads[upload_id] += data
        return {"received": len(self.uploads[upload_id])}

    @rpc_method
    def finish_upload(self, upload_id: Any, sha256: Any) -> dict[str, Any]:
        self.record("finish_upload", upload_id=upload_id, sha256=sha256)
        data = bytes(self.uploads.pop(upload_id))
        assert hashlib.sha256(data).hexdigest() == sha256
        key = f"{self.name}-bundle-{len(self.bundles)}"
        if self.keep_bundles:
            self.bundles[key] = data
        return {"bundle_key": key}

    @rpc_method
    def submit_topology(self, name: Any, bundle_key: Any, spec: Any, conf: Any = None,
                        initial_status: Any = "active") -> dict[str, Any]:
        self.record("submit_topology", name=name, bundle_key=bundle_key, spec=spec, conf=conf,
                    initial_status=initial_status)
        if bundle_key not in self.bundles:
            raise NotFoundError(f"no uploaded bundle {bundle_key}")
        if name in self.topologies:
            raise AlreadyExistsError(f"topology {name} already exists")
        self.topologies[name] = f"{name}-1-{len(self.topologies)}"
        return {"topology_id": self.topologies[name], "warnings": self.warnings}

    @rpc_method
    def kill_topology(self, name: Any, wait_secs: Any = None) -> dict[str, Any]:
        self.record("kill_topology", name=name, wait_secs=wait_secs)
        return {}

    @rpc_method
    def activate(self, name: Any) -> dict[str, Any]:
        self.record("activate", name=name)
        return {}

    @rpc_method
    def deactivate(self, name: Any) -> dict[str, Any]:
        self.record("deactivate", name=name)
        return {}

    @rpc_method
    def debug(self, name: Any, component: Any = None, enable: Any = True,
              sampling_pct: Any = 10.0) -> dict[str, Any]:
        self.record("debug", name=name, component=component, enable=enable, sampling_pct=sampling_pct)
        return {}

    @rpc_method
    def rebalance(self, name: Any, wait_secs: Any = None, num_workers: Any = None,
                  executors: Any = None) -> dict[str, Any]:
        self.record("rebalance", name=name, wait_secs=wait_secs, num_workers=num_workers,
                    executors=executors)
        return {}

    @rpc_method
    def get_cluster_info(self) -> dict[str, Any]:
        return self.answers["get_cluster_info"]

    @rpc_method
    def get_daemon_stats(self) -> dict[str, Any]:
        return self.answers["get_daemon_stats"]

    @rpc_method
    def get_topology_info(self, name: Any) -> dict[str, Any]:
        self.record("get_topology_info", name=name)
        if "get_topology_info" in self.answers:
            return self.answers["get_topology_info"]
        if name not in self.topologies:
            raise NotFoundError(f"no topology {name}")
        return {"id": self.topologies[name], "name": name}

    @rpc_method
    def get_topology_files(self, topology_id: Any) -> dict[str, Any]:
        self.record("get_topology_files", topology_id=topology_id)
        return self.answers["get_topology_files"]

    @rpc_method
    def send_supervisor_worker_heartbeats(self, supervisor_id: Any, heartbeats: Any) -> dict[str, Any]:
        self.record("send_supervisor_worker_heartbeats", supervisor_id=supervisor_id, heartbeats=heartbeats)
        return self.answers.get("send_supervisor_worker_heartbeats", {"recorded": len(heartbeats)})

    @rpc_method
    def get_worker_heartbeats(self, topology_id: Any) -> dict[str, Any]:
        self.record("get_worker_heartbeats", topology_id=topology_id)
        return self.answers["get_worker_heartbeats"]

    @rpc_method
    def begin_download(self, bundle_key: Any) -> dict[str, Any]:
        self.record("begin_download", bundle_key=bundle_key)
        data = self.bundles[bundle_key]
        return {"download_id": f"dl-{bundle_key}", "size": len(data),
                "sha256": hashlib.sha256(data).hexdigest()}

    @rpc_method
    def download_chunk(self, download_id: Any, offset: Any) -> dict[str, Any]:
        self.record("download_chunk", download_id=download_id, offset=offset)
        data = self.bundles[download_id.removeprefix("dl-")]
        return {"data": data[offset:offset + self.chunk_size]}


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STORMPY_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def nimbus() -> Iterator[RecordingNimbus]:
    stand_in = RecordingNimbus()
    with RpcServer("127.0.0.1", 0, stand_in, name="nimbus") as server:
        stand_in.address = f"127.0.0.1:{server.port}"
        yield stand_in


def client_of(nimbus: RecordingNimbus, **kwargs: Any) -> NimbusClient:
    host, port = nimbus.address.split(":")
    return NimbusClient(host, int(port), timeout_secs=NEVER, retries=0, **kwargs)


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    path = tmp_path / "bundle.zip"
    path.write_bytes(BUNDLE)
    return path


@pytest.mark.timeout(60)
def test_a_submit_uploads_the_bundle_in_nimbus_chunks_then_submits_spec_and_conf(
        nimbus: RecordingNimbus, bundle: Path) -> None:
    doc = spec_doc()
    seen: list[tuple[int, int]] = []
    with client_of(nimbus) as client:
        assert client.warnings == []
        topology_id = client.submit("wc", bundle, doc, {"topology.workers": 2},
                                    progress=lambda done, total: seen.append((done, total)))
        assert client.warnings == []  # Nimbus gave none (None on the wire)
    assert topology_id == nimbus.topologies["wc"]
    assert nimbus.called("begin_upload") == [{"size": len(BUNDLE)}]
    upload_id = "nimbus-upload-0"
    assert nimbus.called("upload_chunk") == [
        {"upload_id": upload_id, "data": b"0123", "offset": 0},
        {"upload_id": upload_id, "data": b"4567", "offset": 4},
        {"upload_id": upload_id, "data": b"89", "offset": 8}]
    assert nimbus.called("finish_upload") == [
        {"upload_id": upload_id, "sha256": hashlib.sha256(BUNDLE).hexdigest()}]
    assert seen == [(4, 10), (8, 10), (10, 10)]
    assert nimbus.called("submit_topology") == [
        {"name": "wc", "bundle_key": "nimbus-bundle-0", "spec": doc, "conf": {"topology.workers": 2},
         "initial_status": "active"}]
    assert nimbus.bundles["nimbus-bundle-0"] == BUNDLE


@pytest.mark.timeout(60)
def test_a_submit_can_start_inactive_and_keeps_the_warnings_nimbus_gave(
        nimbus: RecordingNimbus, bundle: Path) -> None:
    nimbus.warnings = ["the bundle is on 1 host of 2", 7]
    with client_of(nimbus) as client:
        key = client.upload_bundle(bundle)
        assert client.submit_topology("quiet", key, spec_doc(), active=False) == nimbus.topologies["quiet"]
        assert client.warnings == ["the bundle is on 1 host of 2", "7"]
        nimbus.warnings = []
        client.submit("next", bundle, spec_doc())
        assert client.warnings == []  # the warnings of the last submit only
        client.submit("held", bundle, spec_doc(), active=False)
        client.submit_topology("plain", client.upload_bundle(bundle), spec_doc())
    quiet, after, held, plain = nimbus.called("submit_topology")
    assert (quiet["initial_status"], quiet["conf"]) == ("inactive", {})
    assert after["initial_status"] == plain["initial_status"] == "active"
    assert held["initial_status"] == "inactive"


@pytest.mark.timeout(60)
def test_the_operator_calls_reach_nimbus_with_their_arguments_and_defaults(nimbus: RecordingNimbus) -> None:
    with client_of(nimbus) as client:
        client.kill("wc")
        client.kill("wc", wait_secs=5)
        client.activate("wc")
        client.deactivate("wc")
        client.debug("wc")
        client.debug("wc", component="split", enable=False, sampling_pct=2.5)
        client.rebalance("wc")
        client.rebalance("wc", wait_secs=3, num_workers=4, executors={"split": 6})
    assert nimbus.calls == [
        ("kill_topology", {"name": "wc", "wait_secs": None}),
        ("kill_topology", {"name": "wc", "wait_secs": 5}),
        ("activate", {"name": "wc"}),
        ("deactivate", {"name": "wc"}),
        ("debug", {"name": "wc", "component": None, "enable": True, "sampling_pct": 10.0}),
        ("debug", {"name": "wc", "component": "split", "enable": False, "sampling_pct": 2.5}),
        ("rebalance", {"name": "wc", "wait_secs": None, "num_workers": None, "executors": None}),
        ("rebalance", {"name": "wc", "wait_secs": 3, "num_workers": 4, "executors": {"split": 6}}),
    ]


@pytest.mark.timeout(60)
def test_the_information_calls_answer_what_nimbus_answers(nimbus: RecordingNimbus) -> None:
    nimbus.answers.update({
        "get_cluster_info": {"supervisors": [{"id": "s1"}], "topologies": []},
        "get_daemon_stats": {"rpc_calls": 12},
        "get_topology_info": {"id": "wc-1-0", "name": "wc", "status": "ACTIVE"},
        "get_topology_files": {"files": ["bundle.zip"]},
    })
    with client_of(nimbus) as client:
        assert client.cluster_info() == {"supervisors": [{"id": "s1"}], "topologies": []}
        assert client.daemon_stats() == {"rpc_calls": 12}
        assert client.topology_info("wc") == {"id": "wc-1-0", "name": "wc", "status": "ACTIVE"}
        assert client.topology_files("wc-1-0") == {"files": ["bundle.zip"]}
        assert client.ping() is True
    assert nimbus.called("get_topology_info") == [{"name": "wc"}]
    assert nimbus.called("get_topology_files") == [{"topology_id": "wc-1-0"}]


@pytest.mark.timeout(60)
def test_ping_is_false_within_the_time_asked_for_when_nimbus_does_not_answer() -> None:
    """A host that takes the connection and never speaks (the RPC timeout is an hour here)."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # connections complete in the kernel; nothing ever answers
    try:
        with NimbusClient("127.0.0.1", silent.getsockname()[1], timeout_secs=NEVER, retries=0) as client:
            assert client.ping(0.3) is False
    finally:
        silent.close()


@pytest.mark.timeout(60)
def test_worker_heartbeats_go_to_nimbus_and_come_back_by_node_and_port(nimbus: RecordingNimbus) -> None:
    beats = [WorkerHeartbeat("wc-1", "node-a", 6700, time=100.0, uptime=5.0,
                             stats={"split": {"emitted": 3.0}}),
             WorkerHeartbeat("wc-1", "node-b", 6701, time=101.0, uptime=6.0)]
    nimbus.answers["get_worker_heartbeats"] = {"heartbeats": [beat.to_doc() for beat in beats]}
    with client_of(nimbus) as client:
        assert client.send_worker_heartbeats("sup-1", beats) == 2
        nimbus.answers["send_supervisor_worker_heartbeats"] = {}  # an answer without a count
        assert client.send_worker_heartbeats("sup-1", beats[:1]) == 0
        assert client.worker_heartbeats("wc-1") == {("node-a", 6700): beats[0], ("node-b", 6701): beats[1]}
        nimbus.answers["get_worker_heartbeats"] = {}
        assert client.worker_heartbeats("wc-2") == {}
    sent = nimbus.called("send_supervisor_worker_heartbeats")
    assert sent[0] == {"supervisor_id": "sup-1", "heartbeats": [beat.to_doc() for beat in beats]}
    assert nimbus.called("get_worker_heartbeats") == [{"topology_id": "wc-1"}, {"topology_id": "wc-2"}]


@pytest.mark.timeout(60)
def test_a_bundle_downloads_to_its_destination_in_nimbus_chunks(nimbus: RecordingNimbus,
                                                                tmp_path: Path) -> None:
    nimbus.bundles["key-9"] = BUNDLE
    seen: list[tuple[int, int]] = []
    with client_of(nimbus) as client:
        dest = client.download_bundle("key-9", str(tmp_path / "copy.zip"),
                                      progress=lambda done, total: seen.append((done, total)))
    assert dest == tmp_path / "copy.zip" and dest.read_bytes() == BUNDLE
    assert seen == [(4, 10), (8, 10), (10, 10)]
    assert nimbus.called("begin_download") == [{"bundle_key": "key-9"}]
    assert [c["offset"] for c in nimbus.called("download_chunk")] == [0, 4, 8, 10]


class LosingLeader(RecordingNimbus):
    """A leader that loses its leadership to ``successor`` during the submit, at ``step``."""

    def __init__(self, step: str) -> None:
        super().__init__("old")
        self.step = step
        self.successor = ""

    def refuse(self, method: str) -> None:
        if method == self.step:
            raise NotLeaderError(f"not the leader, leader is {self.successor}")

    @rpc_method
    def upload_chunk(self, upload_id: Any, data: Any, offset: Any) -> dict[str, Any]:
        self.refuse("upload_chunk")
        return super().upload_chunk(upload_id, data, offset)

    @rpc_method
    def submit_topology(self, name: Any, bundle_key: Any, spec: Any, conf: Any = None,
                        initial_status: Any = "active") -> dict[str, Any]:
        self.refuse("submit_topology")
        return super().submit_topology(name, bundle_key, spec, conf, initial_status)


@pytest.fixture
def handover() -> Iterator[tuple[RecordingNimbus, RecordingNimbus]]:
    """(old leader, new leader) stand-ins; the old one refuses at the step the test sets."""
    old, new = LosingLeader("none"), RecordingNimbus("new")
    with RpcServer("127.0.0.1", 0, old, name="old") as a, RpcServer("127.0.0.1", 0, new, name="new") as b:
        old.address, new.address = f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"
        old.successor = new.address
        yield old, new


@pytest.mark.timeout(60)
@pytest.mark.parametrize("step", ["upload_chunk", "submit_topology"])
@pytest.mark.parametrize(("timeout_secs", "retries", "leader_wait_secs"),
                         [(10.0, 0, NEVER), (NEVER, 1, 0.0)])
def test_a_submit_meeting_a_new_leader_starts_over_there(
        handover: tuple[LosingLeader, RecordingNimbus], bundle: Path, step: str,
        timeout_secs: float, retries: int, leader_wait_secs: float) -> None:
    """The upload session lives on the old leader only: the new leader gets the whole upload and
    the submit, and the topology is the new leader's. The submit starts over within
    ``leader_wait_secs`` plus two calls' worth of RPC time, so also with no leader wait at all."""
    old, new = handover
    old.step = step
    host, port = old.address.split(":")
    with NimbusClient(host, int(port), timeout_secs=timeout_secs, retries=retries,
                      seeds=[old.address, new.address], leader_wait_secs=leader_wait_secs) as client:
        topology_id = client.submit("wc", bundle, spec_doc())
        assert client.address == new.address
    assert topology_id == new.topologies["wc"] and "wc" not in old.topologies
    assert new.bundles == {"new-bundle-0": BUNDLE}
    assert [c["bundle_key"] for c in new.called("submit_topology")][-1] == "new-bundle-0"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("id_key", ["id", "topology_id"])
def test_a_topology_the_lost_leader_accepted_is_the_answer_of_the_submit_started_over(
        handover: tuple[LosingLeader, RecordingNimbus], bundle: Path, id_key: str) -> None:
    old, new = handover
    old.step = "submit_topology"
    new.topologies["wc"] = "wc-7-accepted"  # the old leader accepted it before it lost the lead
    new.answers["get_topology_info"] = {id_key: "wc-7-accepted", "name": "wc"}
    with client_of(old, seeds=[old.address, new.address], leader_wait_secs=NEVER) as client:
        assert client.submit("wc", bundle, spec_doc()) == "wc-7-accepted"
    assert new.called("get_topology_info") == [{"name": "wc"}]


@pytest.mark.timeout(60)
def test_a_submit_of_a_name_that_exists_is_refused_when_no_leader_changed(
        nimbus: RecordingNimbus, bundle: Path) -> None:
    nimbus.topologies["wc"] = "wc-1-0"
    with client_of(nimbus) as client, pytest.raises(AlreadyExistsError, match="wc already exists"):
        client.submit("wc", bundle, spec_doc())
    assert nimbus.called("get_topology_info") == []


@pytest.mark.timeout(60)
def test_a_submit_refused_by_the_leader_it_started_at_is_not_started_over(
        nimbus: RecordingNimbus, bundle: Path) -> None:
    nimbus.keep_bundles = False  # the bundle is gone before the submit (expired, say)
    with client_of(nimbus) as client, pytest.raises(NotFoundError, match="no uploaded bundle"):
        client.submit("wc", bundle, spec_doc())
    assert len(nimbus.called("begin_upload")) == len(nimbus.called("submit_topology")) == 1


@pytest.mark.timeout(60)
def test_a_spec_naming_a_class_defined_in_a_function_is_refused_before_any_call(
        nimbus: RecordingNimbus) -> None:
    class Local(Spout):
        outputs = ["word"]

    builder = TopologyBuilder()
    builder.set_spout("feed", Local)
    with client_of(nimbus) as client, \
            pytest.raises(InvalidTopologyError, match="class .*Local .*module level"):
        client.submit_topology("wc", "key", builder.create_topology().to_doc())
    assert nimbus.calls == []
