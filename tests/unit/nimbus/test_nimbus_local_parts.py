"""Nimbus's local parts, each driven directly: the workers' heartbeat store, the bundle store on
disk, download sessions, the local directory layout, a topology's credentials and the table of
pending kill/rebalance actions."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from nimbus_fakes import SimClock, staged_bundle

from stormpy.cluster import WorkerHeartbeat
from stormpy.messaging.curve import PUBLIC_KEY, SECRET_KEY
from stormpy.nimbus.credentials import add_topology_credentials, topology_credentials
from stormpy.nimbus.downloads import DownloadManager
from stormpy.nimbus.localdirs import NimbusDirs, safe_segment
from stormpy.nimbus.pending_actions import KILL, REBALANCE, ActionTimers, PendingAction
from stormpy.nimbus.store import BundleStore, StoreError
from stormpy.nimbus.worker_beats import WorkerBeats
from stormpy.rpc.errors import NotFoundError, UploadError
from stormpy.topology._errors import InvalidTopologyError


# -- WorkerBeats -------------------------------------------------------------------------------------
def hb(tid: str, node: str, port: int, time: float) -> WorkerHeartbeat:
    return WorkerHeartbeat(tid, node, port, time, 1.0)


def test_the_newest_heartbeat_of_a_slot_is_kept_and_an_equal_time_replaces() -> None:
    beats = WorkerBeats()
    first, same_time, older = hb("t", "a", 1, 5.0), hb("t", "a", 1, 5.0), hb("t", "a", 1, 4.0)
    assert beats.record([first]) == 1
    assert beats.record([same_time, older]) == 1
    assert beats.topology("t")[("a", 1)] is same_time
    assert (beats.received, len(beats), beats.reported) == (2, 1, {"a"})
    assert beats.topology("other") == {}


def test_retain_keeps_only_the_listed_slots_of_the_listed_topologies_and_clear_forgets_all() -> None:
    beats = WorkerBeats()
    beats.record([hb("t", "a", 1, 1.0), hb("t", "b", 2, 1.0), hb("u", "c", 3, 1.0), hb("v", "d", 4, 1.0)])
    beats.retain({"t": {("a", 1)}, "v": {("d", 4)}, "w": {("x", 1)}})
    assert beats.of(["t", "u", "v"]) == {"t": {("a", 1): hb("t", "a", 1, 1.0)}, "u": {},
                                         "v": {("d", 4): hb("v", "d", 4, 1.0)}}
    assert len(beats) == 2
    beats.clear()
    assert (len(beats), beats.reported, beats.received) == (0, set(), 4)


# -- BundleStore ---------------------------------------------------------------------------------
@pytest.fixture
def store(tmp_path: Path) -> BundleStore:
    return BundleStore(NimbusDirs(tmp_path / "local"))


def test_install_moves_the_bundle_in_and_describes_it_privately(store: BundleStore, tmp_path: Path) -> None:
    staged = staged_bundle(tmp_path, "k1")
    stored = store.install("wc-1", staged, {"components": {}}, {"topology.workers": 2})
    assert stored.topology_id == "wc-1"
    assert (stored.spec, stored.conf) == ({"components": {}}, {"topology.workers": 2})
    assert (stored.bundle_sha256, stored.bundle_size) == (staged.sha256, staged.size)
    assert stored.bundle_path == store.dirs.bundle("wc-1") and stored.bundle_path.is_file()
    assert not staged.path.exists()
    assert stat.S_IMODE(store.dirs.topology_file("wc-1").stat().st_mode) == 0o600
    assert stat.S_IMODE(store.dirs.stormdist("wc-1").stat().st_mode) == 0o700
    assert store.load("wc-1") == stored and store.exists("wc-1")
    assert [p.name for p in store.dirs.stormdist_root.iterdir()] == ["wc-1"]  # no temporary left


def test_install_keeps_bytes_and_integer_keys_and_clears_a_crashed_installs_leftover(
        store: BundleStore, tmp_path: Path) -> None:
    leftover = store.dirs.stormdist_root / ".wc-1.tmp"
    leftover.mkdir(parents=True)
    (leftover / "bundle.zip").write_bytes(b"half")
    stored = store.install("wc-1", staged_bundle(tmp_path, "k1"), {"grouping": {1: "a"}},
                           {"topology.token": b"\x00\xff", "topology.name": "wc"})
    assert store.load("wc-1") == stored
    assert (stored.spec, stored.conf) == ({"grouping": {1: "a"}}, {"topology.token": b"\x00\xff",
                                                                   "topology.name": "wc"})
    assert not leftover.exists()


def test_install_refuses_a_topology_already_stored_and_leaves_nothing_half_written(
        store: BundleStore, tmp_path: Path) -> None:
    store.install("wc-1", staged_bundle(tmp_path, "k1"), {}, {})
    with pytest.raises(StoreError) as err:
        store.install("wc-1", staged_bundle(tmp_path, "k2"), {}, {})
    assert str(err.value) == f"topology directory {store.dirs.stormdist('wc-1')} already exists"
    missing = staged_bundle(tmp_path, "k3")
    missing.path.unlink()
    with pytest.raises(FileNotFoundError):
        store.install("wc-2", missing, {}, {})
    assert store.topology_ids() == ["wc-1"] and not store.exists("wc-2")
    assert sorted(p.name for p in store.dirs.stormdist_root.iterdir()) == ["wc-1"]


def test_load_names_what_is_missing_or_broken(store: BundleStore, tmp_path: Path) -> None:
    path = store.dirs.topology_file("wc-1")
    with pytest.raises(StoreError) as err:
        store.load("wc-1")
    assert str(err.value) == f"no stored topology wc-1 (missing {path})"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xc1")
    with pytest.raises(StoreError) as err:
        store.load("wc-1")
    assert str(err.value) == f"cannot read {path}: FormatError: "  # 0xc1 is a byte msgpack never uses
    path.write_bytes(b"\x93\x01\x02\x03")  # a list, not a map
    store.dirs.bundle("wc-1").write_bytes(b"zip")
    with pytest.raises(StoreError) as err:
        store.load("wc-1")
    assert str(err.value) == f"stored topology wc-1 is incomplete ({path}, {store.dirs.bundle('wc-1')})"
    path.write_bytes(b"\x80")  # an empty map: every field defaults
    stored = store.load("wc-1")
    assert (stored.spec, stored.conf, stored.bundle_sha256, stored.bundle_size) == ({}, {}, "", 0)
    store.dirs.bundle("wc-1").unlink()
    with pytest.raises(StoreError, match="is incomplete"):
        store.load("wc-1")
    assert not store.exists("wc-1")


def test_remove_and_the_list_of_stored_topologies(store: BundleStore, tmp_path: Path) -> None:
    assert store.topology_ids() == []
    store.remove("never-stored")
    store.install("b-1", staged_bundle(tmp_path, "k1"), {}, {})
    store.install("a-1", staged_bundle(tmp_path, "k2"), {}, {})
    (store.dirs.stormdist_root / ".c-1.tmp").mkdir()
    (store.dirs.stormdist_root / "stray-file").write_text("x")
    assert store.topology_ids() == ["a-1", "b-1"]
    store.remove("b-1")
    assert store.topology_ids() == ["a-1"] and not store.exists("b-1")


# -- DownloadManager ---------------------------------------------------------------------------------
def test_a_download_reads_chunks_at_any_offset_and_ends_at_the_end(tmp_path: Path) -> None:
    clock = SimClock()
    downloads = DownloadManager(chunk_size=4, expiration_secs=10, clock=clock)
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    begun = downloads.begin(path, 10, "abc")
    did = begun["download_id"]
    assert begun == {"download_id": did, "size": 10, "sha256": "abc", "chunk_size": 4}
    assert did.startswith("d") and len(did) == 33
    assert downloads.chunk(did, 0) == {"data": b"0123"}
    assert downloads.chunk(did, 8) == {"data": b"89"}
    assert downloads.chunk(did, 2) == {"data": b"2345"}  # a retried chunk
    assert downloads.open_sessions == 1
    assert downloads.chunk(did, 10) == {"data": b""}
    assert downloads.open_sessions == 0
    with pytest.raises(UploadError) as err:
        downloads.chunk(did, 0)
    assert str(err.value) == f"unknown download id {did!r} (never begun, finished or expired)"


@pytest.mark.parametrize("offset", [-1, True, "0", 1.0, None])
def test_a_chunk_offset_must_be_a_non_negative_integer(tmp_path: Path, offset: object) -> None:
    downloads = DownloadManager(chunk_size=4, expiration_secs=10)
    did = downloads.begin(tmp_path / "f", 1, "abc")["download_id"]
    with pytest.raises(UploadError) as err:
        downloads.chunk(did, offset)
    assert str(err.value) == f"download_chunk: offset must be a non-negative integer, got {offset!r}"
    for unknown in (7, [did], None):
        with pytest.raises(UploadError) as err:
            downloads.chunk(unknown, 0)
        assert str(err.value) == f"unknown download id {unknown!r} (never begun, finished or expired)"


def test_a_bundle_gone_meanwhile_is_not_found_and_ends_the_session(tmp_path: Path) -> None:
    downloads = DownloadManager(chunk_size=4, expiration_secs=10)
    did = downloads.begin(tmp_path / "gone", 5, "abc")["download_id"]
    with pytest.raises(NotFoundError) as err:
        downloads.chunk(did, 0)
    assert str(err.value) == f"the bundle of download {did} is gone (topology killed?)"
    assert downloads.open_sessions == 0


def test_sessions_idle_for_the_expiration_are_forgotten_and_a_chunk_keeps_one_alive(tmp_path: Path) -> None:
    clock = SimClock()
    downloads = DownloadManager(chunk_size=4, expiration_secs=10, clock=clock)
    (tmp_path / "f").write_bytes(b"0123456789")
    idle = downloads.begin(tmp_path / "f", 10, "a")["download_id"]
    busy = downloads.begin(tmp_path / "f", 10, "a")["download_id"]
    clock.advance(6)
    downloads.chunk(busy, 0)
    clock.advance(3.5)
    assert downloads.expire() == []
    clock.advance(0.5)
    assert downloads.expire() == [idle]  # exactly the expiration: gone
    assert downloads.expire(clock() + 5.5) == []
    assert downloads.expire(clock() + 6) == [busy]
    assert downloads.open_sessions == 0


# -- NimbusDirs ------------------------------------------------------------------------------------
def test_the_local_layout(tmp_path: Path) -> None:
    dirs = NimbusDirs.from_config({"storm.local.dir": str(tmp_path / "l")})
    root = tmp_path / "l" / "nimbus"
    assert (dirs.local_dir, dirs.root, dirs.stormdist_root, dirs.uploads) == \
        (tmp_path / "l", root, root / "stormdist", root / "uploads")
    assert dirs.stormdist("wc-1") == root / "stormdist" / "wc-1"
    assert dirs.bundle("wc-1") == root / "stormdist" / "wc-1" / "bundle.zip"
    assert dirs.topology_file("wc-1") == root / "stormdist" / "wc-1" / "topology.msgpack"
    assert dirs.upload_part("u1") == root / "uploads" / "u1.part"
    assert dirs.staged_bundle("k1") == root / "uploads" / "k1.zip"
    assert dirs.id_file == root / "nimbus-id"
    dirs.ensure()
    dirs.ensure()
    assert dirs.stormdist_root.is_dir() and dirs.uploads.is_dir()


@pytest.mark.parametrize("value", ["", ".hidden", "a/b", "a..b", "..", "-x", "a b", 5, None])
def test_only_plain_file_names_are_path_segments(value: object) -> None:
    with pytest.raises(ValueError) as err:
        safe_segment(value, "topology id")  # type: ignore[arg-type]
    assert str(err.value) == f"topology id {value!r} is not a plain file name"


def test_plain_file_names_are_path_segments() -> None:
    for value in ("wc-1-17", "A.b_c-9", "0"):
        assert safe_segment(value, "x") == value
    with pytest.raises(ValueError, match="^upload id '../x' is not a plain file name$"):
        NimbusDirs("/l").upload_part("../x")
    with pytest.raises(ValueError, match="^bundle key 'a/b' is not a plain file name$"):
        NimbusDirs("/l").staged_bundle("a/b")


def test_each_path_names_the_segment_it_refuses() -> None:
    dirs = NimbusDirs("/l")
    for path in (dirs.stormdist, dirs.bundle, dirs.topology_file):
        with pytest.raises(ValueError) as err:
            path("../x")
        assert str(err.value) == "topology id '../x' is not a plain file name"


# -- credentials -----------------------------------------------------------------------------------
DIGEST = {"storm.zookeeper.auth.scheme": "digest", "storm.zookeeper.auth.payload": "nimbus:secret"}


def test_plain_clusters_give_a_topology_no_credentials_and_drop_keys_it_brought() -> None:
    conf = {PUBLIC_KEY: "pk", SECRET_KEY: "sk", "topology.workers": 1}
    assert topology_credentials({}, conf, "wc-1") == {PUBLIC_KEY: None, SECRET_KEY: None}
    add_topology_credentials(conf, {}, "wc-1")
    assert conf == {"topology.workers": 1}


def test_a_curve_cluster_gives_each_topology_its_own_key_pair() -> None:
    conf: dict[str, object] = {}
    add_topology_credentials(conf, {"storm.messaging.curve.enabled": True}, "wc-1")
    assert sorted(conf) == [PUBLIC_KEY, SECRET_KEY]
    assert all(isinstance(conf[k], str) and conf[k] for k in (PUBLIC_KEY, SECRET_KEY))
    other: dict[str, object] = {"storm.messaging.curve.enabled": True}
    add_topology_credentials(other, {}, "wc-2")  # the topology asks for CURVE itself
    assert other[PUBLIC_KEY] != conf[PUBLIC_KEY]
    off: dict[str, object] = {"storm.messaging.curve.enabled": False}
    add_topology_credentials(off, {"storm.messaging.curve.enabled": True}, "wc-3")
    assert PUBLIC_KEY not in off


def test_a_bad_curve_setting_of_the_topology_is_refused_naming_it() -> None:
    with pytest.raises(InvalidTopologyError) as err:
        topology_credentials({}, {"storm.messaging.curve.enabled": "yes"}, "wc-1")
    assert str(err.value) == "topology config storm.messaging.curve.enabled: must be true or false, got 'yes'"


def test_a_secured_zookeeper_gives_each_topology_its_own_identity_unless_it_has_one() -> None:
    conf: dict[str, object] = {}
    add_topology_credentials(conf, DIGEST, "wc-1")
    payload = conf["storm.zookeeper.topology.auth.payload"]
    assert isinstance(payload, str) and payload.startswith("wc-1:") and len(payload) == len("wc-1:") + 32
    own = {"storm.zookeeper.topology.auth.payload": "me:pw"}
    add_topology_credentials(own, DIGEST, "wc-2")
    assert own == {"storm.zookeeper.topology.auth.payload": "me:pw"}
    assert "storm.zookeeper.topology.auth.payload" not in topology_credentials({}, {}, "wc-3")


# -- ActionTimers ------------------------------------------------------------------------------------
def test_pending_actions_come_due_at_their_deadline_earliest_first() -> None:
    timers = ActionTimers()
    assert timers.next_deadline() is None and timers.due(1e9) == []
    timers.schedule("b", KILL, 5.0)
    timers.schedule("a", REBALANCE, 5.0)
    timers.schedule("c", KILL, 3.0)
    timers.schedule("d", KILL, 9.0)
    timers.schedule("d", REBALANCE, 7.0)  # replaces
    assert timers.get("d") == PendingAction("d", REBALANCE, 7.0)
    assert timers.next_deadline() == 3.0
    assert timers.due(4.9) == [PendingAction("c", KILL, 3.0)]
    assert timers.due(5.0) == [PendingAction("a", REBALANCE, 5.0), PendingAction("b", KILL, 5.0)]
    assert timers.due(5.0) == []
    timers.cancel("d")
    timers.cancel("never")
    assert timers.get("d") is None and timers.next_deadline() is None


def test_an_unknown_action_is_refused() -> None:
    with pytest.raises(ValueError) as err:
        ActionTimers().schedule("a", "restart", 1.0)
    assert str(err.value) == "unknown action 'restart'"
