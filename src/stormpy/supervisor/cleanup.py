"""Removing the code and worker directories of topologies a supervisor no longer runs.

:func:`remove_unused` contract: under ``stormdist`` every topology directory (and every hidden
``.tmp-<topology>-<suffix>`` directory a download left) whose topology is not in ``keep`` is
removed; every worker directory whose ``(topology, port)`` is not in ``slots`` is removed. Errors
removing a directory are ignored (the next sync tries again).
"""

from __future__ import annotations

import logging
import shutil

from stormpy.cluster.local_layout import SupervisorDirs

__all__ = ["remove_unused", "stormdist_topology"]


def stormdist_topology(name: str) -> str:
    """The topology a ``stormdist`` entry belongs to (a download's ``.tmp-<id>-<suffix>`` too)."""
    return name[len(".tmp-"):].rpartition("-")[0] if name.startswith(".tmp-") else name


def remove_unused(dirs: SupervisorDirs, keep: set[str], slots: set[tuple[str, int]],
                  log: logging.Logger) -> None:
    """Remove code not in ``keep`` and worker directories not in ``slots`` (see the module doc)."""
    root = dirs.stormdist_root
    if root.is_dir():
        for d in sorted(root.iterdir()):
            topology_id = stormdist_topology(d.name)
            if topology_id in keep:
                continue
            log.info("removing the code of topology %s (%s)", topology_id, d)
            shutil.rmtree(d, ignore_errors=True)
    for topology_id, port, wdir in dirs.worker_dirs():
        if (topology_id, port) not in slots:
            shutil.rmtree(wdir, ignore_errors=True)
