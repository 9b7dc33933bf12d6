"""Topology bundles: build, verify, unpack, and refusal of tampered or unsafe bundles."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import zipfile
from pathlib import Path

import pytest

from stormpy.bundle import (
    MANIFEST_NAME,
    BundleError,
    Manifest,
    build_bundle,
    check_entry_name,
    read_manifest,
    sha256_file,
    unpack_bundle,
    verify_bundle,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    src = tmp_path / "project"
    (src / "pkg" / "sub").mkdir(parents=True)
    (src / "pkg" / "__init__.py").write_text("")
    (src / "pkg" / "topology.py").write_text("TOPOLOGY = 1\n")
    (src / "pkg" / "sub" / "data.bin").write_bytes(bytes(range(256)) * 5000)
    (src / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (src / "run.sh").chmod(0o755)
    for junk in ("__pycache__", ".git", ".venv", "pkg/__pycache__", "thing.egg-info"):
        (src / junk).mkdir(parents=True, exist_ok=True)
        (src / junk / "junk.txt").write_text("junk")
    (src / "pkg" / "topology.cpython-311.pyc").write_bytes(b"\x00")
    return src


def write_zip(path: Path, entries: dict[str, bytes], manifest: dict[str, str] | None = None,
              symlink: str | None = None) -> Path:
    """A hand-made bundle; ``manifest`` defaults to the true hashes of ``entries``."""
    files = manifest if manifest is not None else {
        name: hashlib.sha256(data).hexdigest() for name, data in entries.items()}
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
        if symlink is not None:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, "/etc/passwd")
        zf.writestr(MANIFEST_NAME, Manifest(files=files, created=1.0).to_json())
    return path


def test_build_verify_unpack_round_trip(project: Path, tmp_path: Path) -> None:
    info = build_bundle(project, tmp_path / "out" / "topology.zip")
    assert info.path.is_file()
    assert info.size == info.path.stat().st_size
    assert info.sha256 == sha256_file(info.path) == hashlib.sha256(info.path.read_bytes()).hexdigest()

    manifest = verify_bundle(info.path)
    assert sorted(manifest.files) == ["pkg/__init__.py", "pkg/sub/data.bin", "pkg/topology.py", "run.sh"]
    assert manifest.files["pkg/topology.py"] == sha256_file(project / "pkg" / "topology.py")
    assert manifest.created > 0
    assert read_manifest(info.path) == manifest

    dest = tmp_path / "unpacked"
    assert unpack_bundle(info.path, dest) == manifest
    for rel in manifest.files:
        assert (dest / rel).read_bytes() == (project / rel).read_bytes()
    assert os.access(dest / "run.sh", os.X_OK)
    assert not os.access(dest / "pkg" / "topology.py", os.X_OK)
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == sorted(manifest.files)


def test_bundle_inside_its_own_source_dir_is_not_included(project: Path) -> None:
    info = build_bundle(project, project / "dist" / "bundle.zip")
    manifest = verify_bundle(info.path)
    assert not any(name.startswith("dist/") for name in manifest.files)


def test_symlinked_file_is_stored_as_its_content(project: Path, tmp_path: Path) -> None:
    (project / "link.py").symlink_to(project / "pkg" / "topology.py")
    info = build_bundle(project, tmp_path / "b.zip")
    with zipfile.ZipFile(info.path) as zf:
        assert zf.read("link.py") == b"TOPOLOGY = 1\n"
    verify_bundle(info.path)


def test_dangling_symlink_is_refused_at_build(project: Path, tmp_path: Path) -> None:
    (project / "broken.py").symlink_to(project / "nowhere.py")
    with pytest.raises(BundleError, match="broken.py"):
        build_bundle(project, tmp_path / "b.zip")
    assert not (tmp_path / "b.zip").exists()


def test_reserved_manifest_name_is_refused_at_build(project: Path, tmp_path: Path) -> None:
    (project / MANIFEST_NAME).write_text("{}")
    with pytest.raises(BundleError, match="reserved"):
        build_bundle(project, tmp_path / "b.zip")


def test_build_refuses_missing_source(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="not a directory"):
        build_bundle(tmp_path / "missing", tmp_path / "b.zip")


def test_tampered_file_is_detected_naming_the_file(project: Path, tmp_path: Path) -> None:
    info = build_bundle(project, tmp_path / "b.zip")
    tampered = tmp_path / "tampered.zip"
    with zipfile.ZipFile(info.path) as src, zipfile.ZipFile(tampered, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "pkg/topology.py":
                data = b"import os; os.system('evil')\n"
            dst.writestr(item, data)
    with pytest.raises(BundleError, match="'pkg/topology.py' does not match its sha256"):
        verify_bundle(tampered)
    dest = tmp_path / "dest"
    with pytest.raises(BundleError, match="pkg/topology.py"):
        unpack_bundle(tampered, dest)
    assert not dest.exists()


@pytest.mark.parametrize("name", ["../evil.py", "pkg/../../evil.py", "/etc/evil.py", "C:/evil.py",
                                  "pkg\\..\\evil.py", "./evil.py", "pkg//evil.py"])
def test_unsafe_entry_names_are_refused_naming_the_entry(tmp_path: Path, name: str) -> None:
    bundle = write_zip(tmp_path / "bad.zip", {"ok.py": b"x = 1\n", name: b"evil\n"}, manifest={
        "ok.py": hashlib.sha256(b"x = 1\n").hexdigest()})
    for check in (verify_bundle, read_manifest):
        with pytest.raises(BundleError) as info:
            check(bundle)
        assert repr(name) in str(info.value)
    dest = tmp_path / "dest"
    with pytest.raises(BundleError, match="bundle entry"):
        unpack_bundle(bundle, dest)
    assert not dest.exists()
    assert not (tmp_path / "evil.py").exists()


def test_traversal_in_manifest_is_refused(tmp_path: Path) -> None:
    bundle = write_zip(tmp_path / "bad.zip", {"ok.py": b"x"},
                       manifest={"ok.py": hashlib.sha256(b"x").hexdigest(), "../evil.py": "0" * 64})
    with pytest.raises(BundleError, match=r"'\.\./evil\.py'"):
        verify_bundle(bundle)


def test_symlink_entry_is_refused(tmp_path: Path) -> None:
    bundle = write_zip(tmp_path / "link.zip", {"ok.py": b"x"}, symlink="passwd")
    with pytest.raises(BundleError, match="'passwd' is a symbolic link"):
        verify_bundle(bundle)
    with pytest.raises(BundleError, match="'passwd' is a symbolic link"):
        unpack_bundle(bundle, tmp_path / "dest")


def test_missing_unlisted_and_duplicate_entries(tmp_path: Path) -> None:
    no_manifest = tmp_path / "none.zip"
    with zipfile.ZipFile(no_manifest, "w") as zf:
        zf.writestr("a.py", "a")
    with pytest.raises(BundleError, match=f"no {MANIFEST_NAME}"):
        verify_bundle(no_manifest)

    unlisted = write_zip(tmp_path / "unlisted.zip", {"a.py": b"a", "extra.py": b"e"},
                         manifest={"a.py": hashlib.sha256(b"a").hexdigest()})
    with pytest.raises(BundleError, match="'extra.py' is not listed"):
        verify_bundle(unlisted)

    missing = write_zip(tmp_path / "missing.zip", {"a.py": b"a"},
                        manifest={"a.py": hashlib.sha256(b"a").hexdigest(), "gone.py": "0" * 64})
    with pytest.raises(BundleError, match="lists 'gone.py' but the bundle does not contain it"):
        verify_bundle(missing)

    duplicate = tmp_path / "dup.zip"
    with zipfile.ZipFile(duplicate, "w") as zf, pytest.warns(UserWarning):
        zf.writestr("a.py", "a")
        zf.writestr("a.py", "b")
    with pytest.raises(BundleError, match="'a.py' appears more than once"):
        verify_bundle(duplicate)


def test_bad_manifest_and_non_zip(tmp_path: Path) -> None:
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"not a zip at all")
    with pytest.raises(BundleError, match="not a readable zip"):
        verify_bundle(junk)
    with pytest.raises(BundleError, match="does not exist"):
        verify_bundle(tmp_path / "nope.zip")

    bad = tmp_path / "bad-manifest.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr(MANIFEST_NAME, json.dumps({"format": 2, "files": {}}))
    with pytest.raises(BundleError, match="unsupported format 2"):
        verify_bundle(bad)
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr(MANIFEST_NAME, json.dumps({"format": 1, "files": {"a.py": "XYZ"}}))
        zf.writestr("a.py", "a")
    with pytest.raises(BundleError, match="'a.py' has no valid lowercase sha256"):
        verify_bundle(bad)


def test_unpack_requires_an_empty_destination(project: Path, tmp_path: Path) -> None:
    info = build_bundle(project, tmp_path / "b.zip")
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "stale.py").write_text("old")
    with pytest.raises(BundleError, match="must be missing or an empty directory"):
        unpack_bundle(info.path, dest)
    empty = tmp_path / "empty"
    empty.mkdir()
    unpack_bundle(info.path, empty)
    assert (empty / "pkg" / "topology.py").is_file()


def test_unpacked_size_limit(project: Path, tmp_path: Path) -> None:
    info = build_bundle(project, tmp_path / "b.zip")
    with pytest.raises(BundleError, match="unpacked size limit"):
        verify_bundle(info.path, max_unpacked_bytes=1000)
    with pytest.raises(BundleError, match="unpacked size limit"):
        unpack_bundle(info.path, tmp_path / "dest", max_unpacked_bytes=1000)
    assert not (tmp_path / "dest").exists()


@pytest.mark.parametrize("name", ["a.py", "pkg/a.py", "pkg/"])
def test_check_entry_name_accepts_plain_relative_paths(name: str) -> None:
    assert check_entry_name(name) == name.rstrip("/")
