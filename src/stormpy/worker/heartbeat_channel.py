"""Where a cluster worker's heartbeat goes: to the leading Nimbus, through its supervisor.

Contract of :class:`SupervisorRelay` (the ``heartbeats`` channel of
:class:`~stormpy.worker.cluster_link.ClusterLink` in a cluster worker):

* ``set_worker_heartbeat(beat)`` writes the :class:`~stormpy.cluster.records.WorkerHeartbeat`
  (liveness, executors, statistics) to the worker's ``nimbus-heartbeat`` file
  (``SupervisorDirs.nimbus_heartbeat_file``, replaced atomically); the supervisor sends the
  heartbeats of its workers to the leading Nimbus over RPC every ``task.heartbeat.frequency.secs``
  (:mod:`stormpy.supervisor.heartbeat_relay`). Nothing goes to ZooKeeper. Raises OSError.
* ``worker_heartbeats(topology_id)`` asks the leader (``get_worker_heartbeats``, through
  :class:`~stormpy.client.NimbusClient` built from the worker's config) for the topology's newest
  heartbeats, which is how a restarted or moved task carries its counters. Raises OSError when
  Nimbus cannot answer (the link retries on its next round).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stormpy.client import NimbusClient
from stormpy.cluster.records import WorkerHeartbeat
from stormpy.rpc.errors import RpcError
from stormpy.worker.heartbeats import replace_msgpack_file

__all__ = ["SupervisorRelay", "write_nimbus_heartbeat"]


def write_nimbus_heartbeat(path: str | os.PathLike[str], beat: WorkerHeartbeat) -> None:
    """Atomically replace the file at ``path`` (its directory must exist) with ``beat``."""
    replace_msgpack_file(path, beat.to_doc())


class SupervisorRelay:
    """The worker's heartbeat channel (see the module docstring)."""

    def __init__(self, path: Path, conf: Mapping[str, Any]) -> None:
        self.path = path
        self.conf = conf

    def set_worker_heartbeat(self, beat: WorkerHeartbeat) -> None:
        write_nimbus_heartbeat(self.path, beat)

    def worker_heartbeats(self, topology_id: str) -> dict[tuple[str, int], WorkerHeartbeat]:
        try:
            with NimbusClient.from_config(self.conf) as client:
                return client.worker_heartbeats(topology_id)
        except RpcError as exc:
            raise OSError(f"cannot read the earlier heartbeats of {topology_id} from Nimbus: {exc}") from exc
