"""Where the UI's figures come from: Nimbus (RPC), and the workers' heartbeats the leader holds.

:class:`UiBackend` contract:

* Topology, supervisor and Nimbus documents come from Nimbus (``get_cluster_info``,
  ``get_topology_info``, ``get_topology_files``, the same calls as ``stormpy list`` / ``info``);
  actions go to Nimbus too. A Nimbus that does not accept connections or does not answer in
  ``ui.nimbus.timeout.secs`` raises :class:`BackendUnavailable` (the HTTP layer answers 503); an
  unknown topology raises :class:`NotFound`.
* A sampler thread reads every topology's worker heartbeats every ``ui.poll.secs`` (the
  topologies from ZooKeeper, the heartbeats from the leading Nimbus, ``get_worker_heartbeats``:
  supervisors send them there, none are in ZooKeeper) and feeds a
  :class:`~stormpy.ui._windows.TopologyWindows` per topology (windowed statistics that survive
  worker restarts) and keeps the latest heartbeats for ``/metrics``. A ZooKeeper or Nimbus outage
  is logged and retried; it never stops the UI.
* Every method blocks (RPC or ZooKeeper); the HTTP layer calls them off its event loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from stormpy.client import NimbusClient
from stormpy.cluster import ClusterState, WorkerHeartbeat
from stormpy.cluster.errors import ClusterStateError
from stormpy.config import setting
from stormpy.host.service import Service
from stormpy.rpc.errors import NotFoundError, RpcError, RpcTimeoutError, UnreachableError
from stormpy.ui._windows import TopologyWindows

__all__ = ["BackendUnavailable", "NotFound", "UiBackend"]

log = logging.getLogger(__name__)


class BackendUnavailable(Exception):
    """Nimbus (or ZooKeeper) cannot be reached; the message says which and where."""


class NotFound(Exception):
    """``kind`` ``name`` does not exist (``kind``: topology, component); ``where`` says in what."""

    def __init__(self, kind: str, name: str, where: str = "") -> None:
        super().__init__(f"{kind} {name!r} not found{where}")
        self.kind = kind
        self.name = name


class UiBackend:
    """Nimbus client + ZooKeeper heartbeat sampler for one UI process."""

    def __init__(self, conf: Mapping[str, Any], *, nimbus_address: str | None = None,
                 state_factory: Callable[[], ClusterState] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.conf = dict(conf)
        timeout = float(setting(conf, "ui.nimbus.timeout.secs"))
        self.client = NimbusClient.from_config(conf, nimbus_address, timeout_secs=timeout, retries=0,
                                               connect_timeout_secs=min(3.0, timeout))
        self.poll_secs = float(setting(conf, "ui.poll.secs"))  # >= 0.1, checked at load
        self.clock = clock
        self._state_factory = state_factory or (lambda: ClusterState.from_config(self.conf))
        self._state: ClusterState | None = None
        self._lock = threading.Lock()
        self.windows: dict[str, TopologyWindows] = {}
        self.latest: dict[str, dict[tuple[str, int], WorkerHeartbeat]] = {}
        #: supervisor id → host, from the last sample
        self.hosts: dict[str, str] = {}
        self.samples = 0
        self._specs: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        #: the sampler thread; a ZooKeeper outage is warned about on the first failure in a row
        #: and every 20th, anything else logged with its traceback
        self.sampler = Service("stormpy-ui-sampler", self.sample, interval=self.poll_secs,
                               expected_errors=(ClusterStateError, OSError, RpcError), log=log)

    # -- Nimbus ------------------------------------------------------------------------------------
    def call(self, method: str, /, **args: Any) -> Any:
        """One Nimbus RPC; BackendUnavailable when Nimbus is down, NotFound for unknown names."""
        try:
            return self.client.call(method, **args)
        except (UnreachableError, RpcTimeoutError) as exc:
            raise BackendUnavailable(f"Nimbus at {self.client.address} is not reachable: {exc.message}") \
                from None
        except NotFoundError:
            raise NotFound("topology", str(args.get("name") or args.get("topology_id") or "")) from None

    def cluster_info(self) -> dict[str, Any]:
        return dict(self.call("get_cluster_info"))

    def nimbus_conf(self) -> dict[str, Any]:
        """The cluster's configuration as Nimbus holds it (``get_nimbus_conf``, secrets hidden);
        BackendUnavailable when Nimbus is down or cannot tell (an older Nimbus)."""
        try:
            return dict(self.call("get_nimbus_conf"))
        except RpcError as exc:  # (unreachable is BackendUnavailable already)
            raise BackendUnavailable(f"Nimbus at {self.client.address} did not give its "
                                     f"configuration: {exc.message}") from None

    def daemon_stats(self) -> dict[str, Any]:
        """Nimbus's upload and RPC counters (``get_daemon_stats``)."""
        return dict(self.call("get_daemon_stats"))

    def topology(self, topology_id: str) -> dict[str, Any]:
        """``get_topology_info`` of the topology with this id (names are accepted too)."""
        if not topology_id:
            raise NotFound("topology", topology_id)
        info = dict(self.call("get_topology_info", name=topology_id))
        if topology_id not in (info.get("id"), info.get("name")):
            raise NotFound("topology", topology_id)
        return info

    def spec(self, topology_id: str) -> dict[str, Any]:
        """The topology's spec document (cached: a topology's spec never changes)."""
        return self._files(topology_id)[0]

    def topology_conf(self, topology_id: str) -> dict[str, Any]:
        """The topology's own configuration (cached like the spec)."""
        return self._files(topology_id)[1]

    def _files(self, topology_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        if topology_id not in self._specs:
            files = self.call("get_topology_files", topology_id=topology_id)
            self._specs[topology_id] = (dict(files.get("spec") or {}), dict(files.get("conf") or {}))
        return self._specs[topology_id]

    def action(self, action: str, topology_id: str, **args: Any) -> str:
        """activate | deactivate | kill | rebalance the topology; return its name."""
        name = str(self.topology(topology_id)["name"])
        method = {"kill": "kill_topology"}.get(action, action)
        try:
            self.call(method, name=name, **args)
        except RpcError as exc:
            if isinstance(exc, RpcTimeoutError):
                raise
            raise ActionRefused(exc.remote_type or type(exc).__name__, exc.message) from None
        return name

    def nimbus_reachable(self) -> bool:
        try:
            self.client.check_reachable()
            return bool(self.client.ping(2.0))
        except RpcError:
            return False

    # -- ZooKeeper -----------------------------------------------------------------------------------
    @property
    def state(self) -> ClusterState:
        with self._lock:
            if self._state is None:
                self._state = self._state_factory()
            return self._state

    def window(self, topology_id: str) -> TopologyWindows:
        with self._lock:
            if topology_id not in self.windows:
                self.windows[topology_id] = TopologyWindows(self.clock())
            return self.windows[topology_id]

    def sample(self) -> None:
        """Read every topology's heartbeats once and feed the windows (see the contract)."""
        state = self.state
        now = self.clock()
        self.hosts = {sid: info.host for sid, info in state.supervisors().items()}
        seen = set()
        live = set(state.topologies())
        for topology_id in sorted(live):
            beats = self.client.worker_heartbeats(topology_id)
            if not beats:
                continue
            seen.add(topology_id)
            tracker = self.window(topology_id)
            if tracker.launched is None:  # where carried counters began (see ui/_windows.py)
                base = state.storm_base(topology_id)
                tracker.launched = base.launch_time if base is not None else None
            tracker.observe(beats.values(), now)
            self.latest[topology_id] = dict(beats)
        for gone in set(self.latest) - seen:
            self.latest.pop(gone, None)
        with self._lock:
            for gone in set(self.windows) - seen - live:
                del self.windows[gone]
        for gone in set(self._specs) - live:
            self._specs.pop(gone, None)
        self.samples += 1

    def start(self) -> UiBackend:
        """Start the sampler thread (idempotent)."""
        self.sampler.start()
        return self

    def close(self) -> None:
        self.sampler.stop(timeout=10)
        self.client.close()
        with self._lock:
            if self._state is not None:
                self._state.close()
                self._state = None


class ActionRefused(Exception):
    """Nimbus refused an action; ``kind`` is its error type."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
