"""Helpers for the supervisor and worker-process tests (fixtures: ``supervisor_fixtures``).

* :class:`FakeNimbus`: a real RpcServer serving ``get_topology_files``/``begin_download``/
  ``download_chunk`` for bundles built here, and taking the workers' heartbeats supervisors send
  (``send_supervisor_worker_heartbeats``, read back with ``get_worker_heartbeats``) as the
  leading Nimbus does (no Nimbus needed).
* :class:`SupervisorEnv` (the ``supervisor_env`` fixture of ``supervisor_fixtures``): ZooKeeper
  state, a temp dir, a fake Nimbus, helpers to publish topologies and to run supervisors
  in-process; :meth:`SupervisorEnv.close` stops every supervisor and kills every process started
  under the temp dir.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import yaml

from stormpy.bundle import build_bundle
from stormpy.cluster import Assignment, ClusterState, MalformedStateError, StormBase, WorkerHeartbeat
from stormpy.cluster.local_layout import NIMBUS_HEARTBEAT_FILE
from stormpy.cluster.records import decode
from stormpy.host.processes import command_line, live_process, processes_mentioning
from stormpy.nimbus.worker_beats import WorkerBeats
from stormpy.rpc import NotFoundError, RpcServer, UploadError, rpc_method
from stormpy.supervisor import BundleDownloader, Supervisor, SupervisorDirs
from stormpy.supervisor.launcher import WORKER_MODULE
from stormpy.testing import WaitTimeout
from stormpy.testing import wait_for as kit_wait_for
from stormpy.topology._layout import compute_layout
from stormpy.topology._spec import TopologySpec

HERE = Path(__file__).resolve().parent
TOPOLOGIES = HERE / "supervisor_topologies"
EXAMPLES = HERE.parents[1] / "examples"

FAST = {
    "supervisor.monitor.frequency.secs": 0.5,
    "supervisor.heartbeat.frequency.secs": 1,
    "supervisor.worker.timeout.secs": 5,
    "supervisor.worker.start.timeout.secs": 30,
    "supervisor.worker.shutdown.sleep.secs": 3,
    "worker.heartbeat.frequency.secs": 0.5,
    "task.heartbeat.frequency.secs": 0.5,
    "storm.zookeeper.session.timeout": 8000,
}


def wait_for(condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    """The test kit's ``wait_for`` where an exception of ``condition`` means "not yet"
    (conditions race with daemons starting, stopping and losing ZooKeeper)."""
    return kit_wait_for(condition, timeout, what, interval=interval, ignore=(Exception,))


def processes_under(path: Path) -> list[int]:
    """Pids of other processes whose command line mentions ``path``."""
    return processes_mentioning(str(path))


def pid_alive(pid: int) -> bool:
    return live_process(pid) is not None


@dataclass
class PublishedBundle:
    path: Path
    sha256: str
    size: int
    spec: dict[str, Any]
    conf: dict[str, Any]


class FakeNimbus:
    """Serves topology files and chunked bundle downloads like Nimbus does."""

    def __init__(self, chunk_size: int = 16 * 1024) -> None:
        self.chunk_size = chunk_size
        self.topologies: dict[str, PublishedBundle] = {}
        self.downloads: dict[str, PublishedBundle] = {}
        self.download_count = 0
        self.beats = WorkerBeats()
        #: what get_worker_heartbeats answers (SupervisorEnv.heartbeats once an env owns it)
        self.heartbeats_of: Callable[[str], Mapping[tuple[str, int], WorkerHeartbeat]] = self.beats.topology
        self.server = RpcServer("127.0.0.1", 0, self, name="fake-nimbus").start()

    @property
    def port(self) -> int:
        return self.server.port

    @rpc_method
    def get_topology_files(self, topology_id: str) -> dict[str, Any]:
        t = self.topologies.get(topology_id)
        if t is None:
            raise NotFoundError(f"no topology {topology_id}")
        return {"spec": t.spec, "conf": t.conf, "bundle_key": topology_id,
                "bundle_sha256": t.sha256, "bundle_size": t.size}

    @rpc_method
    def send_supervisor_worker_heartbeats(self, supervisor_id: str, heartbeats: list[Any]) -> dict[str, Any]:
        return {"recorded": self.beats.record(WorkerHeartbeat.from_doc(doc) for doc in heartbeats)}

    @rpc_method
    def get_worker_heartbeats(self, topology_id: str) -> dict[str, Any]:
        return {"heartbeats": [b.to_doc() for b in self.heartbeats_of(topology_id).values()]}

    @rpc_method
    def begin_download(self, bundle_key: str) -> dict[str, Any]:
        t = self.topologies.get(bundle_key)
        if t is None:
            raise NotFoundError(f"no bundle {bundle_key}")
        download_id = uuid.uuid4().hex
        self.downloads[download_id] = t
        self.download_count += 1
        return {"download_id": download_id, "size": t.size, "sha256": t.sha256,
                "chunk_size": self.chunk_size}

    @rpc_method
    def download_chunk(self, download_id: str, offset: int) -> dict[str, Any]:
        t = self.downloads.get(download_id)
        if t is None:
            raise UploadError(f"unknown download {download_id}")
        with open(t.path, "rb") as f:
            f.seek(offset)
            return {"data": f.read(self.chunk_size)}

    def close(self) -> None:
        self.server.close()


class SupervisorEnv:
    """Everything a supervisor/worker test needs; see the module docstring."""

    def __init__(self, zk_connect: str, zk_root: str, base: Path) -> None:
        self.zk_connect = zk_connect
        self.zk_root = zk_root
        self.base = base
        self.nimbus = FakeNimbus()
        self.nimbus.heartbeats_of = self.heartbeats
        self.state = ClusterState.connect(zk_connect, zk_root, connect_timeout_secs=30)
        self.supervisors: list[Supervisor] = []
        self.log_dir = base / "logs"

    # -- configuration -----------------------------------------------------------------------
    def conf(self, name: str, ports: list[int], **extra: Any) -> dict[str, Any]:
        host, _, port = self.zk_connect.partition(":")
        conf: dict[str, Any] = {
            **FAST,
            "storm.zookeeper.servers": [host],
            "storm.zookeeper.port": int(port),
            "storm.zookeeper.root": self.zk_root,
            "storm.local.dir": str(self.base / name),
            "storm.log.dir": str(self.log_dir),
            "nimbus.host": "127.0.0.1",
            "nimbus.seeds": ["127.0.0.1"],
            "nimbus.thrift.port": self.nimbus.port,
            "supervisor.host": "127.0.0.1",
            "supervisor.slots.ports": ports,
            "logviewer.port": 0,  # a free port: several supervisors share this host
        }
        conf.update(extra)
        return conf

    def start_supervisor(self, name: str, ports: list[int], **extra: Any) -> Supervisor:
        sup = Supervisor(self.conf(name, ports, **extra)).start()
        self.supervisors.append(sup)
        return sup

    # -- topologies --------------------------------------------------------------------------
    def bundle(self, topology_id: str, files: list[Path], spec: TopologySpec,
               conf: Mapping[str, Any]) -> PublishedBundle:
        src = self.base / "bundles" / topology_id / "src"
        src.mkdir(parents=True)
        for f in files:
            shutil.copy(f, src / f.name)
        info = build_bundle(src, src.parent / "bundle.zip")
        published = PublishedBundle(info.path, info.sha256, info.size, spec.to_doc(), dict(conf))
        self.nimbus.topologies[topology_id] = published
        return published

    def publish(self, topology_id: str, spec: TopologySpec, conf: Mapping[str, Any],
                slots: list[tuple[str, int]], *, files: list[Path], status: str = "active"
                ) -> Assignment:
        """Bundle ``files``, serve them, write the StormBase and an Assignment spreading the
        executors round-robin over ``slots`` ((supervisor id, port) pairs)."""
        full_conf = {"topology.workers": len(slots), "topology.acker.executors": len(slots), **conf}
        self.bundle(topology_id, files, spec, full_conf)
        layout = compute_layout(spec, full_conf)
        executors = {e.key: slots[i % len(slots)] for i, e in enumerate(layout.executors)}
        assignment = Assignment(topology_id=topology_id, bundle_key=topology_id, executors=executors,
                                node_host={node: "127.0.0.1" for node, _ in slots},
                                executor_start_times={e: time.time() for e in executors})
        self.set_status(topology_id, status, num_workers=len(slots))
        self.state.set_assignment(assignment)
        return assignment

    def set_status(self, topology_id: str, status: str, num_workers: int = 1) -> None:
        self.state.set_storm_base(StormBase(topology_id=topology_id, name=topology_id, status=status,
                                            num_workers=num_workers, launch_time=time.time(),
                                            owner="test"))

    # -- observation --------------------------------------------------------------------------
    def heartbeats(self, topology_id: str) -> dict[tuple[str, int], WorkerHeartbeat]:
        """The newest heartbeat of each worker of the topology: what supervisors sent the fake
        Nimbus, or, for workers a test launched without a supervisor (no relay), what the worker
        published in its ``nimbus-heartbeat`` file, whichever is newer."""
        beats = dict(self.nimbus.beats.topology(topology_id))
        for path in self.base.rglob(NIMBUS_HEARTBEAT_FILE):
            try:
                beat = decode(WorkerHeartbeat, path.read_bytes(), str(path))
            except (OSError, MalformedStateError):
                continue
            slot = (beat.node, beat.port)
            if beat.topology_id == topology_id and (slot not in beats or beats[slot].time < beat.time):
                beats[slot] = beat
        return beats

    def total(self, topology_id: str, component: str, counter: str) -> float:
        return sum(hb.stats.get(component, {}).get(counter, 0)
                   for hb in self.heartbeats(topology_id).values())

    def worker_pids(self) -> list[int]:
        return [p for p in processes_under(self.base) if self._is_worker(p)]

    @staticmethod
    def _is_worker(pid: int) -> bool:
        process = live_process(pid)
        argv = command_line(process) if process is not None else None
        return argv is not None and WORKER_MODULE in argv

    def log_report(self) -> str:
        parts = []
        for path in sorted(self.base.rglob("*.log")):
            try:
                text = path.read_text(errors="replace").splitlines()[-80:]
            except OSError:
                continue
            parts.append(f"===== {path.relative_to(self.base)} =====\n" + "\n".join(text))
        return "\n".join(parts)

    # -- cleanup ------------------------------------------------------------------------------
    def close(self) -> None:
        for sup in self.supervisors:
            with contextlib.suppress(Exception):
                sup.stop()
        for pid in processes_under(self.base):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(WaitTimeout):  # closing goes on; leftovers show in the test
            kit_wait_for(lambda: not processes_under(self.base), 10,
                         "the killed processes to be gone", interval=0.05)
        self.nimbus.close()
        self.state.close()


def prepare_node(env: SupervisorEnv, node: str, topology_id: str) -> SupervisorDirs:
    """A supervisor directory for ``node`` with the daemon conf and the topology downloaded (to
    launch worker processes with ``launch_worker`` and no supervisor)."""
    conf = env.conf("local", [])
    dirs = SupervisorDirs(conf["storm.local.dir"], node, conf["storm.log.dir"])
    dirs.root.mkdir(parents=True, exist_ok=True)
    dirs.conf_file.write_text(yaml.safe_dump(conf))
    BundleDownloader(conf, dirs).download(topology_id)
    return dirs


def wordcount_spec(sentences: int) -> TopologySpec:
    import wordcount  # noqa: PLC0415

    return wordcount.build(sentences).create_topology()


def paced_spec(rate: float = 100.0) -> TopologySpec:
    import sup_paced  # noqa: PLC0415

    return sup_paced.paced(rate)


def failing_spec() -> TopologySpec:
    import sup_paced  # noqa: PLC0415

    return sup_paced.failing()


def stuck_spec() -> TopologySpec:
    import sup_paced  # noqa: PLC0415

    return sup_paced.stuck()


WORDCOUNT_FILES = [EXAMPLES / "wordcount.py"]
PACED_FILES = [TOPOLOGIES / "sup_paced.py"]
KEYED_FILES = [TOPOLOGIES / "keyed.py"]


def keyed_spec(out_dir: str, keys: int = 40) -> TopologySpec:
    import keyed  # noqa: PLC0415

    return keyed.keyed(out_dir, keys)


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_msgpack(path: Path) -> Any:
    return msgpack.unpackb(path.read_bytes(), raw=False)
