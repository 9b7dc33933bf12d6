"""The bundle store: each submitted topology's bundle and description on Nimbus's disk.

Layout (see :mod:`stormpy.nimbus.localdirs`): ``stormdist/<topology-id>/bundle.zip`` and
``stormdist/<topology-id>/topology.msgpack`` holding ``{"spec": doc, "conf": dict,
"bundle_sha256": hex, "bundle_size": int}``. Together with the state in ZooKeeper this is all a
restarted Nimbus needs to resume managing its topologies. Writes are atomic (temporary file, then
rename); a topology directory is complete once :meth:`BundleStore.install` returns.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack

from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.uploads import StagedBundle

__all__ = ["BundleStore", "StoreError", "StoredTopology"]


class StoreError(RuntimeError):
    """A stored topology is missing or unreadable; the message names its directory."""


@dataclass(frozen=True)
class StoredTopology:
    """What the store holds for one topology."""

    topology_id: str
    spec: dict[str, Any]
    conf: dict[str, Any]
    bundle_path: Path
    bundle_sha256: str
    bundle_size: int


class BundleStore:
    """``stormdist/`` under Nimbus's local directory."""

    def __init__(self, dirs: NimbusDirs) -> None:
        self.dirs = dirs

    def install(self, topology_id: str, staged: StagedBundle, spec: dict[str, Any],
                conf: dict[str, Any]) -> StoredTopology:
        """Move the staged bundle into the topology's directory and write its description."""
        target = self.dirs.stormdist(topology_id)
        if target.exists():
            raise StoreError(f"topology directory {target} already exists")
        tmp = target.with_name(f".{target.name}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True, mode=0o700)
        try:
            shutil.move(str(staged.path), str(tmp / self.dirs.bundle(topology_id).name))
            doc = {"spec": spec, "conf": conf, "bundle_sha256": staged.sha256,
                   "bundle_size": staged.size}
            described = tmp / self.dirs.topology_file(topology_id).name
            described.write_bytes(msgpack.packb(doc, use_bin_type=True))
            described.chmod(0o600)  # the conf holds the topology's secrets (docs/security.md)
            os.replace(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return self.load(topology_id)

    def load(self, topology_id: str) -> StoredTopology:
        """The stored topology; StoreError when its directory is missing or broken."""
        path = self.dirs.topology_file(topology_id)
        bundle = self.dirs.bundle(topology_id)
        try:
            doc = msgpack.unpackb(path.read_bytes(), raw=False, strict_map_key=False)
        except FileNotFoundError:
            raise StoreError(f"no stored topology {topology_id} (missing {path})") from None
        except Exception as exc:
            raise StoreError(f"cannot read {path}: {type(exc).__name__}: {exc}") from exc
        if not isinstance(doc, dict) or not bundle.is_file():
            raise StoreError(f"stored topology {topology_id} is incomplete ({path}, {bundle})")
        return StoredTopology(topology_id, dict(doc.get("spec") or {}), dict(doc.get("conf") or {}),
                              bundle, str(doc.get("bundle_sha256", "")), int(doc.get("bundle_size", 0)))

    def exists(self, topology_id: str) -> bool:
        return self.dirs.topology_file(topology_id).is_file() and self.dirs.bundle(topology_id).is_file()

    def remove(self, topology_id: str) -> None:
        """Delete the topology's directory (missing is fine)."""
        shutil.rmtree(self.dirs.stormdist(topology_id), ignore_errors=True)

    def topology_ids(self) -> list[str]:
        """Sorted ids of every stored topology directory (temporary ones excluded)."""
        root = self.dirs.stormdist_root
        if not root.is_dir():
            return []
        return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
