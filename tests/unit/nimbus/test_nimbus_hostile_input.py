"""Hostile input to Nimbus (issue 14, items 5-10): bounded manifests, upload caps, quiet refusals,
clear compression errors, full-match names and all-or-nothing submission of oversized topologies."""

from __future__ import annotations

import hashlib
import json
import logging
import zipfile
from pathlib import Path

import pytest
from nimbus_fakes import FakeClusterState, SimClock, staged_bundle

from stormpy.bundle import BundleError, Manifest, verify_bundle
from stormpy.bundle import verify as verify_mod
from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.store import BundleStore
from stormpy.nimbus.topologies import TopologyManager
from stormpy.nimbus.uploads import UploadManager
from stormpy.nimbus.validation import validate_topology_conf, validate_topology_name
from stormpy.rpc.errors import TopologyRefusedError, UploadError
from stormpy.rpc.refusals import RefusalLog, shorten
from stormpy.topology._spec import TopologySpec
from wordcount import build


@pytest.fixture
def uploads(dirs: NimbusDirs, clock: SimClock) -> UploadManager:
    return UploadManager(dirs, max_bundle_bytes=2_000_000, expiration_secs=600, chunk_size=100_000,
                         clock=clock, max_sessions=4, max_sessions_per_client=2, idle_secs=30)


def upload(manager: UploadManager, data: bytes, client: str = "10.0.0.1") -> str:
    begun = manager.begin(len(data), client)
    for off in range(0, len(data), begun["chunk_size"]):
        manager.chunk(begun["upload_id"], data[off:off + begun["chunk_size"]], off)
    return manager.finish(begun["upload_id"], hashlib.sha256(data).hexdigest())


def bundle_bytes(tmp: Path, entries: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    path = tmp / "b.zip"
    files = {name: hashlib.sha256(data).hexdigest() for name, data in entries.items()}
    with zipfile.ZipFile(path, "w", compression=method) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
        zf.writestr("MANIFEST.json", Manifest(files=files, created=1.0).to_json())
    return path.read_bytes()


def no_part_files(dirs: NimbusDirs) -> bool:
    return not [p for p in dirs.uploads.iterdir() if p.suffix == ".part"]


# -- item 5: manifest bomb ----------------------------------------------------------------------
def test_manifest_bomb_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.zip"
    doc = b'{"format": 1, "created": 0, "files": {}, "pad": "' + b" " * (5 * 1024 * 1024) + b'"}'
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("MANIFEST.json", doc)
    assert bomb.stat().st_size < 64 * 1024  # a small upload ...
    with pytest.raises(BundleError, match="MANIFEST.json is .* bytes; at most"):
        verify_bundle(bomb)  # ... refused by its bound, not parsed


def test_manifest_size_is_counted_while_streaming_even_when_the_header_lies(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify_mod, "MAX_MANIFEST_BYTES", 1000)
    path = tmp_path / "liar.zip"
    path.write_bytes(bundle_bytes(tmp_path, {"a.py": b"x" * 3000}))
    with zipfile.ZipFile(path) as zf:
        assert zf.getinfo("MANIFEST.json").file_size < 1000
    doc = json.dumps({"format": 1, "created": 0, "files": {}, "pad": " " * 5000}).encode()
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("MANIFEST.json", doc)
    raw = bytearray(path.read_bytes())
    # rewrite the uncompressed size in both headers to claim 10 bytes
    local = raw.find(b"PK\x03\x04")
    central = raw.find(b"PK\x01\x02")
    raw[local + 22:local + 26] = (10).to_bytes(4, "little")
    raw[central + 24:central + 28] = (10).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    with pytest.raises(BundleError, match="MANIFEST.json"):
        verify_bundle(path)


def test_entry_count_is_bounded_before_the_directory_is_parsed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify_mod, "MAX_ENTRIES", 10)
    path = tmp_path / "many.zip"
    path.write_bytes(bundle_bytes(tmp_path, {f"m{i}.py": b"" for i in range(11)}))
    with pytest.raises(BundleError, match="entries; a bundle may hold at most 10"):
        verify_bundle(path)
    many = {f"f{i}": "0" * 64 for i in range(20_001)}
    with pytest.raises(BundleError, match="at most 20000"):
        Manifest.from_json(json.dumps({"format": 1, "created": 0, "files": many}).encode())


