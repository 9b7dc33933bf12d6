"""Downloading a topology's code from stand-in Nimbus servers over real RPC: the leader asked
first, a standby serving what the leader cannot, what lands in `stormdist` (code, bundle, the
spec and conf readable by this user only), every way a download fails and what the error says,
nothing left behind after a failure, and the download queue going on after a broken downloader."""

from __future__ import annotations

import logging
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
from supervisor_stand_ins import StandInNimbus, bundle_bytes, make_dirs, stand_in_nimbus

from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.rpc import InternalError
from stormpy.supervisor.download import (
    LEADER_ASK_TIMEOUT_SECS,
    BundleDownloader,
    DownloadError,
    DownloadQueue,
)
from stormpy.testing import free_ports, wait_for

SPEC = {"spouts": {"s": {}}, "bolts": {}}
#: a standby, the leader it names, and the bundle of t-1 both hold
Pair = tuple[StandInNimbus, StandInNimbus, bytes]


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STORMPY_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    """A standby and the leader it names, both holding topology t-1."""
    bundle = bundle_bytes(tmp_path, {"app.txt": "the app\n", "pkg/mod.py": "X = 1\n"})
    with stand_in_nimbus() as standby, stand_in_nimbus() as leader:
        standby.leader = leader.address
        for nimbus in (standby, leader):
            nimbus.add("t-1", bundle, SPEC, {"topology.workers": 2})
            nimbus.chunk = 100
        yield standby, leader, bundle


def conf_for(*seeds: str, **more: Any) -> dict[str, Any]:
    return {"nimbus.seeds": list(seeds), "nimbus.rpc.timeout.secs": 10.0, "nimbus.rpc.retries": 0, **more}


def stormdist_entries(dirs: SupervisorDirs) -> list[str]:
    return sorted(p.name for p in dirs.stormdist_root.iterdir()) if dirs.stormdist_root.is_dir() else []


def test_a_topology_is_fetched_from_the_leader_verified_and_unpacked(
        tmp_path: Path, pair: Pair, caplog: pytest.LogCaptureFixture) -> None:
    standby, leader, bundle = pair
    dirs = make_dirs(tmp_path)
    caplog.set_level(logging.INFO, logger="stormpy.supervisor.download")
    final = BundleDownloader(conf_for(standby.address, leader.address), dirs).download("t-1")
    assert final == dirs.stormdist("t-1")
    assert stormdist_entries(dirs) == ["t-1"]  # nothing temporary left
    assert sorted(p.name for p in final.iterdir()) == ["bundle.zip", "code", "topology.msgpack"]
    assert (final / "code" / "app.txt").read_text() == "the app\n"
    assert (final / "code" / "pkg" / "mod.py").read_text() == "X = 1\n"
    assert (final / "bundle.zip").read_bytes() == bundle
    assert msgpack.unpackb((final / "topology.msgpack").read_bytes()) == {
        "spec": SPEC, "conf": {"topology.workers": 2}}
    assert stat.S_IMODE((final / "topology.msgpack").stat().st_mode) == 0o600
    assert dirs.is_downloaded("t-1")
    assert "get_topology_files t-1" in leader.calls
    assert "get_topology_files t-1" not in standby.calls  # the leader was asked first
    assert [r.name for r in caplog.records if "downloaded topology t-1" in r.getMessage()] == [
        "stormpy.supervisor.download"]


def test_a_download_replaces_an_older_copy(tmp_path: Path, pair: Pair) -> None:
    standby, leader, _ = pair
    dirs = make_dirs(tmp_path)
    (dirs.stormdist("t-1") / "code").mkdir(parents=True)
    (dirs.stormdist("t-1") / "code" / "stale.txt").write_text("old")
    BundleDownloader(conf_for(leader.address), dirs).download("t-1")
    assert sorted(p.name for p in dirs.code_dir("t-1").iterdir()) == ["app.txt", "pkg"]


def test_a_standby_serves_what_the_leader_cannot(tmp_path: Path, pair: Pair) -> None:
    standby, leader, _ = pair
    leader.files_error = InternalError("the blob store is down")
    dirs = make_dirs(tmp_path)
    BundleDownloader(conf_for(standby.address), dirs).download("t-1")
    assert leader.calls.count("get_topology_files t-1") == 1
    assert (dirs.code_dir("t-1") / "app.txt").read_text() == "the app\n"
    assert stormdist_entries(dirs) == ["t-1"]


def test_every_failure_is_named_when_no_candidate_can_serve(
        tmp_path: Path, pair: Pair) -> None:
    standby, leader, _ = pair
    del standby.topologies["t-1"], leader.topologies["t-1"]
    dirs = make_dirs(tmp_path)
    with pytest.raises(DownloadError) as caught:
        BundleDownloader(conf_for(standby.address), dirs).download("t-1")
    assert str(caught.value) == (
        f"cannot download topology t-1: {leader.address}: NotFoundError: no topology t-1 here; "
        f"{standby.address}: NotFoundError: no topology t-1 here")
    assert stormdist_entries(dirs) == []


