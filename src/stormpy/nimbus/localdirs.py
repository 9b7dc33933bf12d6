"""Every path Nimbus keeps under ``storm.local.dir``, in one place.

::

    <storm.local.dir>/nimbus/stormdist/<topology-id>/bundle.zip        the topology's bundle
    <storm.local.dir>/nimbus/stormdist/<topology-id>/topology.msgpack  {"spec", "conf", "bundle_sha256",
                                                                        "bundle_size"}
    <storm.local.dir>/nimbus/uploads/<upload-id>.part                  an upload in progress
    <storm.local.dir>/nimbus/uploads/<bundle-key>.zip                  a finished upload not yet submitted
    <storm.local.dir>/nimbus/nimbus-id                                 this Nimbus's stable id
    <storm.local.dir>/logs/nimbus.log                                  the daemon log (``storm.log.dir``
                                                                       overrides the directory)

Topology ids and upload ids are chosen by Nimbus and checked to be plain path segments before
they are joined, so no path here can leave the local directory.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stormpy.config import local_dir

__all__ = ["NimbusDirs", "safe_segment"]

_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")

BUNDLE_FILE = "bundle.zip"
TOPOLOGY_FILE = "topology.msgpack"


def safe_segment(value: str, what: str) -> str:
    """``value`` when it is a plain file name (letters, digits, ``_ . -``, no leading dot)."""
    if not isinstance(value, str) or not _SEGMENT.fullmatch(value) or ".." in value:
        raise ValueError(f"{what} {value!r} is not a plain file name")
    return value


class NimbusDirs:
    """Nimbus's directories under one ``storm.local.dir``."""

    def __init__(self, local_dir: str | Path) -> None:
        self.local_dir = Path(local_dir)
        self.root = self.local_dir / "nimbus"

    @classmethod
    def from_config(cls, conf: Mapping[str, Any]) -> NimbusDirs:
        """The directories for ``conf["storm.local.dir"]``."""
        return cls(local_dir(conf))

    @property
    def stormdist_root(self) -> Path:
        return self.root / "stormdist"

    def stormdist(self, topology_id: str) -> Path:
        """The directory holding one topology's bundle and description."""
        return self.stormdist_root / safe_segment(topology_id, "topology id")

    def bundle(self, topology_id: str) -> Path:
        return self.stormdist(topology_id) / BUNDLE_FILE

    def topology_file(self, topology_id: str) -> Path:
        return self.stormdist(topology_id) / TOPOLOGY_FILE

    @property
    def uploads(self) -> Path:
        return self.root / "uploads"

    def upload_part(self, upload_id: str) -> Path:
        return self.uploads / f"{safe_segment(upload_id, 'upload id')}.part"

    def staged_bundle(self, bundle_key: str) -> Path:
        return self.uploads / f"{safe_segment(bundle_key, 'bundle key')}.zip"

    @property
    def id_file(self) -> Path:
        return self.root / "nimbus-id"

    def ensure(self) -> None:
        """Create the directories (idempotent)."""
        self.stormdist_root.mkdir(parents=True, exist_ok=True)
        self.uploads.mkdir(parents=True, exist_ok=True)
