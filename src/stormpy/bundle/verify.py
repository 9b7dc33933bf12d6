"""Verify and safely unpack topology bundles.

:func:`verify_bundle` accepts a bundle only when: it is a readable zip; every entry name is a safe
relative path (no absolute paths, no ``..``, no backslashes); no entry is a symlink or other special
file; no name appears twice; ``MANIFEST.json`` is present and valid; every manifest file is present
and every file present is in the manifest; and every file's sha256 matches. The first violation
raises :class:`~stormpy.bundle.errors.BundleError` naming the offending entry.

Hostile bundles are bounded before anything large is read: the zip's central directory may list at
most :data:`MAX_ENTRIES` entries (checked from its end record before the directory is parsed),
``MANIFEST.json`` is streamed and refused beyond :data:`MAX_MANIFEST_BYTES` whatever size its header
claims, and entries must be stored or compressed with a method this Python reads (stored, deflate,
bzip2, lzma; Deflate64 and others are refused naming the entry). A corrupt compressed stream is a
BundleError naming the entry, never another exception type.

:func:`unpack_bundle` applies the same checks (hashing while it extracts) and never writes outside
its destination directory.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import struct
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from stormpy.bundle.errors import BundleError
from stormpy.bundle.manifest import MANIFEST_NAME, Manifest, check_entry_name

__all__ = ["MAX_ENTRIES", "MAX_MANIFEST_BYTES", "read_manifest", "unpack_bundle", "verify_bundle"]

_CHUNK = 1024 * 1024
#: Most entries a bundle may hold (its central directory is refused beyond this, unparsed).
MAX_ENTRIES = 20000
#: Largest ``MANIFEST.json`` accepted (uncompressed bytes, counted while streaming it).
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate", zipfile.ZIP_BZIP2: "bzip2",
            zipfile.ZIP_LZMA: "lzma"}
_EOCD = b"PK\x05\x06"
_EOCD_STRUCT = struct.Struct("<4s4H2LH")
_TAIL = _EOCD_STRUCT.size + 0xFFFF  # the end record plus the longest zip comment
_ALLOWED_TYPES = (0, stat.S_IFREG, stat.S_IFDIR)  # 0: written by a tool that stores no Unix mode


def _check_entry_count(path: str | os.PathLike[str]) -> None:
    """Refuse a zip whose end-of-central-directory record announces more than MAX_ENTRIES."""
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - _TAIL))
        tail = fh.read()
    at = tail.rfind(_EOCD)
    if at < 0 or len(tail) - at < _EOCD_STRUCT.size:
        return  # not a zip: zipfile names the problem
    fields = _EOCD_STRUCT.unpack_from(tail, at)
    entries = max(fields[3], fields[4])
    if entries > MAX_ENTRIES:  # 0xFFFF (zip64 marker) is beyond the limit too
        raise BundleError(f"{path} has {entries if entries < 0xFFFF else 'at least 65535'} entries; "
                          f"a bundle may hold at most {MAX_ENTRIES}")


@contextmanager
def _open_zip(path: str | os.PathLike[str]) -> Iterator[zipfile.ZipFile]:
    try:
        _check_entry_count(path)
        zf = zipfile.ZipFile(path)
    except FileNotFoundError as exc:
        raise BundleError(f"bundle {path} does not exist") from exc
    except BundleError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, ValueError, OSError, EOFError,
            struct.error, zlib.error) as exc:  # zipfile raises all of these on a damaged directory
        raise BundleError(f"{path} is not a readable zip bundle: {type(exc).__name__}: {exc}") from exc
    with zf:
        yield zf


def _checked_entries(zf: zipfile.ZipFile) -> tuple[Manifest, list[tuple[str, zipfile.ZipInfo]]]:
    """Validate names, types and the manifest listing; return the manifest and file entries."""
    seen: set[str] = set()
    files: list[tuple[str, zipfile.ZipInfo]] = []
    if len(zf.infolist()) > MAX_ENTRIES:
        raise BundleError(f"bundle has {len(zf.infolist())} entries; at most {MAX_ENTRIES} are allowed")
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
        if info.compress_type not in _METHODS:
            method = "Deflate64" if info.compress_type == 9 else "unknown"
            raise BundleError(f"bundle entry {info.filename!r} uses unsupported compression method "
                              f"{info.compress_type} ({method}); "
                              f"use one of: {', '.join(_METHODS.values())}")
        if not info.is_dir() and name != MANIFEST_NAME:
            files.append((name, info))
    if MANIFEST_NAME not in seen:
        raise BundleError(f"bundle has no {MANIFEST_NAME}")
    manifest = Manifest.from_json(_read_manifest_bytes(zf))
    present = {name for name, _ in files}
    unlisted = sorted(present - set(manifest.files))
    if unlisted:
        raise BundleError(f"bundle entry {unlisted[0]!r} is not listed in {MANIFEST_NAME}")
    missing = sorted(set(manifest.files) - present)
    if missing:
        raise BundleError(f"{MANIFEST_NAME} lists {missing[0]!r} but the bundle does not contain it")
    return manifest, files


def _read_manifest_bytes(zf: zipfile.ZipFile) -> bytes:
    """``MANIFEST.json`` streamed with a hard size bound (its header's size is not trusted)."""
    info = zf.getinfo(MANIFEST_NAME)
    if info.file_size > MAX_MANIFEST_BYTES:
        raise BundleError(f"{MANIFEST_NAME} is {info.file_size} bytes; at most {MAX_MANIFEST_BYTES} "
                          "are allowed")
    parts: list[bytes] = []
    total = 0
    try:
        with zf.open(info) as stream:
            while chunk := stream.read(min(_CHUNK, MAX_MANIFEST_BYTES + 1 - total)):
                total += len(chunk)
                if total > MAX_MANIFEST_BYTES:
                    raise BundleError(f"{MANIFEST_NAME} exceeds {MAX_MANIFEST_BYTES} bytes unpacked")
                parts.append(chunk)
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError, ValueError) as exc:
        if isinstance(exc, BundleError):
            raise
        raise BundleError(f"bundle entry {MANIFEST_NAME!r} cannot be read: {exc}") from exc
    return b"".join(parts)


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
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError, ValueError) as exc:
        if isinstance(exc, BundleError):
            raise
        raise BundleError(f"bundle entry {name!r} cannot be read (corrupt or unsupported "
                          f"compression): {type(exc).__name__}: {exc}") from exc
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
