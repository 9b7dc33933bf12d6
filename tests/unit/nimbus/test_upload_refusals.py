"""Nimbus uploads at their edges: what is refused (and with which words), what is accepted exactly
at a limit, when sessions and staged bundles expire, and which files survive a cleanup."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from nimbus_fakes import SimClock

from stormpy.bundle import build_bundle
from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.uploads import UNPACKED_LIMIT_FACTOR, UploadManager
from stormpy.rpc.errors import NotFoundError, UploadError

LIMIT = 4000
EXPIRY = 60


@pytest.fixture
def manager(dirs: NimbusDirs, clock: SimClock) -> Iterator[UploadManager]:
    """Closed after the test: its open sessions' files closed and removed."""
    manager = UploadManager(dirs, max_bundle_bytes=LIMIT, expiration_secs=EXPIRY, chunk_size=1000,
                            clock=clock)
    yield manager
    manager.close()


def _bundle(tmp_path: Path, name: str, unpacked: int) -> bytes:
    """A bundle whose one source file is ``unpacked`` bytes of very compressible text."""
    src = tmp_path / name
    src.mkdir()
    (src / "topo.py").write_text("#" * (unpacked - 1) + "\n")
    return build_bundle(src, tmp_path / f"{name}.zip").path.read_bytes()


def _upload(manager: UploadManager, data: bytes) -> str:
    begun = manager.begin(len(data))
    step = begun["chunk_size"]
    for off in range(0, len(data), step):
        manager.chunk(begun["upload_id"], data[off:off + step], off)
    return manager.finish(begun["upload_id"], hashlib.sha256(data).hexdigest())


def test_sizes_from_one_byte_to_exactly_the_limit_are_accepted(manager: UploadManager) -> None:
    assert manager.begin(1)["upload_id"] != manager.begin(LIMIT)["upload_id"]
    assert manager.open_sessions == 2


def test_refused_sizes_name_the_problem(manager: UploadManager) -> None:
    with pytest.raises(UploadError, match=r"^begin_upload: size must be a positive integer, got 0$"):
        manager.begin(0)
    with pytest.raises(UploadError, match=rf"^bundle of {LIMIT + 1} bytes exceeds the limit of "
                                          rf"{LIMIT} bytes \(nimbus\.max\.bundle\.size\.bytes\)$"):
        manager.begin(LIMIT + 1)


def test_refused_chunks_name_the_problem(manager: UploadManager) -> None:
    uid = manager.begin(6)["upload_id"]
    with pytest.raises(UploadError, match=r"^upload_chunk: data must be bytes, got str$"):
        manager.chunk(uid, "abc", 0)
    for offset in (-1, "0", None):
        with pytest.raises(UploadError,
                           match=rf"^upload_chunk: offset must be a non-negative integer, got {offset!r}$"):
            manager.chunk(uid, b"abc", offset)
    with pytest.raises(UploadError, match=rf"^upload {uid}: received more than the declared 6 bytes; "
                                          r"upload aborted$"):
        manager.chunk(uid, b"abcdefg", 0)


@pytest.mark.parametrize("bad_id", ["u-never-begun", ["u1"], None])
def test_an_unknown_upload_id_is_refused_whatever_its_type(manager: UploadManager,
                                                             bad_id: object) -> None:
    with pytest.raises(UploadError) as caught:
        manager.chunk(bad_id, b"x", 0)
    assert str(caught.value) == (f"unknown upload id {bad_id!r} (never begun, finished, aborted, or "
                                 "expired after nimbus.file.copy.expiration.secs)")


@pytest.mark.parametrize("bad_key", ["b-never-staged", ["b1"]])
def test_an_unknown_bundle_key_is_not_found_whatever_its_type(manager: UploadManager, tmp_path: Path,
                                                               bad_key: object) -> None:
    _upload(manager, _bundle(tmp_path, "b", 100))  # something staged to look among
    with pytest.raises(NotFoundError) as caught:
        manager.take(bad_key)
    assert str(caught.value) == (f"no uploaded bundle with key {bad_key!r} (never uploaded, already "
                                 "submitted, or expired after nimbus.file.copy.expiration.secs)")


def test_a_checksum_that_is_not_a_string_is_refused(manager: UploadManager) -> None:
    uid = manager.begin(3)["upload_id"]
    manager.chunk(uid, b"abc", 0)
    with pytest.raises(UploadError, match=r"^finish_upload: sha256 must be a hex string, got 123$"):
        manager.finish(uid, 123)
    assert manager.open_sessions == 0


