"""Nimbus uploads: the session caps (in all, and per client, with their defaults and words), the
counters of finished bytes and failed uploads adding up, an unexpected verification error that
aborts the session, and expiry that only takes idle sessions."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from nimbus_fakes import SimClock
from test_upload_refusals import EXPIRY, LIMIT, _bundle, _upload

from stormpy.nimbus import uploads
from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.uploads import UploadManager
from stormpy.rpc.errors import UploadError


@pytest.fixture
def manager(dirs: NimbusDirs, clock: SimClock) -> Iterator[UploadManager]:
    """The defaults for the session caps (64 in all, 8 per client); closed after the test (its
    open sessions' files closed and removed)."""
    manager = UploadManager(dirs, max_bundle_bytes=LIMIT, expiration_secs=EXPIRY, chunk_size=1000,
                            clock=clock)
    yield manager
    manager.close()


def test_each_client_may_hold_eight_sessions_by_default(manager: UploadManager) -> None:
    for _ in range(8):
        manager.begin(10, client="10.0.0.1:5000")
    with pytest.raises(UploadError) as refused:
        manager.begin(10, client="10.0.0.1:5000")
    assert str(refused.value) == (
        "begin_upload refused: client 10.0.0.1:5000 has 8 uploads open, the limit is 8 "
        "(nimbus.upload.max.sessions.per.client); finish or abandon other uploads (idle ones "
        f"expire after {EXPIRY:g} s)")
    manager.begin(10, client="10.0.0.2:5000")  # another client is not held back
    for _ in range(8):
        manager.begin(10)
    with pytest.raises(UploadError, match=r"client \(unknown\) has 8 uploads open"):
        manager.begin(10)


def test_sixty_four_sessions_in_all_by_default(manager: UploadManager) -> None:
    for i in range(64):
        manager.begin(10, client=f"c{i}")
    with pytest.raises(UploadError, match=r"begin_upload refused: 64 uploads are open, the limit is "
                                          r"64 \(nimbus.upload.max.sessions\); finish or abandon"):
        manager.begin(10, client="another")
    assert manager.open_sessions == 64


def test_expiry_frees_idle_sessions_of_a_client_at_its_cap(manager: UploadManager,
                                                          clock: SimClock) -> None:
    for _ in range(8):
        manager.begin(10, client="c")
    clock.now += EXPIRY + 1
    manager.begin(10, client="c")  # the idle ones expired first
    assert manager.open_sessions == 1


def test_expire_takes_only_idle_sessions(manager: UploadManager, clock: SimClock) -> None:
    fresh = manager.begin(10)["upload_id"]
    assert manager.expire() == [] and manager.open_sessions == 1
    clock.now += EXPIRY / 2
    manager.chunk(fresh, b"x" * 5, 0)  # activity keeps it
    clock.now += EXPIRY / 2 + 1
    assert manager.expire() == [] and manager.open_sessions == 1
    clock.now += EXPIRY
    assert manager.expire() == [fresh] and manager.open_sessions == 0


def test_counters_add_up_finished_bytes_and_failures(manager: UploadManager, tmp_path: Path) -> None:
    first = _bundle(tmp_path, "one", 300)
    second = _bundle(tmp_path, "two", 600)
    _upload(manager, first)
    _upload(manager, second)
    for _ in range(2):
        begun = manager.begin(3)
        manager.chunk(begun["upload_id"], b"abc", 0)
        with pytest.raises(UploadError, match="sha256 mismatch"):
            manager.finish(begun["upload_id"], "0" * 64)
    assert manager.stats() == {"finished": 2, "bytes": len(first) + len(second), "failed": 2}


def test_an_unexpected_verification_error_aborts_the_session(
        manager: UploadManager, dirs: NimbusDirs, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(path: Path, max_unpacked_bytes: int) -> None:
        raise OSError("disk gone")
    monkeypatch.setattr(uploads, "verify_bundle", broken)
    data = _bundle(tmp_path, "b", 100)
    begun = manager.begin(len(data))
    manager.chunk(begun["upload_id"], data, 0)
    with pytest.raises(UploadError) as failed:
        manager.finish(begun["upload_id"], hashlib.sha256(data).hexdigest())
    assert str(failed.value) == f"upload {begun['upload_id']} could not be verified: OSError: disk gone"
    assert manager.open_sessions == 0 and manager.stats()["failed"] == 1
    assert list(dirs.uploads.iterdir()) == []  # no part file left
    assert len(data) < LIMIT
