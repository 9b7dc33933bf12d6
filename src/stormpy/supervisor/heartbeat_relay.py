"""A supervisor sends its workers' heartbeats to the leading Nimbus over RPC.

Contract of :class:`HeartbeatRelay` (Storm 2.x's supervisor ``sendSupervisorWorkerHeartbeats``):

* Every ``task.heartbeat.frequency.secs`` (a :class:`~stormpy.host.service.Service` of its own,
  so a slow Nimbus never delays the supervisor's other loops) it reads the ``nimbus-heartbeat``
  file of each worker it runs (``SupervisorDirs.nimbus_heartbeat_file``, written by the worker's
  :class:`~stormpy.worker.heartbeat_channel.SupervisorRelay`) and sends, in ONE
  ``send_supervisor_worker_heartbeats`` call through :class:`~stormpy.client.NimbusClient`, those
  that changed since they were last delivered (a worker whose heartbeat stops changing is left
  for Nimbus to time out). The RPC load on Nimbus is supervisors / period calls per second.
* A file that is missing, unreadable, or of another worker (topology, node or port) is skipped.
* When the call fails (no leader, Nimbus unreachable) nothing is marked delivered, so the next
  round sends the newest heartbeats again; the failure is logged as a throttled warning.
* :meth:`run_once` is one round (tests call it); :attr:`sent` counts the heartbeats delivered.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from stormpy.client import NimbusClient
from stormpy.cluster import MalformedStateError, WorkerHeartbeat
from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.cluster.records import decode
from stormpy.config import setting
from stormpy.host.service import Service
from stormpy.rpc.errors import RpcError

__all__ = ["HeartbeatRelay", "read_nimbus_heartbeat"]


def read_nimbus_heartbeat(dirs: SupervisorDirs, topology_id: str, port: int) -> WorkerHeartbeat | None:
    """The worker's heartbeat for Nimbus, or None when it is missing or unreadable."""
    path = dirs.nimbus_heartbeat_file(topology_id, port)
    try:
        return decode(WorkerHeartbeat, path.read_bytes(), str(path))
    except (OSError, MalformedStateError):
        return None


class HeartbeatRelay:
    """Sends the heartbeats of ``running()``'s workers (port → topology id) of supervisor
    ``supervisor_id`` to the leader (see the module docstring)."""

    def __init__(self, conf: Mapping[str, Any], dirs: SupervisorDirs, supervisor_id: str,
                 running: Callable[[], Mapping[int, str]], *, log: logging.Logger,
                 client: NimbusClient | None = None) -> None:
        self.dirs = dirs
        self.supervisor_id = supervisor_id
        self.running = running
        self.log = log
        self._conf = conf
        self._client = client
        #: (topology id, port) → ``time`` of the heartbeat last delivered
        self._delivered: dict[tuple[str, int], float] = {}
        self.sent = 0
        period = float(setting(conf, "task.heartbeat.frequency.secs"))
        self.service = Service("supervisor-worker-heartbeats", self.run_once, interval=period,
                               expected_errors=(RpcError,), log=log)

    def start(self) -> HeartbeatRelay:
        self.service.start()
        return self

    def stop(self, timeout: float) -> None:
        self.service.stop(timeout)
        if self._client is not None:
            self._client.close()
            self._client = None

    def _nimbus(self) -> NimbusClient:
        if self._client is None:
            self._client = NimbusClient.from_config(self._conf)
        return self._client

    def due(self) -> list[WorkerHeartbeat]:
        """The heartbeats of running workers that changed since they were last delivered."""
        beats = []
        running = dict(self.running())
        for port, topology_id in sorted(running.items()):
            beat = read_nimbus_heartbeat(self.dirs, topology_id, port)
            if beat is None or (beat.topology_id, beat.node, beat.port) != \
                    (topology_id, self.supervisor_id, port):
                continue
            if self._delivered.get((topology_id, port)) != beat.time:
                beats.append(beat)
        live = {(tid, port) for port, tid in running.items()}
        for gone in [k for k in self._delivered if k not in live]:
            del self._delivered[gone]
        return beats

    def run_once(self) -> None:
        """One round: send what is due (RpcError when Nimbus refuses or cannot be reached)."""
        beats = self.due()
        if not beats:
            return
        self._nimbus().send_worker_heartbeats(self.supervisor_id, beats)
        for beat in beats:
            self._delivered[(beat.topology_id, beat.port)] = beat.time
        self.sent += len(beats)