# -- item 6: upload sessions --------------------------------------------------------------------
def test_upload_sessions_are_capped_per_client_and_overall(uploads: UploadManager, dirs: NimbusDirs,
                                                          clock: SimClock) -> None:
    uploads.begin(10, "10.0.0.1")
    uploads.begin(10, "10.0.0.1")
    with pytest.raises(UploadError, match=r"client 10\.0\.0\.1 has 2 uploads open.*per.client"):
        uploads.begin(10, "10.0.0.1")
    uploads.begin(10, "10.0.0.2")
    uploads.begin(10, "10.0.0.3")
    with pytest.raises(UploadError, match=r"4 uploads are open, the limit is 4 \(nimbus.upload.max"):
        uploads.begin(10, "10.0.0.4")
    assert uploads.open_sessions == 4 and len(list(dirs.uploads.iterdir())) == 4
    clock.advance(31)  # idle sessions expire when the cap is hit, without waiting for the monitor
    uploads.begin(10, "10.0.0.4")
    assert uploads.open_sessions == 1 and len(list(dirs.uploads.iterdir())) == 1


def test_idle_sessions_expire_on_their_own_timeout(uploads: UploadManager, clock: SimClock,
                                                   dirs: NimbusDirs) -> None:
    begun = uploads.begin(10, "c")
    clock.advance(20)
    uploads.chunk(begun["upload_id"], b"12345", 0)
    clock.advance(20)
    assert uploads.expire() == []
    clock.advance(11)
    assert uploads.expire() == [begun["upload_id"]]
    assert list(dirs.uploads.iterdir()) == []


