"""Verify and safely unpack topology bundles.

:func:`verify_bundle` accepts a bundle only when: it is a readable zip; every entry name is a safe
relative path (no absolute paths, no ``..``, no backslashes); no entry is a symlink or other special
file; no name appears twice; ``MANIFEST.json`` is present and valid; every manifest file is present
and every file present is in the manifest; and every file's sha256 matches. The first violation
raises :class:`~stormpy.bundle.errors.BundleError` naming the offending entry.

:func:`unpack_bundle` applies the same checks (hashing while it extracts) and never writes outside
its destination directory.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from stormpy.bundle.errors import BundleError
from stormpy.bundle.manifest import MANIFEST_NAME, Manifest, check_entry_name

__all__ = ["read_manifest", "unpack_bundle", "verify_bundle"]

_CHUNK = 1024 * 1024
_ALLOWED_TYPES = (0, stat.S_IFREG, stat.S_IFDIR)  # 0: written by a tool that stores no Unix mode


@contextmanager
def _open_zip(path: str | os.PathLike[str]) -> Iterator[zipfile.ZipFile]:
    try:
        with zipfile.ZipFile(path) as zf:
            yield zf
    except (zipfile.BadZipFile, zipfile.LargeZipFile) as exc:
        raise BundleError(f"{path} is not a readable zip bundle: {exc}") from exc
    except FileNotFoundError as exc:
        raise BundleError(f"bundle {path} does not exist") from exc


def _checked_entries(zf: zipfile.ZipFile) -> tuple[Manifest, list[tuple[str, zipfile.ZipInfo]]]:
    """Validate names, types and the manifest listing; return the manifest and file entries."""
    seen: set[str] = set()
    files: list[tuple[str, zipfile.ZipInfo]] = []
    for info in zf.infolist():
        name = check_entry_name(info.filename)
        if name in seen:
            raise BundleError(f"bundle entry {info.filename!r} appears more than once")
        seen.add(name)
        kind = stat.S_IFMT(info.external_attr >> 16)
        if kind == stat.S_IFLNK:
            raise BundleError(f"bundle entry {info.filename!r} is a symbolic link")
        if kind not in _ALLOWED_TYPES:
            raise BundleError(f"bundle entry {info.filename!r} is not a regular file or directory")
        if info.flag_bits & 0x1:
            raise BundleError(f"bundle entry {info.filename!r} is encrypted")
        if not info.is_dir() and name != MANIFEST_NAME:
            files.append((name, info))
    if MANIFEST_NAME not in seen:
        raise BundleError(f"bundle has no {MANIFEST_NAME}")
    manifest = Manifest.from_json(zf.read(MANIFEST_NAME))
    present = {name for name, _ in files}
    unlisted = sorted(present - set(manifest.files))
    if unlisted:
        raise BundleError(f"bundle entry {unlisted[0]!r} is not listed in {MANIFEST_NAME}")
    missing = sorted(set(manifest.files) - present)
    if missing:
        raise BundleError(f"{MANIFEST_NAME} lists {missing[0]!r} but the bundle does not contain it")
    return manifest, files


def _copy_hashed(src: zipfile.ZipFile, info: zipfile.ZipInfo, dst: BinaryIO | None,
                 budget: list[int] | None) -> str:
    """Stream one entry (into ``dst`` if given) and return its sha256; ``budget`` counts bytes left."""
    digest = hashlib.sha256()
    name = info.filename
    try:
        with src.open(info) as stream:
            while chunk := stream.read(_CHUNK):
                digest.update(chunk)
                if budget is not None:
                    budget[0] -= len(chunk)
                    if budget[0] < 0:
                        raise BundleError(f"bundle exceeds the unpacked size limit at entry {name!r}")
                if dst is not None:
                    dst.write(chunk)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise BundleError(f"bundle entry {name!r} cannot be read: {exc}") from exc
    return digest.hexdigest()


def _check_hash(name: str, actual: str, manifest: Manifest) -> None:
    if actual != manifest.files[name]:
        raise BundleError(f"bundle entry {name!r} does not match its sha256 in {MANIFEST_NAME} "
                          "(modified after the bundle was built?)")


def read_manifest(path: str | os.PathLike[str]) -> Manifest:
    """The manifest of the bundle at ``path`` (names and listing checked; file hashes are not)."""
    with _open_zip(path) as zf:
        return _checked_entries(zf)[0]


def verify_bundle(path: str | os.PathLike[str], *, max_unpacked_bytes: int | None = None) -> Manifest:
    """Fully verify the bundle at ``path`` and return its manifest; raise BundleError otherwise."""
    budget = [max_unpacked_bytes] if max_unpacked_bytes is not None else None
    with _open_zip(path) as zf:
        manifest, files = _checked_entries(zf)
        for name, info in files:
            _check_hash(name, _copy_hashed(zf, info, None, budget), manifest)
    return manifest


def unpack_bundle(path: str | os.PathLike[str], dest_dir: str | os.PathLike[str], *,
                  max_unpacked_bytes: int | None = None) -> Manifest:
    """Verify the bundle at ``path`` while extracting it into ``dest_dir``; return its manifest.

    ``dest_dir`` must not exist or be an empty directory, so no stale file survives and no existing
    symlink can redirect a write. On any failure ``dest_dir`` is left empty (or removed if this call
    created it) and BundleError names the problem. Files are written with mode 0644 (0755 when the
    bundle recorded an executable file).
    """
    dest = Path(dest_dir)
    created = not dest.exists()
    if not created and (not dest.is_dir() or dest.is_symlink() or any(dest.iterdir())):
        raise BundleError(f"cannot unpack into {dest}: it must be missing or an empty directory")
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    budget = [max_unpacked_bytes] if max_unpacked_bytes is not None else None
    try:
        with _open_zip(path) as zf:
            manifest, files = _checked_entries(zf)
            for name, info in files:
                target = (root / name).resolve()
                if not target.is_relative_to(root) or target == root:
                    raise BundleError(f"bundle entry {info.filename!r} would be written outside {dest}")
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(target, "xb") as out:
                    actual = _copy_hashed(zf, info, out, budget)
                _check_hash(name, actual, manifest)
                mode = (info.external_attr >> 16) & 0o777
                os.chmod(target, 0o755 if mode & 0o100 else 0o644)
    except BaseException:
        if created:
            shutil.rmtree(dest, ignore_errors=True)
        else:
            for child in dest.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)
        raise
    return manifest