def test_an_overlapping_chunk_is_refused_and_the_byte_count_never_goes_back(
        manager: UploadManager) -> None:
    uid = manager.begin(6)["upload_id"]
    assert manager.chunk(uid, b"abc", 0) == {"received": 3}
    with pytest.raises(UploadError, match=r"chunk at offset 1, expected offset 3$"):
        manager.chunk(uid, b"bcd", 1)  # starts inside what was received, ends past it
    assert manager.chunk(uid, b"bc", 1) == {"received": 3}  # a retry inside: acknowledged
    assert manager.chunk(uid, b"", 3) == {"received": 3}
    assert manager.chunk(uid, b"def", 3) == {"received": 6}


def test_the_unpacked_size_limit_is_enforced_when_the_upload_finishes(
        manager: UploadManager, tmp_path: Path, dirs: NimbusDirs) -> None:
    budget = LIMIT * UNPACKED_LIMIT_FACTOR
    fits = _bundle(tmp_path, "fits", budget // 2)
    bomb = _bundle(tmp_path, "bomb", budget + 1)
    assert len(fits) <= LIMIT and len(bomb) <= LIMIT
    key = _upload(manager, fits)
    with pytest.raises(UploadError, match="exceeds the unpacked size limit"):
        _upload(manager, bomb)
    assert manager.staged_count == 1 and manager.open_sessions == 0
    assert sorted(p.name for p in dirs.uploads.iterdir()) == [f"{key}.zip"]


def test_the_default_chunk_size_is_300_kib(dirs: NimbusDirs) -> None:
    manager = UploadManager(dirs, max_bundle_bytes=LIMIT, expiration_secs=EXPIRY)
    assert manager.begin(10)["chunk_size"] == 300 * 1024


def test_uploads_start_in_a_local_directory_that_does_not_exist_yet(tmp_path: Path) -> None:
    manager = UploadManager(NimbusDirs(tmp_path / "fresh" / "local"), max_bundle_bytes=LIMIT,
                            expiration_secs=EXPIRY)
    assert manager.clear_leftovers() == 0
    manager.close()
    manager = UploadManager(NimbusDirs(tmp_path / "other" / "local"), max_bundle_bytes=LIMIT,
                            expiration_secs=EXPIRY)
    uid = manager.begin(3)["upload_id"]
    assert manager.chunk(uid, b"abc", 0) == {"received": 3}


def test_clearing_leftovers_keeps_open_sessions_and_staged_bundles(
        manager: UploadManager, dirs: NimbusDirs, tmp_path: Path) -> None:
    key = _upload(manager, _bundle(tmp_path, "b", 100))
    uid = manager.begin(6)["upload_id"]
    manager.chunk(uid, b"abc", 0)
    (dirs.uploads / "uold.part").write_bytes(b"x")
    (dirs.uploads / "bold.zip").write_bytes(b"y")
    (dirs.uploads / "a-directory").mkdir()
    assert manager.clear_leftovers() == 2
    assert (dirs.uploads / "a-directory").is_dir()
    assert manager.chunk(uid, b"def", 3) == {"received": 6}
    assert manager.take(key).path.exists()


def test_close_aborts_every_session_and_drops_every_staged_bundle(
        manager: UploadManager, dirs: NimbusDirs, tmp_path: Path) -> None:
    key = _upload(manager, _bundle(tmp_path, "b", 100))
    uid = manager.begin(6)["upload_id"]
    manager.close()
    assert manager.open_sessions == 0 and manager.staged_count == 0
    assert list(dirs.uploads.iterdir()) == []
    with pytest.raises(UploadError):
        manager.chunk(uid, b"abc", 0)
    with pytest.raises(NotFoundError):
        manager.take(key)


def test_a_bundle_put_back_after_a_failed_submit_can_be_taken_again(
        manager: UploadManager, tmp_path: Path) -> None:
    staged = manager.take(_upload(manager, _bundle(tmp_path, "b", 100)))
    manager.restage(staged)
    assert manager.take(staged.bundle_key) == staged


def test_a_session_with_no_chunk_expires_exactly_at_the_expiration(manager: UploadManager,
                                                                   clock: SimClock) -> None:
    uid = manager.begin(6)["upload_id"]
    clock.advance(EXPIRY - 1)
    assert manager.expire() == []
    clock.advance(1)
    assert manager.expire() == [uid]
    assert manager.open_sessions == 0


def test_a_staged_bundle_expires_exactly_at_the_expiration(manager: UploadManager, clock: SimClock,
                                                          tmp_path: Path) -> None:
    key = _upload(manager, _bundle(tmp_path, "b", 100))
    clock.advance(EXPIRY)
    assert manager.expire() == [key]
    assert manager.staged_count == 0


def test_expiry_can_be_judged_at_a_given_time(manager: UploadManager, clock: SimClock) -> None:
    uid = manager.begin(6)["upload_id"]
    assert manager.expire(now=clock() + EXPIRY - 1) == []
    assert manager.expire(now=clock() + EXPIRY) == [uid]