def test_no_nimbus_answering_is_said_so(tmp_path: Path) -> None:
    dead = [f"127.0.0.1:{p}" for p in free_ports(2)]
    dirs = make_dirs(tmp_path)
    with pytest.raises(DownloadError) as caught:
        BundleDownloader(conf_for(*dead, **{"nimbus.rpc.timeout.secs": 1.0}), dirs).download("t-1")
    assert str(caught.value) == f"cannot download topology t-1: no Nimbus answered at {dead[0]}, {dead[1]}"
    assert stormdist_entries(dirs) == []


def test_a_dead_seed_beside_a_refusing_one_is_not_no_answer(
        tmp_path: Path, pair: Pair) -> None:
    _, leader, _ = pair
    del leader.topologies["t-1"]
    dead = f"127.0.0.1:{free_ports(1)[0]}"
    dirs = make_dirs(tmp_path)
    with pytest.raises(DownloadError) as caught:
        conf = conf_for(dead, leader.address, **{"nimbus.rpc.timeout.secs": 1.0})
        BundleDownloader(conf, dirs).download("t-1")
    message = str(caught.value)
    assert message.startswith(f"cannot download topology t-1: {leader.address}: NotFoundError: "
                              f"no topology t-1 here; {dead}: UnreachableError: ")


def test_a_bundle_announced_twice_differently_is_refused_and_nothing_kept(
        tmp_path: Path, pair: Pair) -> None:
    _, leader, bundle = pair
    leader.announce = {"sha256": "0" * 64}
    dirs = make_dirs(tmp_path)
    with pytest.raises(DownloadError) as caught:
        BundleDownloader(conf_for(leader.address), dirs).download("t-1")
    assert "Nimbus announced two different bundles" in str(caught.value)
    assert str(caught.value).startswith(f"cannot download topology t-1: {leader.address}: UploadError: ")
    assert stormdist_entries(dirs) == []


def test_a_bundle_over_the_configured_size_is_refused(
        tmp_path: Path, pair: Pair) -> None:
    _, leader, bundle = pair
    dirs = make_dirs(tmp_path)
    conf = conf_for(leader.address, **{"nimbus.max.bundle.size.bytes": len(bundle) - 1})
    with pytest.raises(DownloadError) as caught:
        BundleDownloader(conf, dirs).download("t-1")
    assert f"exceeds nimbus.max.bundle.size.bytes ({len(bundle) - 1})" in str(caught.value)
    BundleDownloader(conf_for(leader.address, **{"nimbus.max.bundle.size.bytes": len(bundle)}),
                     dirs).download("t-1")
    assert dirs.is_downloaded("t-1")


def test_a_refused_token_is_said_so_when_asking_for_the_leader(tmp_path: Path) -> None:
    with stand_in_nimbus(auth_token="right") as nimbus, pytest.raises(DownloadError) as caught:
        BundleDownloader(conf_for(nimbus.address, **{"nimbus.rpc.auth.token": "wrong"}),
                         make_dirs(tmp_path)).download("t-1")
    assert str(caught.value).startswith("Nimbus refused this supervisor: ")
    assert str(caught.value).endswith(" (nimbus.rpc.auth.token must match Nimbus's)")


def test_a_refused_token_is_said_so_when_fetching(tmp_path: Path) -> None:
    bundle = bundle_bytes(tmp_path, {"app.txt": "x"})
    with stand_in_nimbus() as open_one, stand_in_nimbus(auth_token="right") as guarded:
        open_one.leader = guarded.address
        open_one.add("t-1", bundle, SPEC, None)
        dirs = make_dirs(tmp_path)
        with pytest.raises(DownloadError) as caught:
            BundleDownloader(conf_for(open_one.address), dirs).download("t-1")
    message = str(caught.value)
    assert message.startswith(f"Nimbus at {guarded.address} refused this supervisor: ")
    assert message.endswith(" (nimbus.rpc.auth.token must match Nimbus's)")
    assert "get_topology_files t-1" not in open_one.calls  # a refusal ends the download
    assert stormdist_entries(dirs) == []


def test_a_malformed_seed_is_a_download_error_naming_it(tmp_path: Path) -> None:
    dirs = make_dirs(tmp_path)
    with pytest.raises(DownloadError) as caught:
        BundleDownloader({"nimbus.seeds": ["127.0.0.1:notaport"]}, dirs).download("t-1")
    assert str(caught.value) == ("cannot download topology t-1: ValueError: Nimbus address "
                                 "'127.0.0.1:notaport' has no valid port (expected host:port)")
    assert stormdist_entries(dirs) == []


