"""What ``stormpy jar DIR`` leaves out of a bundle and how it reports what it bundled.

Contract: :func:`cluster_dirs` names the directories a cluster run from this machine writes
(``storm.local.dir``, ``storm.log.dir``, ``dev.zookeeper.path``), resolved against the current
directory the way the daemons resolve them; ``jar`` excludes those that lie inside the bundled
directory. :func:`describe_bundle` is the plain-text report ``jar`` prints: file count, total size
before compression, the largest files, and what was left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stormpy.bundle import BundleInfo
from stormpy.config import local_dir as storm_local_dir
from stormpy.config import log_dir

__all__ = ["cluster_dirs", "describe_bundle", "human_bytes"]

LARGEST_SHOWN = 3


def cluster_dirs(conf: Mapping[str, Any]) -> dict[Path, str]:
    """Resolved directory → the setting that names it (see the module docstring)."""
    dirs = {storm_local_dir(conf).resolve(): "storm.local.dir", log_dir(conf).resolve(): "storm.log.dir"}
    if conf.get("dev.zookeeper.path"):
        dirs.setdefault(Path(str(conf["dev.zookeeper.path"])).resolve(), "dev.zookeeper.path")
    return dirs


def human_bytes(n: float) -> str:
    """``1536`` → ``"1.5 KiB"`` (bytes below 1 KiB as ``"512 B"``)."""
    if n < 1024:
        return f"{n:.0f} B"
    for unit in ("KiB", "MiB"):
        n /= 1024
        if n < 1024:
            return f"{n:.1f} {unit}"
    return f"{n / 1024:.1f} GiB"


def describe_bundle(info: BundleInfo, excluded_by: Mapping[str, str] | None = None) -> str:
    """``bundled 12 files, 40.2 KiB (largest: data/a.csv 30.0 KiB, ...); left out stormpy-local/
    (storm.local.dir)``; ``excluded_by`` maps an excluded relative path to the setting naming it."""
    count = len(info.files)
    text = f"bundled {count} file{'s' if count != 1 else ''}, {human_bytes(info.content_bytes)}"
    largest = info.largest(LARGEST_SHOWN)
    if largest:
        text += " (largest: " + ", ".join(f"{name} {human_bytes(size)}" for name, size in largest) + ")"
    if info.excluded:
        why = excluded_by or {}
        text += "; left out " + ", ".join(
            f"{rel}/" + (f" ({why[rel]})" if rel in why else "") for rel in info.excluded)
    return text
