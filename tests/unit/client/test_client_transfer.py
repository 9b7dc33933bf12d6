"""stormpy.client._transfer: the one chunked bundle transfer checks what it moves. A download whose
bytes do not match the announced sha256 or size, or whose announcement differs from what the
caller was told, fails naming the bundle and leaves no file; an upload whose chunks Nimbus counts
differently fails; a good transfer round-trips the bytes in the chunk size Nimbus asks for."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from stormpy.client import BundleDigest, download_bundle, upload_bundle
from stormpy.rpc.errors import UploadError

PAYLOAD = bytes(range(256)) * 10  # 2560 bytes: several chunks


class FakeNimbus:
    """The upload/download methods of Nimbus's RPC, as a ``call(method, **args)``."""

    def __init__(self, served: bytes = PAYLOAD, announced_sha256: str | None = None,
                 announced_size: int | None = None, chunk_size: int = 1000) -> None:
        self.served = served
        self.sha256 = announced_sha256 or hashlib.sha256(served).hexdigest()
        self.size = len(served) if announced_size is None else announced_size
        self.chunk_size = chunk_size
        self.uploaded = bytearray()
        self.finished_with: str | None = None
        self.miscount = 0

    def __call__(self, method: str, **args: Any) -> Any:
        if method == "begin_download":
            return {"download_id": "d1", "size": self.size, "sha256": self.sha256}
        if method == "download_chunk":
            offset = args["offset"]
            return {"data": self.served[offset:offset + self.chunk_size]}
        if method == "begin_upload":
            return {"upload_id": "u1", "chunk_size": self.chunk_size}
        if method == "upload_chunk":
            assert args["offset"] == len(self.uploaded)
            self.uploaded += args["data"]
            return {"received": len(self.uploaded) + self.miscount}
        if method == "finish_upload":
            self.finished_with = args["sha256"]
            return {"bundle_key": "key-1"}
        raise AssertionError(f"unexpected call {method}")


def test_a_good_download_and_upload_round_trip(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    digest = download_bundle(FakeNimbus(), "key-1", tmp_path / "b.zip",
                             progress=lambda done, total: seen.append((done, total)))
    assert (tmp_path / "b.zip").read_bytes() == PAYLOAD
    assert digest == BundleDigest(len(PAYLOAD), hashlib.sha256(PAYLOAD).hexdigest())
    assert seen == [(1000, 2560), (2000, 2560), (2560, 2560)]
    nimbus = FakeNimbus()
    assert upload_bundle(nimbus, tmp_path / "b.zip") == "key-1"
    assert bytes(nimbus.uploaded) == PAYLOAD and nimbus.finished_with == digest.sha256


def test_a_checksum_mismatch_fails_and_leaves_no_file(tmp_path: Path) -> None:
    with pytest.raises(UploadError, match="bundle key-1 is corrupt: sha256 mismatch"):
        download_bundle(FakeNimbus(announced_sha256="0" * 64), "key-1", tmp_path / "b.zip")
    assert not (tmp_path / "b.zip").exists()


@pytest.mark.parametrize(("announced", "error"), [
    (len(PAYLOAD) + 1, "received 2560 of 2561 bytes"),
    (len(PAYLOAD) - 1, "sent more than the announced 2559 bytes"),
])
def test_a_size_mismatch_fails_and_leaves_no_file(tmp_path: Path, announced: int, error: str) -> None:
    with pytest.raises(UploadError, match=error):
        download_bundle(FakeNimbus(announced_size=announced), "key-1", tmp_path / "b.zip")
    assert not (tmp_path / "b.zip").exists()


def test_an_announcement_other_than_expected_or_too_large_is_refused_before_any_byte(tmp_path: Path) -> None:
    told = BundleDigest(len(PAYLOAD), "f" * 64)
    with pytest.raises(UploadError, match="announced two different bundles"):
        download_bundle(FakeNimbus(), "key-1", tmp_path / "b.zip", expected=told)
    with pytest.raises(UploadError, match=r"exceeds nimbus\.max\.bundle\.size\.bytes \(100\)"):
        download_bundle(FakeNimbus(), "key-1", tmp_path / "b.zip", max_bytes=100)
    assert not (tmp_path / "b.zip").exists()


def test_an_upload_nimbus_counts_differently_fails(tmp_path: Path) -> None:
    (tmp_path / "b.zip").write_bytes(PAYLOAD)
    nimbus = FakeNimbus()
    nimbus.miscount = 1
    with pytest.raises(UploadError, match="acknowledged 1001 bytes, expected 1000"):
        upload_bundle(nimbus, tmp_path / "b.zip")
    assert nimbus.finished_with is None


def test_a_bundle_of_exactly_the_size_limit_downloads(tmp_path: Path) -> None:
    digest = download_bundle(FakeNimbus(), "key-1", tmp_path / "b.zip", max_bytes=len(PAYLOAD))
    assert digest.size == len(PAYLOAD) and (tmp_path / "b.zip").read_bytes() == PAYLOAD
