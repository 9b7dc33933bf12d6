"""Hostile and damaged bundles: forged end records, entry and manifest bounds, unsupported or
encrypted entries, corrupt data, and what ``unpack_bundle`` leaves behind when it refuses."""

from __future__ import annotations

import hashlib
import stat
import struct
import zipfile
from pathlib import Path

import pytest

import stormpy.bundle.verify as verify_module
from stormpy.bundle import MANIFEST_NAME, BundleError, Manifest, read_manifest, unpack_bundle, verify_bundle

EOCD = struct.Struct("<4s4H2LH")


def make_zip(path: Path, entries: dict[str, bytes], *, modes: dict[str, int] | None = None,
             manifest: dict[str, str] | None = None) -> Path:
    """A stored (uncompressed) bundle of ``entries`` with a manifest of their true hashes."""
    files = manifest if manifest is not None else {
        name: hashlib.sha256(data).hexdigest() for name, data in entries.items()}
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in entries.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (modes or {}).get(name, 0o100644) << 16
            zf.writestr(info, data)
        zf.writestr(MANIFEST_NAME, Manifest(files=files, created=1.0).to_json())
    return path


def patch_end_record(path: Path, *, disk: int | None = None, total: int | None = None,
                     comment: bytes = b"") -> None:
    """Rewrite the entry counts of the zip's end record and append ``comment``."""
    data = bytearray(path.read_bytes())
    at = data.rfind(b"PK\x05\x06")
    fields = list(EOCD.unpack_from(data, at))
    if disk is not None:
        fields[3] = disk
    if total is not None:
        fields[4] = total
    fields[7] = len(comment)
    path.write_bytes(bytes(data[:at]) + EOCD.pack(*fields) + comment)


def patch_central_header(path: Path, name: str, offset: int, fmt: str, value: int) -> None:
    """Overwrite one field of ``name``'s central directory header (what zipfile reads)."""
    data = bytearray(path.read_bytes())
    at = data.find(b"PK\x01\x02")
    encoded = name.encode()
    while True:
        name_len = struct.unpack_from("<H", data, at + 28)[0]
        if bytes(data[at + 46:at + 46 + name_len]) == encoded:
            break
        at = data.find(b"PK\x01\x02", at + 4)
    struct.pack_into(fmt, data, at + offset, value)
    path.write_bytes(bytes(data))


def test_end_record_announcing_too_many_entries_is_refused_before_parsing(tmp_path: Path) -> None:
    bundle = make_zip(tmp_path / "b.zip", {"a.py": b"x"})
    patch_end_record(bundle, disk=30000, total=0)
    with pytest.raises(BundleError, match=r"has 30000 entries; a bundle may hold at most 20000"):
        verify_bundle(bundle)
    patch_end_record(bundle, disk=0, total=30000)
    with pytest.raises(BundleError, match=r"has 30000 entries; a bundle may hold at most 20000"):
        verify_bundle(bundle)


def test_zip64_entry_marker_is_reported_as_at_least_65535(tmp_path: Path) -> None:
    bundle = make_zip(tmp_path / "b.zip", {"a.py": b"x"})
    patch_end_record(bundle, disk=0xFFFF, total=0xFFFF)
    with pytest.raises(BundleError, match=r"has at least 65535 entries; a bundle may hold at most"):
        verify_bundle(bundle)


def test_end_record_behind_the_longest_comment_is_still_found(tmp_path: Path) -> None:
    bundle = make_zip(tmp_path / "b.zip", {"a.py": b"x"})
    patch_end_record(bundle, disk=30000, total=30000, comment=b"c" * 0xFFFF)
    with pytest.raises(BundleError, match=r"has 30000 entries"):
        verify_bundle(bundle)


def test_end_record_at_the_first_byte_is_checked(tmp_path: Path) -> None:
    bundle = tmp_path / "empty.zip"
    bundle.write_bytes(EOCD.pack(b"PK\x05\x06", 0, 0, 30000, 30000, 0, 0, 0))
    with pytest.raises(BundleError, match=r"has 30000 entries"):
        verify_bundle(bundle)


def test_a_file_holding_an_end_record_signature_does_not_fool_the_count(tmp_path: Path) -> None:
    fake = EOCD.pack(b"PK\x05\x06", 0, 0, 30000, 30000, 0, 0, 0) + b"rest of the data"
    bundle = make_zip(tmp_path / "b.zip", {"data.bin": fake})
    assert verify_bundle(bundle).files == {"data.bin": hashlib.sha256(fake).hexdigest()}


def test_entry_limit_is_inclusive_and_checked_on_the_parsed_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify_module, "MAX_ENTRIES", 3)
    at_limit = make_zip(tmp_path / "three.zip", {"a.py": b"a", "b.py": b"b"})
    assert set(verify_bundle(at_limit).files) == {"a.py", "b.py"}
    over = make_zip(tmp_path / "four.zip", {"a.py": b"a", "b.py": b"b", "c.py": b"c"})
    with pytest.raises(BundleError, match=r"has 4 entries; a bundle may hold at most 3"):
        verify_bundle(over)
    patch_end_record(over, disk=1, total=1)  # the end record lies; the directory holds 4
    with pytest.raises(BundleError, match=r"bundle has 4 entries; at most 3 are allowed"):
        verify_bundle(over)


