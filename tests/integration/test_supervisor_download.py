"""Bundle download from a (fake) Nimbus over RPC: chunked, verified, unpacked atomically; any
mismatch leaves nothing behind. With a supervisor, a failed download is retried."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from supervisor_kit import (
    PACED_FILES,
    WORDCOUNT_FILES,
    FakeNimbus,
    PublishedBundle,
    SupervisorEnv,
    paced_spec,
    read_msgpack,
    wait_for,
    wordcount_spec,
)

from stormpy.bundle import build_bundle
from stormpy.rpc import RpcClient
from stormpy.supervisor import BundleDownloader, DownloadError, SupervisorDirs
from stormpy.testing import free_ports

pytest_plugins = ["supervisor_fixtures"]
pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def nimbus(tmp_path: Path) -> Iterator[FakeNimbus]:
    fake = FakeNimbus(chunk_size=1024)
    src = tmp_path / "src"
    src.mkdir()
    for f in WORDCOUNT_FILES:
        (src / f.name).write_bytes(f.read_bytes())
    (src / "pkg").mkdir()
    (src / "pkg" / "data.bin").write_bytes(bytes(range(256)) * 40)  # several chunks
    info = build_bundle(src, tmp_path / "bundle.zip")
    fake.topologies["wc-7"] = PublishedBundle(info.path, info.sha256, info.size,
                                              wordcount_spec(10).to_doc(), {"topology.workers": 1})
    try:
        yield fake
    finally:
        fake.close()


def downloader(nimbus: FakeNimbus, tmp_path: Path, port: int | None = None) -> BundleDownloader:
    conf = {"nimbus.host": "127.0.0.1", "nimbus.seeds": [], "nimbus.thrift.port": port or nimbus.port}
    dirs = SupervisorDirs(tmp_path / "local", "sup-1")
    return BundleDownloader(conf, dirs, client_factory=lambda h, p: RpcClient(
        h, p, timeout_secs=2.0, retries=0, service="Nimbus"))


def test_download_verifies_and_unpacks(nimbus: FakeNimbus, tmp_path: Path) -> None:
    d = downloader(nimbus, tmp_path)
    target = d.download("wc-7")
    assert target == d.dirs.stormdist("wc-7") and d.dirs.is_downloaded("wc-7")
    assert (target / "code" / "wordcount.py").read_bytes() == WORDCOUNT_FILES[0].read_bytes()
    assert (target / "code" / "pkg" / "data.bin").stat().st_size == 256 * 40
    doc = read_msgpack(target / "topology.msgpack")
    assert doc["conf"] == {"topology.workers": 1} and "sentences" in doc["spec"]["components"]
    assert sorted(p.name for p in d.dirs.stormdist_root.iterdir()) == ["wc-7"]
    d.download("wc-7")  # a second download replaces the first
    assert d.dirs.is_downloaded("wc-7")


def test_checksum_mismatch_leaves_nothing(nimbus: FakeNimbus, tmp_path: Path) -> None:
    t = nimbus.topologies["wc-7"]
    nimbus.topologies["wc-7"] = dataclasses.replace(t, sha256="0" * 64)
    d = downloader(nimbus, tmp_path)
    with pytest.raises(DownloadError, match="wc-7"):
        d.download("wc-7")
    assert list(d.dirs.stormdist_root.iterdir()) == []


def test_unknown_topology_and_unreachable_nimbus(nimbus: FakeNimbus, tmp_path: Path) -> None:
    with pytest.raises(DownloadError, match="NotFoundError"):
        downloader(nimbus, tmp_path).download("nope-1")
    (dead_port,) = free_ports(1)
    with pytest.raises(DownloadError, match="no Nimbus answered"):
        downloader(nimbus, tmp_path, port=dead_port).download("wc-7")


@pytest.mark.zookeeper
@pytest.mark.timeout(90)
def test_supervisor_retries_a_failed_download(supervisor_env: SupervisorEnv) -> None:
    env = supervisor_env
    ports = free_ports(1)
    sup = env.start_supervisor("a", ports)
    env.publish("retry-1", paced_spec(rate=20), {}, [(sup.supervisor_id, ports[0])], files=PACED_FILES)
    good = env.nimbus.topologies["retry-1"]
    env.nimbus.topologies["retry-1"] = dataclasses.replace(good, sha256="f" * 64)
    assert sup.log_path is not None
    wait_for(lambda: "sha256 mismatch" in sup.log_path.read_text(), 20, "a failed download")
    assert sup.workers() == {}
    env.nimbus.topologies["retry-1"] = good
    wait_for(lambda: env.total("retry-1", "sink", "acked") > 5, 40, "the retried download to run")
