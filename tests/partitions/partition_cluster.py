"""A stormpy cluster spread over network namespaces: ZooKeeper, two Nimbus hosts (HA) and two
supervisors, each on a host of its own (:class:`~netns.HostNetwork`).

:class:`NetnsCluster` contract (a :class:`~stormpy.testing._cluster.ProcessCluster`):

* Hosts ``zk``, ``nimbus0``, ``nimbus1``, ``sup0``, ``sup1``. ZooKeeper serves on
  ``<zk>:2181``; Nimbus ``i`` on ``<nimbusi>:6627``; supervisor ``i`` on ``<supi>`` with slots
  ``6700 + 2i`` and ``6701 + 2i`` (distinct, so the kit tells supervisors apart by their ports).
  Every daemon is started through :meth:`HostNetwork.python_wrapper`, so it and its workers run
  on its host; ``nimbus.host``, ``supervisor.host`` (hence the workers' bind address) and
  ``nimbus.seeds`` name host addresses.
* The test process reaches every host over the observer link: :meth:`client`,
  :meth:`leader_index`, :attr:`state` work as on a one-host ProcessCluster.
* :meth:`stop` stops the daemons (ProcessCluster's stop), then ZooKeeper.

:class:`NetnsRedis`: a :class:`~stormpy.local._redis_server.RedisServer` run on one host of a
HostNetwork, bound to that host's address on ``REDIS_PORT`` (every host and the observer reach
it; its ``provider_config`` names that address).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from netns import HostNetwork

from stormpy.client import NimbusClient
from stormpy.config import rpc_auth_token
from stormpy.local._redis_server import RedisServer
from stormpy.testing._cluster import ProcessCluster
from stormpy.testing._zookeeper import ZooKeeperServer

__all__ = ["HOSTS", "NIMBUS_PORT", "REDIS_PORT", "NetnsCluster", "NetnsRedis", "NetnsZooKeeper",
           "ZK_PORT"]

HOSTS = ["zk", "nimbus0", "nimbus1", "sup0", "sup1"]
ZK_PORT = 2181
NIMBUS_PORT = 6627
SLOT_BASE = 6700
REDIS_PORT = 6379


class NetnsZooKeeper(ZooKeeperServer):
    """A ZooKeeperServer run on one host of a HostNetwork (bound to that host's address)."""

    def __init__(self, net: HostNetwork, host: str, data_dir: Path) -> None:
        super().__init__(ZK_PORT, host=net.address(host), data_dir=data_dir, heap_mb=256)
        self.net = net
        self.netns_host = host

    def command(self) -> list[str]:
        return self.net.argv(self.netns_host, *super().command())


class NetnsRedis(RedisServer):
    """A RedisServer run on one host of a HostNetwork (bound to that host's address)."""

    def __init__(self, net: HostNetwork, host: str) -> None:
        super().__init__(REDIS_PORT, host=net.address(host))
        self.net = net
        self.netns_host = host

    def command(self) -> list[str]:
        return self.net.argv(self.netns_host, *super().command())


class NetnsCluster(ProcessCluster):
    """Nimbus ×2 and supervisors ×2 on their own hosts, ZooKeeper on a third (see module doc)."""

    def __init__(self, net: HostNetwork, base_dir: Path, conf: Mapping[str, Any]) -> None:
        self.net = net
        self.zk = NetnsZooKeeper(net, "zk", base_dir / "zookeeper")
        self.nimbus_hosts = ["nimbus0", "nimbus1"]
        self.supervisor_hosts = ["sup0", "sup1"]
        super().__init__(f"{net.address('zk')}:{ZK_PORT}", supervisors=2, slots_per_supervisor=2,
                         nimbuses=2, base_dir=base_dir, zk_root=f"/stormpy-pt-{uuid.uuid4().hex[:8]}",
                         conf=conf, nimbus_port=NIMBUS_PORT, host=net.address("nimbus0"),
                         slot_ports=[[SLOT_BASE, SLOT_BASE + 1], [SLOT_BASE + 2, SLOT_BASE + 3]])
        self.nimbus_ports = [NIMBUS_PORT, NIMBUS_PORT]
        self.seeds = [f"{net.address(h)}:{NIMBUS_PORT}" for h in self.nimbus_hosts]
        wrappers = base_dir / "bin"
        for daemon, host in zip([*self.nimbuses, *self.supervisors],
                                [*self.nimbus_hosts, *self.supervisor_hosts], strict=True):
            daemon.python = net.python_wrapper(host, wrappers)
            daemon.conf.update({"nimbus.seeds": self.seeds, "nimbus.thrift.port": NIMBUS_PORT,
                                "nimbus.host": net.address(host), "supervisor.host": net.address(host)})
        self.daemon_hosts = {d.name: h for d, h in zip([*self.nimbuses, *self.supervisors],
                                                        [*self.nimbus_hosts, *self.supervisor_hosts],
                                                        strict=True)}

    def start(self, timeout_secs: float = 60.0) -> NetnsCluster:
        self.zk.start()
        try:
            super().start(timeout_secs)
        except BaseException:
            self.zk.stop()
            raise
        return self

    def stop(self) -> None:
        try:
            super().stop()
        finally:
            self.zk.stop()

    def _probe(self, index: int, timeout: float = 1.0) -> NimbusClient:
        return NimbusClient(self.net.address(self.nimbus_hosts[index]), NIMBUS_PORT, timeout_secs=timeout,
                            retries=0, auth_token=rpc_auth_token(self.extra_conf), leader_wait_secs=0)

    def start_nimbus(self, timeout_secs: float = 60.0, *, index: int = 0) -> None:
        self.nimbuses[index].start()
        probe = self._probe(index)
        try:
            self.wait_for(lambda: probe.ping(1.0), timeout_secs, f"{self.nimbuses[index].name} to answer",
                          check_daemons=False)
        finally:
            probe.close()

    def says_leader(self, index: int) -> bool | None:
        """Whether Nimbus ``index`` answers that it leads (None: it does not answer)."""
        if not self.nimbuses[index].running:
            return None
        probe = self._probe(index)
        try:
            return bool(probe.rpc.call("get_leader").get("is_leader"))
        except Exception:  # noqa: BLE001 - a Nimbus starting, stopping or cut off
            return None
        finally:
            probe.close()

    def leader_index(self) -> int | None:
        for i in range(len(self.nimbuses)):
            if self.says_leader(i):
                return i
        return None

    @property
    def nimbus_address(self) -> str:
        return self.seeds[0]

    def client(self, timeout_secs: float = 10.0, retries: int = 1) -> NimbusClient:
        client = NimbusClient(self.net.address("nimbus0"), NIMBUS_PORT, timeout_secs=timeout_secs,
                              retries=retries, auth_token=rpc_auth_token(self.extra_conf), seeds=self.seeds)
        self._clients.append(client)
        return client

    def dump_logs(self, lines: int = 40) -> str:
        zk_log = self.zk.work_dir / "zookeeper.log" if self.zk.work_dir is not None else None
        tail = ""
        if zk_log is not None and zk_log.exists():
            tail = "\n===== zookeeper.log =====\n" + "\n".join(zk_log.read_text(errors="replace")
                                                              .splitlines()[-lines:])
        return super().dump_logs(lines) + tail
