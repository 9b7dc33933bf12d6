"""The bundle manifest (``MANIFEST.json``) and the rules every entry name must follow.

Manifest format 1::

    {"format": 1, "created": <unix seconds, float>, "files": {"<relative/posix/path>": "<sha256 hex>"}}

``files`` lists every regular file of the bundle except the manifest itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stormpy.bundle.errors import BundleError

__all__ = ["FORMAT_VERSION", "MANIFEST_NAME", "MAX_FILES", "Manifest", "check_entry_name"]

MANIFEST_NAME = "MANIFEST.json"
FORMAT_VERSION = 1
#: Most files a manifest may list.
MAX_FILES = 20000
_SHA256 = re.compile(r"[0-9a-f]{64}")
_DRIVE = re.compile(r"^[A-Za-z]:")


def check_entry_name(name: str) -> str:
    """Return ``name`` without a trailing ``/`` when it is a safe relative POSIX path.

    Raises BundleError naming the entry when it is empty, absolute (``/x``, ``C:x``), uses
    backslashes or NUL, or has an empty, ``.`` or ``..`` component.
    """
    if not name or "\x00" in name:
        raise BundleError(f"bundle entry {name!r} has an empty or NUL-containing name")
    if name.startswith("/") or _DRIVE.match(name):
        raise BundleError(f"bundle entry {name!r} is an absolute path")
    if "\\" in name:
        raise BundleError(f"bundle entry {name!r} contains a backslash")
    trimmed = name[:-1] if name.endswith("/") else name
    for part in trimmed.split("/"):
        if part == "..":
            raise BundleError(f"bundle entry {name!r} escapes the bundle ('..' component)")
        if part in ("", "."):
            raise BundleError(f"bundle entry {name!r} has an empty or '.' path component")
    return trimmed


@dataclass(frozen=True)
class Manifest:
    """What a bundle claims to contain: relative path → sha256, plus format and creation time."""

    files: Mapping[str, str] = field(default_factory=dict)
    created: float = 0.0
    format: int = FORMAT_VERSION

    def to_json(self) -> bytes:
        """The manifest as UTF-8 JSON with sorted keys."""
        doc = {"format": self.format, "created": self.created, "files": dict(sorted(self.files.items()))}
        return json.dumps(doc, indent=1, sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes, where: str = MANIFEST_NAME) -> Manifest:
        """Parse and validate a manifest; raise BundleError naming ``where`` and the problem."""
        try:
            doc: Any = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BundleError(f"{where} is not valid UTF-8 JSON: {exc}") from exc
        if not isinstance(doc, dict):
            raise BundleError(f"{where} must be a JSON object")
        if doc.get("format") != FORMAT_VERSION:
            raise BundleError(f"{where} has unsupported format {doc.get('format')!r} "
                              f"(this stormpy reads format {FORMAT_VERSION})")
        created = doc.get("created", 0.0)
        if not isinstance(created, int | float) or isinstance(created, bool):
            raise BundleError(f"{where}: 'created' must be a number")
        files = doc.get("files")
        if not isinstance(files, dict):
            raise BundleError(f"{where}: 'files' must be an object of path → sha256")
        if len(files) > MAX_FILES:
            raise BundleError(f"{where} lists {len(files)} files; at most {MAX_FILES} are allowed")
        for path, digest in files.items():
            check_entry_name(path)
            if path == MANIFEST_NAME:
                raise BundleError(f"{where} lists itself under 'files'")
            if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
                raise BundleError(f"{where}: entry {path!r} has no valid lowercase sha256 hex digest")
        return cls(files=files, created=float(created), format=FORMAT_VERSION)
