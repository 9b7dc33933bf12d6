"""Build a topology bundle (a zip with ``MANIFEST.json``) from a source directory.

Contract:

* Always skipped while walking (:data:`SKIPPED_DIRS` and friends): directories ``__pycache__``,
  ``.git``, ``.hg``, ``.svn``, ``.venv``, ``venv``, ``.tox``, ``.mypy_cache``, ``.pytest_cache``,
  ``.ruff_cache``, ``*.egg-info``; files ``*.pyc``, ``*.pyo``, ``.DS_Store``; the output file
  itself when it lies inside the source directory; and every path in ``exclude`` (the CLI passes
  the cluster's own directories, ``storm.local.dir`` and ``storm.log.dir``, when they lie inside).
* A ``.stormpyignore`` at the root of the source directory (:data:`IGNORE_FILE`) leaves out what
  its patterns match, with gitignore's syntax and meaning (``#`` comments, ``!`` re-includes,
  a trailing ``/`` matches directories only, a leading ``/`` anchors at the root); an ignored
  directory is not entered, so a file below it cannot be re-included (as in git).
* Symbolic links are followed (their targets' content is stored as regular files; each real
  directory is visited once), so a bundle never contains a link. Entries are written in sorted
  order. :class:`BundleInfo` lists every bundled file with its size, and what ``exclude`` left out.
"""

from __future__ import annotations

import os
import time
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from stormpy.bundle.errors import BundleError
from stormpy.bundle.hashing import sha256_file
from stormpy.bundle.manifest import MANIFEST_NAME, Manifest

__all__ = ["IGNORE_FILE", "SKIPPED_DIRS", "BundleInfo", "build_bundle", "iter_bundle_files"]

SKIPPED_DIRS = frozenset({"__pycache__", ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".mypy_cache",
                          ".pytest_cache", ".ruff_cache"})
#: the ignore file read at the root of a bundled directory (gitignore syntax)
IGNORE_FILE = ".stormpyignore"
_SKIPPED_SUFFIXES = (".pyc", ".pyo")
_SKIPPED_FILES = frozenset({".DS_Store"})
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class BundleInfo:
    """A built bundle: where it is, its sha256 (hex) and size in bytes; ``files`` (relative path,
    size in bytes) of every file it holds, ``excluded`` the ``exclude`` paths met inside the
    source directory (relative, posix)."""

    path: Path
    sha256: str
    size: int
    files: tuple[tuple[str, int], ...] = ()
    excluded: tuple[str, ...] = field(default=())

    @property
    def content_bytes(self) -> int:
        """The bundled files' total size before compression."""
        return sum(size for _name, size in self.files)

    def largest(self, n: int = 3) -> list[tuple[str, int]]:
        """The ``n`` largest bundled files, largest first (ties by name)."""
        return sorted(self.files, key=lambda f: (-f[1], f[0]))[:n]


def _skip_dir(name: str) -> bool:
    return name in SKIPPED_DIRS or name.endswith(".egg-info")


def _skip_file(name: str) -> bool:
    return name in _SKIPPED_FILES or name.endswith(_SKIPPED_SUFFIXES)


def _read_ignore_file(root: Path) -> pathspec.PathSpec | None:
    """The patterns of ``root``'s :data:`IGNORE_FILE` (None when there is none); BundleError
    naming the file when it cannot be read or parsed."""
    path = root / IGNORE_FILE
    if not path.is_file():
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(path.read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BundleError(f"cannot read {path}: {exc}") from None


def iter_bundle_files(src_dir: str | os.PathLike[str], exclude: Path | Iterable[Path] | None = None,
                      excluded: list[str] | None = None) -> Iterator[tuple[str, Path]]:
    """Yield ``(relative posix path, file path)`` for every file a bundle of ``src_dir`` contains.

    ``exclude``: resolved paths (files or directories) to leave out; the relative names of those
    met are appended to ``excluded`` when given. Raises BundleError naming a dangling symlink or a
    non-regular file (socket, fifo, device), or an unreadable ignore file.
    """
    root = Path(src_dir)
    skip = {exclude} if isinstance(exclude, Path) else set(exclude or ())
    ignore = _read_ignore_file(root)
    seen_dirs: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen_dirs:
            dirnames[:] = []
            continue
        seen_dirs.add(real)
        kept = []
        for d in sorted(dirnames):
            if _skip_dir(d):
                continue
            path = Path(dirpath, d)
            rel = path.relative_to(root).as_posix()
            if path.resolve() in skip:
                if excluded is not None:
                    excluded.append(rel)
                continue
            if ignore is not None and ignore.match_file(rel + "/"):
                continue
            kept.append(d)
        dirnames[:] = kept
        for name in sorted(filenames):
            if _skip_file(name):
                continue
            path = Path(dirpath, name)
            rel = path.relative_to(root).as_posix()
            if path.resolve() in skip:
                continue
            if ignore is not None and ignore.match_file(rel):
                continue
            if path.is_symlink() and not path.exists():
                raise BundleError(f"cannot bundle {rel}: it is a dangling symbolic link")
            if not path.is_file():
                raise BundleError(f"cannot bundle {rel}: not a regular file")
            yield rel, path


def build_bundle(src_dir: str | os.PathLike[str], out_path: str | os.PathLike[str], *,
                 exclude: Iterable[str | os.PathLike[str]] = ()) -> BundleInfo:
    """Pack ``src_dir`` into the zip ``out_path`` (overwritten) and return its BundleInfo.

    ``exclude``: paths (files or directories, relative ones to the current directory) left out
    when they lie inside ``src_dir``. Raises BundleError when ``src_dir`` is not a directory,
    contains ``MANIFEST.json`` at its root (the reserved manifest name), or contains a file that
    cannot be bundled. The zip is written to a temporary name first, so ``out_path`` is never left
    half-written.
    """
    root = Path(src_dir)
    if not root.is_dir():
        raise BundleError(f"cannot bundle {root}: not a directory")
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    skip = {out.resolve(), tmp.resolve(), *(Path(p).resolve() for p in exclude)}
    files: dict[str, str] = {}
    sizes: list[tuple[str, int]] = []
    excluded: list[str] = []
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for rel, path in iter_bundle_files(root, exclude=skip, excluded=excluded):
                if rel == MANIFEST_NAME:
                    raise BundleError(f"cannot bundle {root}: it contains {MANIFEST_NAME} at its root, "
                                      "a name reserved for the bundle manifest")
                files[rel] = sha256_file(path)
                info = zipfile.ZipInfo(rel, date_time=_ZIP_EPOCH)
                info.compress_type = zipfile.ZIP_DEFLATED
                mode = 0o755 if os.access(path, os.X_OK) else 0o644
                info.external_attr = (0o100000 | mode) << 16
                size = 0
                with open(path, "rb") as src, zf.open(info, "w") as dst:
                    while chunk := src.read(1024 * 1024):
                        dst.write(chunk)
                        size += len(chunk)
                sizes.append((rel, size))
            manifest = Manifest(files=files, created=time.time())
            info = zipfile.ZipInfo(MANIFEST_NAME, date_time=_ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o100000 | 0o644) << 16
            zf.writestr(info, manifest.to_json())
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return BundleInfo(path=out, sha256=sha256_file(out), size=out.stat().st_size, files=tuple(sizes),
                      excluded=tuple(excluded))
