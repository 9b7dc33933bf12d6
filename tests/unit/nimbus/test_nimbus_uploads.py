"""Upload sessions: chunks, checksum, size limit, bundle checks, expiry; the bundle store."""

from __future__ import annotations

import hashlib
import threading
import zipfile
from pathlib import Path

import pytest
from nimbus_fakes import SimClock

from stormpy.bundle import build_bundle
from stormpy.nimbus.downloads import DownloadManager
from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.store import BundleStore
from stormpy.nimbus.uploads import UNPACKED_LIMIT_FACTOR, UploadManager
from stormpy.rpc.errors import NotFoundError, UploadError


@pytest.fixture
def manager(dirs: NimbusDirs, clock: SimClock) -> UploadManager:
    return UploadManager(dirs, max_bundle_bytes=200_000, expiration_secs=60, chunk_size=1000, clock=clock)


@pytest.fixture
def bundle(tmp_path: Path) -> bytes:
    src = tmp_path / "src"
    src.mkdir()
    (src / "topo.py").write_text("VALUE = 42\n" * 300)
    return build_bundle(src, tmp_path / "b.zip").path.read_bytes()


def upload(manager: UploadManager, data: bytes, sha: str | None = None) -> str:
    begun = manager.begin(len(data))
    step = begun["chunk_size"]
    for off in range(0, len(data), step):
        manager.chunk(begun["upload_id"], data[off:off + step], off)
    return manager.finish(begun["upload_id"], sha or hashlib.sha256(data).hexdigest())


def test_good_upload_is_staged_then_taken(manager: UploadManager, bundle: bytes) -> None:
    key = upload(manager, bundle)
    assert manager.open_sessions == 0 and manager.staged_count == 1
    staged = manager.take(key)
    assert staged.path.read_bytes() == bundle
    assert staged.sha256 == hashlib.sha256(bundle).hexdigest()
    with pytest.raises(NotFoundError):
        manager.take(key)


def test_wrong_checksum_is_refused_and_cleaned(manager: UploadManager, bundle: bytes,
                                                dirs: NimbusDirs) -> None:
    with pytest.raises(UploadError, match="sha256 mismatch"):
        upload(manager, bundle, sha="0" * 64)
    assert manager.open_sessions == 0 and list(dirs.uploads.iterdir()) == []
    assert manager.stats() == {"finished": 0, "bytes": 0, "failed": 1}
    upload(manager, bundle)
    assert manager.stats() == {"finished": 1, "bytes": len(bundle), "failed": 1}


def test_oversized_bundle_is_refused_up_front(manager: UploadManager) -> None:
    with pytest.raises(UploadError, match="exceeds the limit"):
        manager.begin(200_001)
    for bad in (0, -1, "10", True, None):
        with pytest.raises(UploadError):
            manager.begin(bad)


def test_sending_more_than_declared_aborts(manager: UploadManager) -> None:
    begun = manager.begin(10)
    with pytest.raises(UploadError, match="more than the declared"):
        manager.chunk(begun["upload_id"], b"x" * 11, 0)
    with pytest.raises(UploadError, match="unknown upload id"):
        manager.chunk(begun["upload_id"], b"x", 0)


def test_chunks_must_be_in_order_but_retries_are_fine(manager: UploadManager) -> None:
    begun = manager.begin(6)
    uid = begun["upload_id"]
    assert manager.chunk(uid, b"abc", 0) == {"received": 3}
    assert manager.chunk(uid, b"abc", 0) == {"received": 3}  # retried chunk
    with pytest.raises(UploadError, match="expected offset 3"):
        manager.chunk(uid, b"def", 4)
    with pytest.raises(UploadError, match="data must be bytes"):
        manager.chunk(uid, "def", 3)
    with pytest.raises(UploadError, match="received 3 of the declared 6"):
        manager.finish(uid, "0" * 64)


def test_path_traversal_entry_is_refused(manager: UploadManager, tmp_path: Path) -> None:
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../../etc/evil.py", "x")
        zf.writestr("MANIFEST.json", '{"format": 1, "created": 0, "files": {}}')
    with pytest.raises(UploadError, match="escapes the bundle"):
        upload(manager, evil.read_bytes())


def test_not_a_zip_is_refused(manager: UploadManager) -> None:
    with pytest.raises(UploadError, match="not a valid bundle"):
        upload(manager, b"definitely not a zip file")


def test_abandoned_sessions_and_unclaimed_bundles_expire(manager: UploadManager, bundle: bytes,
                                                         clock: SimClock, dirs: NimbusDirs) -> None:
    key = upload(manager, bundle)
    begun = manager.begin(100)
    manager.chunk(begun["upload_id"], b"x" * 10, 0)
    clock.advance(30)
    assert manager.expire() == []
    clock.advance(31)
    assert sorted(manager.expire()) == sorted([key, begun["upload_id"]])
    assert list(dirs.uploads.iterdir()) == []
    with pytest.raises(UploadError):
        manager.chunk(begun["upload_id"], b"x", 10)


def test_active_session_does_not_expire(manager: UploadManager, clock: SimClock) -> None:
    begun = manager.begin(100)
    for i in range(5):
        clock.advance(50)
        manager.chunk(begun["upload_id"], b"x", i)
        assert manager.expire() == []


