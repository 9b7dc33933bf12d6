"""ProcessCluster: Nimbus and supervisors as real subprocesses on this machine, for
``stormpy dev-cluster`` and tests (re-exported by :mod:`stormpy.testing._cluster`).

::

    with ProcessCluster(zookeeper.connect_string, supervisors=2, conf=FAST_TIMEOUTS) as cluster:
        client = cluster.client()
        ...                                   # cluster.dump_logs() on failure

Contract:

* Every daemon runs as ``python -m stormpy.cli nimbus|supervisor --config <dir>/stormpy.yaml`` in
  its own directory under ``base_dir`` (a temporary directory when not given, removed by
  :meth:`ProcessCluster.stop`), with its own ``storm.local.dir`` and log directory, and
  stdout/stderr in ``<daemon>.out``. Supervisor ``i`` gets its own slot ports.
* ``nimbuses=N`` starts N Nimbus processes (Nimbus HA): each gets its own port and directory,
  every daemon's ``nimbus.seeds`` lists all of them; :attr:`~ProcessCluster.nimbus` is the first,
  :attr:`~ProcessCluster.nimbuses` all, and :meth:`~ProcessCluster.leader_index` says which leads.
* :meth:`~ProcessCluster.start` returns once every Nimbus answers, one of them leads, and every
  supervisor is registered in ZooKeeper, or raises TimeoutError carrying the daemons' log tails.
* With ``ui=True`` it also runs ``stormpy ui`` (on ``ui_port``, a free port when not given; see
  :attr:`~ProcessCluster.ui_url`) beside Nimbus and waits until it accepts connections.
* :meth:`~ProcessCluster.stop` sends SIGTERM to every daemon, SIGKILL after a grace period, and
  then ends any worker process still running from this cluster's directories (found by their
  command lines through ``psutil``), so nothing is left behind; it is idempotent.
* Waits are bounded (:meth:`~ProcessCluster.wait_for`); no method blocks forever.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import psutil
import yaml

from stormpy.client import NimbusClient, rpc_client
from stormpy.cluster import ClusterState, SupervisorInfo, WorkerHeartbeat
from stormpy.host.ports import free_ports
from stormpy.host.processes import live_process, terminate
from stormpy.host.waiting import WaitTimeout, wait_for
from stormpy.rpc.errors import RpcError

__all__ = ["DaemonProcess", "ProcessCluster", "end_processes", "find_processes", "free_ports"]


def find_processes(*needles: str) -> list[tuple[int, list[str]]]:
    """(pid, argv) of every other process whose command line contains all ``needles``, by pid."""
    found = []
    me = os.getpid()
    for proc in psutil.process_iter(["cmdline"]):
        if proc.pid == me:
            continue
        args = [str(a) for a in (proc.info.get("cmdline") or []) if a]
        line = " ".join(args)
        if args and all(n in line for n in needles):
            found.append((proc.pid, args))
    return sorted(found)


def end_processes(pids: list[int], grace_secs: float) -> None:
    """SIGTERM every process of ``pids`` that still exists, SIGKILL those still running after
    ``grace_secs``; returns once they are gone (or after 5 s more). Vanished pids are skipped."""
    terminate([p for p in map(live_process, pids) if p is not None], grace_secs)


class DaemonProcess:
    """One daemon subprocess (``nimbus`` or ``supervisor``) with its directory and config."""

    def __init__(self, kind: str, name: str, workdir: Path, conf: Mapping[str, Any], python: str) -> None:
        self.kind = kind
        self.name = name
        self.workdir = workdir
        self.conf = dict(conf)
        self.python = python
        self.proc: psutil.Popen | None = None
        self.conf_path = workdir / "stormpy.yaml"
        self.out_path = workdir / f"{name}.out"

    def start(self) -> None:
        """Write the config and launch ``python -m stormpy.cli KIND``."""
        if self.running:
            return
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.conf_path.write_text(yaml.safe_dump(self.conf, sort_keys=True))
        env = dict(os.environ, STORMPY_CONF=str(self.conf_path), PYTHONUNBUFFERED="1")
        with open(self.out_path, "ab") as out:
            argv = [self.python, "-m", "stormpy.cli", self.kind, "--config", str(self.conf_path)]
            self.proc = psutil.Popen(argv, cwd=self.workdir,
                                     env=env, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def signal_stop(self, *, kill: bool = False) -> None:
        """Send SIGTERM (SIGKILL when ``kill``) if it runs; do not wait."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(psutil.NoSuchProcess):
                if kill:
                    self.proc.kill()
                else:
                    self.proc.terminate()

    def stop(self, *, kill: bool = False, grace_secs: float = 15.0) -> int | None:
        """SIGTERM (SIGKILL when ``kill`` or after ``grace_secs``); return the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            if kill:
                self.signal_stop(kill=True)
                psutil.wait_procs([self.proc], timeout=5)
            else:
                terminate([self.proc], grace_secs)
        return self.proc.poll()

    def log_files(self) -> list[Path]:
        return sorted(p for p in self.workdir.rglob("*") if p.is_file() and p.suffix in (".log", ".out"))


class ProcessCluster:
    """Nimbus + ``supervisors`` supervisors as subprocesses against a running ZooKeeper."""

    def __init__(self, zk_connect: str, *, supervisors: int = 2, slots_per_supervisor: int = 2,
                 base_dir: str | os.PathLike[str] | None = None, zk_root: str = "/stormpy",
                 conf: Mapping[str, Any] | None = None, nimbus_port: int | None = None,
                 slot_ports: list[list[int]] | None = None, host: str = "127.0.0.1",
                 python: str = sys.executable, nimbuses: int = 1, ui: bool = False,
                 ui_port: int | None = None) -> None:
        if nimbuses < 1:
            raise ValueError(f"a cluster needs at least one Nimbus, got nimbuses={nimbuses}")
        self.zk_connect = zk_connect
        self.zk_root = zk_root
        self.host = host
        self.python = python
        self._own_dir = base_dir is None
        self.base_dir = Path(base_dir or tempfile.mkdtemp(prefix="stormpy-cluster-")).resolve()
        self.extra_conf = dict(conf or {})
        # Nimbus i listens on nimbus_port + i when nimbus_port is given, else on free ports.
        self.nimbus_ports = ([nimbus_port + i for i in range(nimbuses)] if nimbus_port
                             else free_ports(nimbuses, host))
        self.nimbus_port = self.nimbus_ports[0]
        if slot_ports is None:
            ports = free_ports(supervisors * slots_per_supervisor, host)
            slot_ports = [ports[i * slots_per_supervisor:(i + 1) * slots_per_supervisor]
                          for i in range(supervisors)]
        self.slot_ports = [list(p) for p in slot_ports]
        names = ["nimbus" if i == 0 else f"nimbus-{i}" for i in range(len(self.nimbus_ports))]
        self.nimbuses = [DaemonProcess("nimbus", name, self.base_dir / name,
                                       self._conf(name, nimbus_port=port), python)
                         for name, port in zip(names, self.nimbus_ports, strict=True)]
        self.nimbus = self.nimbuses[0]
        self.supervisors = [DaemonProcess("supervisor", f"supervisor-{i}", self.base_dir / f"supervisor-{i}",
                                          self._conf(f"supervisor-{i}", ports), python)
                            for i, ports in enumerate(self.slot_ports)]
        self.ui_port = (ui_port or free_ports(1, host)[0]) if ui else None
        self.ui: DaemonProcess | None = None
        if ui:
            self.ui = DaemonProcess("ui", "ui", self.base_dir / "ui",
                                    {**self._conf("ui"), "ui.host": host, "ui.port": self.ui_port}, python)
        self._state: ClusterState | None = None
        self._clients: list[NimbusClient] = []
        self._beats_client: NimbusClient | None = None
        self._stopped = False

    # -- configuration ---------------------------------------------------------------------------
    def _conf(self, name: str, ports: list[int] | None = None, *,
              nimbus_port: int | None = None) -> dict[str, Any]:
        zk_hosts = [h for h in self.zk_connect.split(",") if h]
        workdir = self.base_dir / name
        conf: dict[str, Any] = {
            "storm.zookeeper.servers": zk_hosts,
            "storm.zookeeper.root": self.zk_root,
            "storm.local.dir": str(workdir / "local"),
            "storm.log.dir": str(workdir / "logs"),
            "nimbus.host": self.host,
            "supervisor.host": self.host,
        }
        conf.update(self.extra_conf)
        # the cluster's own Nimbus addresses win over the extra conf (dev-cluster passes its -c),
        # so they are set after it
        conf["nimbus.seeds"] = [f"{self.host}:{p}" for p in self.nimbus_ports]
        conf["nimbus.thrift.port"] = nimbus_port or self.nimbus_port
        if ports is not None:
            conf["supervisor.slots.ports"] = list(ports)
            # several supervisors share this host: each log server takes a free port (published
            # in its ZooKeeper record) unless the extra conf names one
            conf.setdefault("logviewer.port", 0)
        return conf

    @property
    def nimbus_address(self) -> str:
        return f"{self.host}:{self.nimbus_port}"

    @property
    def ui_url(self) -> str | None:
        """``http://host:port`` of the UI when the cluster runs one."""
        return f"http://{self.host}:{self.ui_port}" if self.ui is not None else None

    def daemons(self) -> list[DaemonProcess]:
        """Every Nimbus, the supervisors and the UI (when there is one)."""
        return [*self.nimbuses, *self.supervisors, *([self.ui] if self.ui is not None else [])]

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self, timeout_secs: float = 60.0) -> ProcessCluster:
        """Start Nimbus and every supervisor; wait until all are up."""
        try:
            for i in range(len(self.nimbuses)):
                self.start_nimbus(timeout_secs, index=i)
            self.wait_for(lambda: self.leader_index() is not None, timeout_secs, "a Nimbus leader")
            for i in range(len(self.supervisors)):
                self.supervisors[i].start()
            self.wait_for(lambda: len(self.supervisor_ids()) == len(self.supervisors), timeout_secs,
                          "every supervisor to register in ZooKeeper")
            if self.ui is not None:
                self.start_ui(timeout_secs)
        except BaseException:
            self.stop()
            raise
        return self

    def start_nimbus(self, timeout_secs: float = 60.0, *, index: int = 0) -> None:
        """Start (or restart) Nimbus ``index`` and wait until it answers (failing at once when
        every Nimbus has exited, as one that dies on start)."""
        self.nimbuses[index].start()
        probe = rpc_client(self.extra_conf, f"{self.host}:{self.nimbus_ports[index]}", timeout_secs=1.0,
                           retries=0)
        try:
            self.wait_for(lambda: probe.ping(1.0), timeout_secs, f"{self.nimbuses[index].name} to answer")
        finally:
            probe.close()

    def start_ui(self, timeout_secs: float = 60.0) -> None:
        """Start (or restart) the UI and wait until it accepts connections."""
        if self.ui is None or self.ui_port is None:
            raise RuntimeError("this ProcessCluster was created without ui=True")
        self.ui.start()
        port = self.ui_port

        def ui_alive() -> None:  # a check, not the condition: the wait ignores the condition's errors
            if self.ui is not None and not self.ui.running:
                raise RuntimeError(f"the UI exited (code {self.ui.proc.returncode if self.ui.proc else '?'})"
                                   f"\n{self.dump_logs()}")

        def accepting() -> bool:
            with contextlib.suppress(OSError), socket.create_connection((self.host, port), timeout=1):
                return True
            return False
        self.wait_for(accepting, timeout_secs, "the UI to accept connections", check_daemons=False,
                      check=ui_alive)

    def stop_nimbus(self, *, kill: bool = False, index: int = 0) -> int | None:
        """Stop Nimbus ``index`` (SIGTERM, or SIGKILL with ``kill``); return its exit code."""
        return self.nimbuses[index].stop(kill=kill)

    def leader_index(self) -> int | None:
        """Index of the Nimbus that says it leads (None when none does or none answers)."""
        for i, port in enumerate(self.nimbus_ports):
            if not self.nimbuses[i].running:
                continue
            probe = rpc_client(self.extra_conf, f"{self.host}:{port}", timeout_secs=1.0, retries=0)
            try:
                if probe.call("get_leader").get("is_leader"):
                    return i
            except Exception:  # noqa: BLE001 - a Nimbus starting or stopping
                continue
            finally:
                probe.close()
        return None

    def start_supervisor(self, index: int, timeout_secs: float = 60.0) -> None:
        """Start supervisor ``index`` and wait until it is registered."""
        self.supervisors[index].start()
        self.wait_for(lambda: index in self.supervisor_ids(), timeout_secs,
                      f"supervisor-{index} to register in ZooKeeper")

    def stop_supervisor(self, index: int, *, kill: bool = False) -> int | None:
        """Stop supervisor ``index``; return its exit code."""
        return self.supervisors[index].stop(kill=kill)

    def stop(self) -> None:
        """Stop every daemon and every worker left from this cluster (see the module contract)."""
        if self._stopped:
            return
        self._stopped = True
        for client in self._clients:
            client.close()
        if self._state is not None:
            self._state.close()
            self._state = None
        daemons = [*([self.ui] if self.ui is not None else []), *self.supervisors, *self.nimbuses]
        for daemon in daemons:
            daemon.signal_stop()  # all at once: they stop in parallel
        for daemon in daemons:
            daemon.stop(grace_secs=15.0)
        strays = [pid for pid, _ in self.worker_processes()]
        if strays:
            end_processes(strays, grace_secs=5.0)
        if self._own_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> ProcessCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- access ----------------------------------------------------------------------------------
    def client(self, timeout_secs: float = 10.0, retries: int = 1) -> NimbusClient:
        """A NimbusClient for this cluster (closed by :meth:`stop`), sending the cluster conf's
        ``nimbus.rpc.auth.token``; with several Nimbus hosts it follows the leader."""
        client = NimbusClient.from_config(self.extra_conf, f"{self.host}:{self.nimbus_port}",
                                          timeout_secs=timeout_secs, retries=retries,
                                          seeds=[f"{self.host}:{p}" for p in self.nimbus_ports])
        self._clients.append(client)
        return client

    def worker_heartbeats(self, topology_id: str) -> dict[tuple[str, int], WorkerHeartbeat]:
        """(node, port) → the newest heartbeat of each worker of the topology, as the leading
        Nimbus holds them (supervisors send them there; none are in ZooKeeper); empty while no
        leader answers."""
        if self._beats_client is None:
            self._beats_client = self.client(timeout_secs=5.0, retries=0)
        try:
            return self._beats_client.worker_heartbeats(topology_id)
        except RpcError:
            return {}

    def worker_heartbeat(self, topology_id: str, node: str, port: int) -> WorkerHeartbeat | None:
        """The newest heartbeat of the worker ``node:port`` of the topology (see
        :meth:`worker_heartbeats`), or None."""
        return self.worker_heartbeats(topology_id).get((node, port))

    @property
    def state(self) -> ClusterState:
        """A ClusterState on this cluster's ZooKeeper root (for inspection)."""
        if self._state is None:
            self._state = ClusterState.connect(self.zk_connect, self.zk_root, connect_timeout_secs=30)
        return self._state

    def supervisor_infos(self) -> dict[int, SupervisorInfo]:
        """index → SupervisorInfo of the live supervisors (matched by their slot ports)."""
        by_ports = {tuple(sorted(p)): i for i, p in enumerate(self.slot_ports)}
        out = {}
        for info in self.state.supervisors().values():
            index = by_ports.get(tuple(sorted(info.ports)))
            if index is not None:
                out[index] = info
        return out

    def supervisor_ids(self) -> dict[int, str]:
        """index → supervisor id of the live supervisors."""
        return {i: info.supervisor_id for i, info in self.supervisor_infos().items()}

    def worker_processes(self, topology_id: str | None = None) -> list[tuple[int, list[str]]]:
        """(pid, argv) of worker processes started from this cluster's directories."""
        needles = ["stormpy.worker.process", str(self.base_dir)]
        if topology_id is not None:
            needles.append(topology_id)
        return find_processes(*needles)

    # -- waiting and diagnostics -----------------------------------------------------------------
    def wait_for(self, condition: Callable[[], Any], timeout_secs: float, what: str, *,
                 interval: float = 0.2, check_daemons: bool = True,
                 check: Callable[[], None] | None = None) -> Any:
        """Poll ``condition`` until it returns something truthy (returned); TimeoutError naming
        ``what`` with the daemons' log tails otherwise. Fails early when Nimbus has exited, or
        when ``check`` (run after every false poll) raises."""
        def nimbus_alive() -> None:
            if check_daemons and all(n.proc is not None and not n.running for n in self.nimbuses):
                codes = ", ".join(str(n.proc.returncode) for n in self.nimbuses if n.proc is not None)
                raise RuntimeError(f"Nimbus exited (code {codes}) while waiting for {what}\n"
                                   f"{self.dump_logs()}")
            if check is not None:
                check()

        try:  # exceptions of the condition: it may race with daemons starting or stopping
            return wait_for(condition, timeout_secs, what, interval=interval, ignore=(Exception,),
                            check=nimbus_alive)
        except WaitTimeout as exc:
            raise WaitTimeout(f"{exc}\n{self.dump_logs()}") from None

    def log_files(self) -> list[Path]:
        """Every daemon and worker log of this cluster."""
        return sorted(p for d in self.daemons() for p in d.log_files())

    def dump_logs(self, lines: int = 40) -> str:
        """The last ``lines`` lines of every log file, each under a header."""
        parts = []
        for path in self.log_files():
            try:
                tail = path.read_text(errors="replace").splitlines()[-lines:]
            except OSError:
                continue
            parts.append(f"===== {path.relative_to(self.base_dir)} =====\n" + "\n".join(tail))
        return "\n".join(parts)

    def iter_log_lines(self, pattern: str) -> Iterator[tuple[Path, str]]:
        """(file, line) of every log line containing ``pattern``."""
        for path in self.log_files():
            with contextlib.suppress(OSError):
                for line in path.read_text(errors="replace").splitlines():
                    if pattern in line:
                        yield path, line
