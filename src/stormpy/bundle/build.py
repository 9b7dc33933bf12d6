"""Build a topology bundle (a zip with ``MANIFEST.json``) from a source directory.

Skipped while walking: directories ``__pycache__``, ``.git``, ``.hg``, ``.svn``, ``.venv``, ``venv``,
``.tox``, ``.mypy_cache``, ``.pytest_cache``, ``.ruff_cache``, ``*.egg-info``; files ``*.pyc``,
``*.pyo``, ``.DS_Store``; and the output file itself when it lies inside the source directory.
Symbolic links are followed (their targets' content is stored as regular files; each real directory
is visited once), so a bundle never contains a link. Entries are written in sorted order.
"""

from __future__ import annotations

import os
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from stormpy.bundle.errors import BundleError
from stormpy.bundle.hashing import sha256_file
from stormpy.bundle.manifest import MANIFEST_NAME, Manifest

__all__ = ["SKIPPED_DIRS", "BundleInfo", "build_bundle", "iter_bundle_files"]

SKIPPED_DIRS = frozenset({"__pycache__", ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".mypy_cache",
                          ".pytest_cache", ".ruff_cache"})
_SKIPPED_SUFFIXES = (".pyc", ".pyo")
_SKIPPED_FILES = frozenset({".DS_Store"})
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class BundleInfo:
    """A built bundle: where it is, its sha256 (hex) and size in bytes."""

    path: Path
    sha256: str
    size: int


def _skip_dir(name: str) -> bool:
    return name in SKIPPED_DIRS or name.endswith(".egg-info")


def _skip_file(name: str) -> bool:
    return name in _SKIPPED_FILES or name.endswith(_SKIPPED_SUFFIXES)


def iter_bundle_files(src_dir: str | os.PathLike[str],
                      exclude: Path | None = None) -> Iterator[tuple[str, Path]]:
    """Yield ``(relative posix path, file path)`` for every file a bundle of ``src_dir`` contains.

    Raises BundleError naming a dangling symlink or a non-regular file (socket, fifo, device).
    """
    root = Path(src_dir)
    seen_dirs: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen_dirs:
            dirnames[:] = []
            continue
        seen_dirs.add(real)
        dirnames[:] = sorted(d for d in dirnames if not _skip_dir(d))
        for name in sorted(filenames):
            if _skip_file(name):
                continue
            path = Path(dirpath, name)
            rel = path.relative_to(root).as_posix()
            if exclude is not None and path.resolve() == exclude:
                continue
            if path.is_symlink() and not path.exists():
                raise BundleError(f"cannot bundle {rel}: it is a dangling symbolic link")
            if not path.is_file():
                raise BundleError(f"cannot bundle {rel}: not a regular file")
            yield rel, path


def build_bundle(src_dir: str | os.PathLike[str], out_path: str | os.PathLike[str]) -> BundleInfo:
    """Pack ``src_dir`` into the zip ``out_path`` (overwritten) and return its BundleInfo.

    Raises BundleError when ``src_dir`` is not a directory, contains ``MANIFEST.json`` at its root
    (the reserved manifest name), or contains a file that cannot be bundled. The zip is written to a
    temporary name first, so ``out_path`` is never left half-written.
    """
    root = Path(src_dir)
    if not root.is_dir():
        raise BundleError(f"cannot bundle {root}: not a directory")
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    files: dict[str, str] = {}
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for rel, path in iter_bundle_files(root, exclude=out.resolve()):
                if rel == MANIFEST_NAME:
                    raise BundleError(f"cannot bundle {root}: it contains {MANIFEST_NAME} at its root, "
                                      "a name reserved for the bundle manifest")
                if path.resolve() == tmp.resolve():
                    continue
                files[rel] = sha256_file(path)
                info = zipfile.ZipInfo(rel, date_time=_ZIP_EPOCH)
                info.compress_type = zipfile.ZIP_DEFLATED
                mode = 0o755 if os.access(path, os.X_OK) else 0o644
                info.external_attr = (0o100000 | mode) << 16
                with open(path, "rb") as src, zf.open(info, "w") as dst:
                    while chunk := src.read(1024 * 1024):
                        dst.write(chunk)
            manifest = Manifest(files=files, created=time.time())
            info = zipfile.ZipInfo(MANIFEST_NAME, date_time=_ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o100000 | 0o644) << 16
            zf.writestr(info, manifest.to_json())
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return BundleInfo(path=out, sha256=sha256_file(out), size=out.stat().st_size)