# -- item 7: refusal logging --------------------------------------------------------------------
def test_refusals_are_truncated_and_rate_limited(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    refusals = RefusalLog("t", burst=3, interval=10.0, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="stormpy.rpc.server"):
        for _ in range(50):
            refusals.refused("A" * 100_000 + "\n", "bad " + "B" * 100_000)
        now[0] = 11.0
        refusals.refused("x", "y")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 5  # 3 refusals, one summary, one refusal
    assert all(len(line) < 600 for line in lines)
    assert "(100002 chars)" in lines[0] and "\n" not in lines[0]
    assert "47 more requests refused" in lines[3]
    assert shorten("short") == "short"


# -- item 8: compression ------------------------------------------------------------------------
def test_deflate64_entry_is_refused_naming_it_and_no_part_is_left(uploads: UploadManager, dirs: NimbusDirs,
                                                                   tmp_path: Path) -> None:
    raw = bytearray(bundle_bytes(tmp_path, {"topo.py": b"X = 1\n"}, method=zipfile.ZIP_STORED))
    local = raw.find(b"PK\x03\x04")
    central = raw.find(b"PK\x01\x02")
    raw[local + 8:local + 10] = (9).to_bytes(2, "little")  # first entry: Deflate64
    raw[central + 10:central + 12] = (9).to_bytes(2, "little")
    with pytest.raises(UploadError, match=r"'topo.py' uses unsupported compression method 9 \(Deflate64\)"):
        upload(uploads, bytes(raw))
    assert uploads.open_sessions == 0 and no_part_files(dirs)


def test_corrupt_deflate_stream_is_refused_naming_the_entry(uploads: UploadManager, dirs: NimbusDirs,
                                                            tmp_path: Path) -> None:
    raw = bytearray(bundle_bytes(tmp_path, {"topo.py": bytes(range(256)) * 40}))
    local = raw.find(b"PK\x03\x04")
    name_len = int.from_bytes(raw[local + 26:local + 28], "little")
    extra_len = int.from_bytes(raw[local + 28:local + 30], "little")
    data = local + 30 + name_len + extra_len
    raw[data] = 0xFF  # deflate block type 3: invalid
    with pytest.raises(UploadError, match="'topo.py' cannot be read"):
        upload(uploads, bytes(raw))
    assert uploads.open_sessions == 0 and no_part_files(dirs)


# -- item 9: names ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["x\n", "wc\n", "a b", "\n", ""])
def test_topology_names_are_full_matches(name: str) -> None:
    with pytest.raises(TopologyRefusedError, match="invalid topology name"):
        validate_topology_name(name)


def test_component_stream_and_config_names_are_full_matches() -> None:
    doc = build(10).create_topology().to_doc()
    assert TopologySpec.from_doc(doc)
    bad_component = json.loads(json.dumps(doc))
    bad_component["components"]["split\n"] = bad_component["components"].pop("split")
    with pytest.raises(Exception, match=r"invalid component id 'split\\n'"):
        TopologySpec.from_doc(bad_component)
    bad_stream = json.loads(json.dumps(doc))
    spout = bad_stream["components"]["sentences"]
    spout["streams"]["s\n"] = spout["streams"]["default"]
    with pytest.raises(Exception, match=r"invalid stream id of component 'sentences' 's\\n'"):
        TopologySpec.from_doc(bad_stream)
    with pytest.raises(TopologyRefusedError, match=r"invalid topology config key 'topology.workers\\n'"):
        validate_topology_conf({"topology.workers\n": 2})


# -- item 10: oversized topologies, all-or-nothing submission ------------------------------------
class Cluster:
    def __init__(self, tmp: Path, conf: dict) -> None:
        self.tmp = tmp
        self.state = FakeClusterState()
        self.state.add_supervisor("sup-a", [6700, 6701])
        self.store = BundleStore(NimbusDirs(tmp / "nimbus"))
        self.manager = TopologyManager(self.state, self.store, conf, clock=SimClock())  # type: ignore[arg-type]

    def submit(self, conf: dict, **kw: object) -> str:
        return self.manager.submit("wc", staged_bundle(self.tmp), build(10).create_topology(), conf,
                                   **kw)  # type: ignore[arg-type]

    def empty(self) -> bool:
        return not self.state.topologies() and self.store.topology_ids() == []


@pytest.mark.parametrize(("conf", "message"), [
    ({"topology.workers": 200_000}, r"200000 workers \(topology.workers\); .* \(nimbus.slots.perTopology\)"),
    ({"topology.workers": 2, "topology.acker.executors": 5000}, r"executors; .*nimbus.executors.perTopology"),
])
def test_oversized_topologies_are_refused_before_anything_is_written(tmp_path: Path, conf: dict,
                                                                     message: str) -> None:
    cluster = Cluster(tmp_path, {})
    with pytest.raises(TopologyRefusedError, match=message):
        cluster.submit(conf)
    assert cluster.empty()


def test_assignment_beyond_jute_maxbuffer_rolls_the_submission_back(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, {"storm.zookeeper.jute.maxbuffer": 300})
    with pytest.raises(TopologyRefusedError, match="assignment of topology 'wc' would be .*jute.maxbuffer"):
        cluster.submit({"topology.workers": 2})
    assert cluster.empty()


def test_any_failure_during_submit_leaves_nothing(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, {})

    def fail(topology_id: str) -> None:
        assert cluster.state.assigns[topology_id] and cluster.store.topology_ids() == [topology_id]
        raise RuntimeError("replication failed")

    with pytest.raises(RuntimeError, match="replication failed"):
        cluster.submit({"topology.workers": 1}, before_activate=fail)
    assert cluster.empty()
    assert cluster.submit({"topology.workers": 1})  # the name is free again


def test_a_rolled_back_submission_loses_its_storm_base_before_the_rest(tmp_path: Path) -> None:
    """A standby Nimbus registering its bundle replica during the roll-back checks the StormBase
    after writing its node: the StormBase must be gone before the replica nodes are removed, so
    that the standby either finds none (and removes its node) or has its node removed."""
    cluster = Cluster(tmp_path, {})
    removed: list[tuple[str, bool]] = []
    remove_base, remove_all = cluster.state.remove_storm_base, cluster.state.remove_topology

    def record_base(tid: str) -> None:
        removed.append(("StormBase", tid in cluster.state.marks))
        remove_base(tid)

    def record_all(tid: str) -> None:
        removed.append(("the rest", cluster.state.storm_base(tid) is None))
        remove_all(tid)

    cluster.state.remove_storm_base = record_base  # type: ignore[method-assign]
    cluster.state.remove_topology = record_all  # type: ignore[method-assign]

    def fail(topology_id: str) -> None:
        raise RuntimeError("replication failed")

    with pytest.raises(RuntimeError, match="replication failed"):
        cluster.submit({"topology.workers": 1}, before_activate=fail)
    # the submission marker outlives the StormBase (a new leader redoes an interrupted roll-back)
    assert removed == [("StormBase", True), ("the rest", True)]
    assert cluster.empty() and cluster.state.submitting() == []