def test_manifest_size_limit_is_inclusive_and_streamed_in_chunks(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = make_zip(tmp_path / "b.zip", {"a.py": b"a", "b.py": b"b"})
    size = zipfile.ZipFile(bundle).getinfo(MANIFEST_NAME).file_size
    monkeypatch.setattr(verify_module, "MAX_MANIFEST_BYTES", size)
    monkeypatch.setattr(verify_module, "_CHUNK", 7)
    assert set(verify_bundle(bundle).files) == {"a.py", "b.py"}
    monkeypatch.setattr(verify_module, "MAX_MANIFEST_BYTES", size - 1)
    too_big = rf"{MANIFEST_NAME} is {size} bytes; at most {size - 1} are allowed"
    with pytest.raises(BundleError, match=too_big):
        read_manifest(bundle)


def test_special_file_entries_are_refused_naming_the_entry(tmp_path: Path) -> None:
    bundle = make_zip(tmp_path / "b.zip", {"pipe": b""}, modes={"pipe": stat.S_IFIFO | 0o644})
    with pytest.raises(BundleError, match=r"bundle entry 'pipe' is not a regular file or directory"):
        verify_bundle(bundle)


def test_encrypted_entry_is_refused_naming_the_entry(tmp_path: Path) -> None:
    bundle = make_zip(tmp_path / "b.zip", {"a.py": b"x", "secret.py": b"y"})
    patch_central_header(bundle, "secret.py", 8, "<H", 0x1)
    with pytest.raises(BundleError, match=r"bundle entry 'secret.py' is encrypted"):
        verify_bundle(bundle)
    ok = make_zip(tmp_path / "ok.zip", {"a.py": b"x"})
    patch_central_header(ok, "a.py", 8, "<H", 0x2)  # a compression option bit: not encryption
    assert set(verify_bundle(ok).files) == {"a.py"}


@pytest.mark.parametrize(("method", "label"), [(9, "Deflate64"), (99, "unknown")])
def test_unsupported_compression_is_refused_naming_method_and_alternatives(tmp_path: Path, method: int,
                                                                          label: str) -> None:
    bundle = make_zip(tmp_path / "b.zip", {"a.py": b"x"})
    patch_central_header(bundle, "a.py", 10, "<H", method)
    with pytest.raises(BundleError) as caught:
        verify_bundle(bundle)
    assert str(caught.value) == (f"bundle entry 'a.py' uses unsupported compression method {method} "
                                 f"({label}); use one of: stored, deflate, bzip2, lzma")


def test_corrupt_entry_names_the_entry_and_the_cause(tmp_path: Path) -> None:
    bundle = make_zip(tmp_path / "b.zip", {"a.py": b"original content"})
    data = bundle.read_bytes()
    bundle.write_bytes(data.replace(b"original content", b"0riginal content", 1))
    with pytest.raises(BundleError, match=r"bundle entry 'a.py' cannot be read .*: BadZipFile: Bad CRC-32"):
        verify_bundle(bundle)


def test_tampered_entry_says_it_was_modified_after_the_build(tmp_path: Path) -> None:
    bundle = make_zip(tmp_path / "b.zip", {"a.py": b"new"},
                      manifest={"a.py": hashlib.sha256(b"old").hexdigest()})
    with pytest.raises(BundleError) as caught:
        verify_bundle(bundle)
    assert str(caught.value) == ("bundle entry 'a.py' does not match its sha256 in MANIFEST.json "
                                 "(modified after the bundle was built?)")


def test_unpack_creates_missing_parents_of_the_destination_and_of_entries(tmp_path: Path) -> None:
    bundle = make_zip(tmp_path / "b.zip", {"deep/er/still/a.py": b"a", "top.py": b"t"})
    dest = tmp_path / "x" / "y" / "dest"
    unpack_bundle(bundle, dest)
    assert (dest / "deep" / "er" / "still" / "a.py").read_bytes() == b"a"
    assert (dest / "top.py").read_bytes() == b"t"


def test_unpacked_modes_are_0755_for_owner_executable_else_0644(tmp_path: Path) -> None:
    bundle = make_zip(tmp_path / "b.zip", {"run.sh": b"#!/bin/sh\n", "odd": b"", "plain": b""},
                      modes={"run.sh": 0o100700, "odd": 0o100645, "plain": 0o100600})
    dest = tmp_path / "dest"
    unpack_bundle(bundle, dest)
    assert stat.S_IMODE((dest / "run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((dest / "odd").stat().st_mode) == 0o644
    assert stat.S_IMODE((dest / "plain").stat().st_mode) == 0o644


def test_unpack_refuses_a_file_or_a_symlink_as_destination(tmp_path: Path) -> None:
    bundle = make_zip(tmp_path / "b.zip", {"a.py": b"a"})
    a_file = tmp_path / "file"
    a_file.write_text("keep")
    with pytest.raises(BundleError, match=r"must be missing or an empty directory"):
        unpack_bundle(bundle, a_file)
    assert a_file.read_text() == "keep"
    (tmp_path / "empty").mkdir()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "empty")
    with pytest.raises(BundleError, match=r"must be missing or an empty directory"):
        unpack_bundle(bundle, link)
    assert list((tmp_path / "empty").iterdir()) == []


def test_failed_unpack_into_an_existing_directory_leaves_it_empty(tmp_path: Path) -> None:
    entries = {"a.py": b"a", "pkg/mod.py": b"m", "z.py": b"tampered"}
    files = {name: hashlib.sha256(data).hexdigest() for name, data in entries.items()}
    files["z.py"] = hashlib.sha256(b"original").hexdigest()
    bundle = make_zip(tmp_path / "b.zip", entries, manifest=files)
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(BundleError, match=r"'z.py' does not match its sha256"):
        unpack_bundle(bundle, dest)
    assert dest.is_dir()
    assert list(dest.iterdir()) == []
