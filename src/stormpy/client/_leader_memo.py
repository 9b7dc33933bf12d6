"""The last Nimbus leader a client found for a set of seeds, so the next client starts there.

Kept per process (every :class:`~stormpy.client.NimbusClient` of the process shares it), keyed by
the set of seeds (their order does not matter), and,
when asked, in ``nimbus-leaders.json`` under ``$STORMPY_CACHE_DIR`` (default ``~/.cache/stormpy``),
so one CLI command benefits from what the previous one found. The file is best effort: a missing,
unreadable or foreign file is the same as no memory, and a remembered leader that is not among
the seeds is ignored.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["remember_leader", "remembered_leader"]

log = logging.getLogger(__name__)

_last_leader: dict[frozenset[str], str] = {}


def _memo_file() -> Path:
    root = os.environ.get("STORMPY_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "stormpy")
    return Path(root) / "nimbus-leaders.json"


def remembered_leader(seeds: Sequence[str], *, from_file: bool = False) -> str | None:
    """The last leader found for these seeds by this process (or, ``from_file``, by an earlier
    CLI command); None when none is known."""
    key = frozenset(seeds)
    if key in _last_leader:
        return _last_leader[key]
    if from_file:
        try:
            known = json.loads(_memo_file().read_text())
            value = known.get(",".join(sorted(key))) if isinstance(known, dict) else None
        except (OSError, ValueError):
            return None
        return value if isinstance(value, str) and value in key else None
    return None


def remember_leader(seeds: Sequence[str], leader: str, *, to_file: bool = False) -> None:
    """Note ``leader`` as the last one found for ``seeds`` (best effort for the file)."""
    _last_leader[frozenset(seeds)] = leader
    if not to_file:
        return
    path = _memo_file()
    try:
        try:
            known = json.loads(path.read_text())
        except (OSError, ValueError):
            known = {}
        if not isinstance(known, dict):
            known = {}
        known[",".join(sorted(set(seeds)))] = leader
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(known))
        os.replace(tmp, path)
    except OSError as exc:
        log.debug("cannot remember the Nimbus leader in %s: %s", path, exc)