def test_concurrent_uploads_from_several_threads(manager: UploadManager, bundle: bytes) -> None:
    keys: list[str] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            keys.append(upload(manager, bundle))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(set(keys)) == 6


def test_leftovers_of_an_earlier_process_are_removed(manager: UploadManager, dirs: NimbusDirs) -> None:
    (dirs.uploads / "uold.part").write_bytes(b"x")
    assert manager.clear_leftovers() == 1


def test_store_install_load_remove_and_download(manager: UploadManager, bundle: bytes,
                                                dirs: NimbusDirs, clock: SimClock) -> None:
    store = BundleStore(dirs)
    staged = manager.take(upload(manager, bundle))
    stored = store.install("wc-1-abc", staged, {"version": 1, "components": {}}, {"a": 1})
    assert stored.bundle_path.read_bytes() == bundle
    assert store.load("wc-1-abc").conf == {"a": 1}
    assert store.topology_ids() == ["wc-1-abc"]
    downloads = DownloadManager(chunk_size=700, expiration_secs=10, clock=clock)
    begun = downloads.begin(stored.bundle_path, stored.bundle_size, stored.bundle_sha256)
    data, off = b"", 0
    while chunk := downloads.chunk(begun["download_id"], off)["data"]:
        data += chunk
        off += len(chunk)
    assert data == bundle
    store.remove("wc-1-abc")
    assert store.topology_ids() == []
    with pytest.raises(ValueError):
        dirs.stormdist("../escape")


def test_overlapping_or_repeated_chunks_never_move_the_byte_count_back(
        manager: UploadManager, dirs: NimbusDirs) -> None:
    """Guarantee: a chunk overlapping the bytes already received (starting inside them and
    running past them) is refused, a repeated chunk is never written twice, and the session's
    byte count never goes backwards; the bytes staged are exactly the ones sent once."""
    data = bytes(range(256)) * 4
    src = dirs.root / "src"
    src.mkdir()
    (src / "blob.bin").write_bytes(data)
    bundle = build_bundle(src, dirs.root / "b.zip").path.read_bytes()
    begun = manager.begin(len(bundle))
    uid = begun["upload_id"]
    half = len(bundle) // 2
    assert manager.chunk(uid, bundle[:100], 0) == {"received": 100}
    assert manager.chunk(uid, bundle[100:half], 100) == {"received": half}
    with pytest.raises(UploadError, match=f"expected offset {half}"):
        manager.chunk(uid, bundle[half - 10:half + 10], half - 10)  # overlaps the end
    assert manager.chunk(uid, bundle[:100], 0) == {"received": half}  # an old chunk repeated
    assert manager.chunk(uid, bundle[100:half], 100) == {"received": half}  # the last repeated
    with pytest.raises(UploadError, match=f"expected offset {half}"):
        manager.chunk(uid, bundle[half + 1:], half + 1)  # a gap
    assert manager.chunk(uid, bundle[half:], half) == {"received": len(bundle)}
    key = manager.finish(uid, hashlib.sha256(bundle).hexdigest())
    assert manager.take(key).path.read_bytes() == bundle


def _zeros_bundle(tmp_path: Path, name: str, unpacked: int) -> bytes:
    """A small bundle (zeros compress well) whose one file unpacks to ``unpacked`` bytes."""
    src = tmp_path / name
    src.mkdir()
    (src / "zeros.bin").write_bytes(bytes(unpacked))
    return build_bundle(src, tmp_path / f"{name}.zip").path.read_bytes()


def test_unpacked_size_limit_is_enforced_when_the_upload_finishes(dirs: NimbusDirs,
                                                                  tmp_path: Path) -> None:
    """Guarantee: the unpacked-size limit (UNPACKED_LIMIT_FACTOR x nimbus.max.bundle.size.bytes)
    is enforced at upload time: a small bundle unpacking one byte past it is refused and its
    file removed (nothing staged); one unpacking to exactly the limit is accepted."""
    max_bytes = 4000
    limit = max_bytes * UNPACKED_LIMIT_FACTOR
    manager = UploadManager(dirs, max_bundle_bytes=max_bytes, expiration_secs=60, chunk_size=1000)
    over = _zeros_bundle(tmp_path, "over", limit + 1)
    assert len(over) < max_bytes
    with pytest.raises(UploadError, match="unpacked size limit"):
        upload(manager, over)
    assert manager.open_sessions == 0 and manager.staged_count == 0
    assert list(dirs.uploads.iterdir()) == []
    at_limit = _zeros_bundle(tmp_path, "at", limit)
    key = upload(manager, at_limit)
    assert manager.take(key).path.read_bytes() == at_limit


def test_bundle_of_exactly_the_size_limit_is_accepted(dirs: NimbusDirs, tmp_path: Path) -> None:
    """Guarantee: nimbus.max.bundle.size.bytes is inclusive: a bundle of exactly that many bytes
    uploads and is staged; one byte more is refused up front."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "blob.bin").write_bytes(bytes(range(256)) * 8)
    data = build_bundle(src, tmp_path / "b.zip").path.read_bytes()
    manager = UploadManager(dirs, max_bundle_bytes=len(data), expiration_secs=60, chunk_size=700)
    key = upload(manager, data)
    assert manager.take(key).size == len(data)
    with pytest.raises(UploadError, match="exceeds the limit"):
        manager.begin(len(data) + 1)
