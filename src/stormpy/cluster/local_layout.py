"""The files of a supervisor and its workers under ``storm.local.dir`` (docs/cluster-contract.md,
"Supervisor local layout"): the contract between the supervisor, which prepares them, and the
worker process, which reads and writes them. Only names here, no I/O (besides listing).

::

    <L>/supervisor/<id>/identity.json                      {"host", "ports"} this id serves
    <L>/supervisor/<id>/supervisor.lock                    flock held while a supervisor uses the id
    <L>/supervisor/<id>/conf.yaml                          daemon conf handed to workers
    <L>/supervisor/<id>/stormdist/<topology-id>/           bundle.zip, code/, topology.msgpack
    <L>/supervisor/<id>/workers/<topology-id>-<port>/      heartbeat, pid
    <storm.log.dir or L/logs>/supervisor-<id>.log, worker-<topology-id>-<port>.log
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CONF_FILE", "HEARTBEAT_FILE", "IDENTITY_FILE", "LOCK_FILE", "NIMBUS_HEARTBEAT_FILE", "PID_FILE",
           "SupervisorDirs"]

IDENTITY_FILE = "identity.json"
LOCK_FILE = "supervisor.lock"
CONF_FILE = "conf.yaml"
HEARTBEAT_FILE = "heartbeat"
NIMBUS_HEARTBEAT_FILE = "nimbus-heartbeat"
PID_FILE = "pid"


class SupervisorDirs:
    """The paths of supervisor ``supervisor_id`` under ``local_dir``."""

    def __init__(self, local_dir: str | os.PathLike[str], supervisor_id: str,
                 logs: str | os.PathLike[str] | None = None) -> None:
        self.local_dir = Path(local_dir).resolve()
        self.supervisor_id = supervisor_id
        self.root = self.local_dir / "supervisor" / supervisor_id
        self.logs = Path(logs).resolve() if logs else self.local_dir / "logs"

    @property
    def conf_file(self) -> Path:
        return self.root / CONF_FILE

    @property
    def stormdist_root(self) -> Path:
        return self.root / "stormdist"

    def stormdist(self, topology_id: str) -> Path:
        return self.stormdist_root / topology_id

    def code_dir(self, topology_id: str) -> Path:
        return self.stormdist(topology_id) / "code"

    def topology_file(self, topology_id: str) -> Path:
        return self.stormdist(topology_id) / "topology.msgpack"

    def bundle_file(self, topology_id: str) -> Path:
        return self.stormdist(topology_id) / "bundle.zip"

    def is_downloaded(self, topology_id: str) -> bool:
        """True when the topology's code and description are in place (they appear atomically)."""
        return self.topology_file(topology_id).is_file() and self.code_dir(topology_id).is_dir()

    @property
    def workers_root(self) -> Path:
        return self.root / "workers"

    def worker_dir(self, topology_id: str, port: int) -> Path:
        return self.workers_root / f"{topology_id}-{int(port)}"

    def heartbeat_file(self, topology_id: str, port: int) -> Path:
        return self.worker_dir(topology_id, port) / HEARTBEAT_FILE

    def nimbus_heartbeat_file(self, topology_id: str, port: int) -> Path:
        """The worker's WorkerHeartbeat, which its supervisor sends to the leading Nimbus."""
        return self.worker_dir(topology_id, port) / NIMBUS_HEARTBEAT_FILE

    def pid_file(self, topology_id: str, port: int) -> Path:
        return self.worker_dir(topology_id, port) / PID_FILE

    def worker_log(self, topology_id: str, port: int) -> Path:
        return self.logs / f"worker-{topology_id}-{int(port)}.log"

    def worker_events_log(self, topology_id: str, port: int) -> Path:
        """The worker's sampled tuples (``stormpy.topology._event_log``), beside its log."""
        return self.logs / f"worker-{topology_id}-{int(port)}-events.log"

    @property
    def supervisor_log(self) -> Path:
        return self.logs / f"supervisor-{self.supervisor_id}.log"

    def worker_dirs(self) -> list[tuple[str, int, Path]]:
        """``(topology_id, port, dir)`` of every worker directory present."""
        found = []
        if self.workers_root.is_dir():
            for d in sorted(self.workers_root.iterdir()):
                tid, sep, port = d.name.rpartition("-")
                if d.is_dir() and sep and tid and port.isdigit():
                    found.append((tid, int(port), d))
        return found