def test_an_interrupted_download_leaves_nothing_and_goes_on_raising(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dirs = make_dirs(tmp_path)
    downloader = BundleDownloader(conf_for("127.0.0.1:1"), dirs)

    def interrupted(topology_id: str, tmp: Path) -> None:
        (tmp / "bundle.zip").write_bytes(b"part")
        raise KeyboardInterrupt

    monkeypatch.setattr(downloader, "_fetch_from_any", interrupted)
    with pytest.raises(KeyboardInterrupt):
        downloader.download("t-1")
    assert stormdist_entries(dirs) == []


def test_the_leader_is_asked_with_a_short_timeout_and_no_retry(tmp_path: Path) -> None:
    dirs = make_dirs(tmp_path)
    for timeout, expected in ((12.0, LEADER_ASK_TIMEOUT_SECS), (3.0, 3.0)):
        conf = {"nimbus.rpc.timeout.secs": timeout, "nimbus.rpc.retries": 4, "nimbus.rpc.auth.token": "t"}
        client = BundleDownloader(conf, dirs)._asking_client("127.0.0.1", 1)  # noqa: SLF001
        try:
            assert (client.host, client.port, client.timeout_secs, client.retries, client._auth) == (  # noqa: SLF001
                "127.0.0.1", 1, expected, 0, "t")
        finally:
            client.close()


class BrokenDownloader:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def download(self, topology_id: str) -> None:
        self.asked.append(topology_id)
        raise RuntimeError("a bug in the downloader")


def test_a_downloader_bug_counts_as_a_failed_download_and_the_queue_goes_on(
        caplog: pytest.LogCaptureFixture) -> None:
    downloader = BrokenDownloader()
    done = threading.Semaphore(0)
    queue = DownloadQueue(downloader, done.release)  # type: ignore[arg-type]
    caplog.set_level(logging.INFO, logger="stormpy.supervisor.download")
    queue.start()
    try:
        assert queue.request("t-1")
        wait_for(lambda: done.acquire(blocking=False), 30, "the failed download")
        assert queue.pending() == set()
        assert not queue.request("t-1")  # backing off like any failed download
        assert queue.request("t-2")
        wait_for(lambda: done.acquire(blocking=False), 30, "the next download")
    finally:
        assert queue.stop()
    assert downloader.asked == ["t-1", "t-2"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warnings][:1] == [
        "download of t-1 failed: RuntimeError('a bug in the downloader') (retrying in 1 s)"]
    assert {r.name for r in caplog.records} == {"stormpy.supervisor.download"}


def test_a_nimbus_with_a_token_serves_a_supervisor_with_that_token(tmp_path: Path) -> None:
    bundle = bundle_bytes(tmp_path, {"app.txt": "x"})
    secret = {"topology.curve.secret": b"\x00\xffraw key bytes"}
    with stand_in_nimbus(auth_token="right") as guarded:
        guarded.add("t-1", bundle, SPEC, secret)
        dirs = SupervisorDirs(tmp_path / "fresh-local", "sup-9")  # nothing of it exists yet
        conf = conf_for(guarded.address, **{"nimbus.rpc.auth.token": "right"})
        BundleDownloader(conf, dirs).download("t-1")
    assert guarded.calls[:2] == ["get_leader", "get_topology_files t-1"]
    doc = msgpack.unpackb(dirs.topology_file("t-1").read_bytes(), raw=False)
    assert doc["conf"] == secret  # bytes stay bytes


class Flaky:
    def __init__(self) -> None:
        self.failing = True

    def download(self, topology_id: str) -> None:
        if self.failing:
            raise DownloadError(f"cannot download topology {topology_id}: Nimbus is away")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_success_starts_the_backoff_of_the_next_failure_over(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    downloader = Flaky()
    done = threading.Semaphore(0)
    queue = DownloadQueue(downloader, done.release, clock=clock)  # type: ignore[arg-type]
    caplog.set_level(logging.INFO, logger="stormpy.supervisor.download")
    queue.start()
    try:
        def attempt() -> None:
            assert queue.request("t-1")
            wait_for(lambda: done.acquire(blocking=False), 30, "the download attempt")

        attempt()
        clock.now += 1.0
        attempt()  # failed twice: held back 2 s now
        clock.now += 2.0
        downloader.failing = False
        attempt()
        downloader.failing = True
        attempt()  # a failure after a success: held back 1 s, not 4 s
        clock.now += 1.0
        assert queue.request("t-1")
        wait_for(lambda: done.acquire(blocking=False), 30, "the last attempt")
    finally:
        assert queue.stop()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings[:2] == ["cannot download topology t-1: Nimbus is away (retrying in 1 s)",
                            "cannot download topology t-1: Nimbus is away (retrying in 2 s)"]
