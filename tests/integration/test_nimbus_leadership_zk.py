"""A leading Nimbus and its ZooKeeper connection, with a real ZooKeeper: while the connection is
suspended (ZooKeeper stopped with SIGSTOP) the leader refuses writes and names no leader (or the
lock holder); once reconnected it takes writes again. After its session was lost (expired) and a
new one made, it contends, leads and takes writes again: losing the connection once never makes a
Nimbus refuse writes for good."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from parts_kit import running_zookeeper
from stormpy.cluster.zkserver import ZooKeeperServer
from stormpy.nimbus import Nimbus
from stormpy.rpc import RpcClient
from stormpy.rpc.errors import NotFoundError, NotLeaderError
from stormpy.testing import wait_for

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(120)]


def nimbus_conf(connect: str, root: str, tmp: Path, session_ms: int) -> dict[str, Any]:
    host, _, port = connect.rpartition(":")
    return {"storm.zookeeper.servers": [host], "storm.zookeeper.port": int(port),
            "storm.zookeeper.root": root, "storm.local.dir": str(tmp / "nimbus"), "nimbus.thrift.port": 0,
            "nimbus.monitor.freq.secs": 0.5, "storm.zookeeper.session.timeout": session_ms}


def takes_writes(rpc: RpcClient) -> bool:
    """True when a write passes the leader check (it then fails only for the unknown name)."""
    try:
        rpc.call("activate", name="no-such-topology")
    except NotFoundError:
        return True
    except NotLeaderError:
        return False
    raise AssertionError("activating an unknown topology must fail")


@pytest.fixture
def private_zookeeper() -> Iterator[ZooKeeperServer]:
    with running_zookeeper(heap_mb=128) as server:
        yield server


def test_a_suspended_leader_refuses_writes_until_it_reconnects(private_zookeeper: ZooKeeperServer,
                                                               tmp_path: Path) -> None:
    # 12 s session: kazoo suspends the connection after two thirds of it without an answer, and
    # ZooKeeper is resumed at once then, well before the session could expire.
    nimbus = Nimbus(nimbus_conf(private_zookeeper.connect_string, "/lead-suspend", tmp_path, 12000)).start()
    rpc = RpcClient("127.0.0.1", nimbus.port, timeout_secs=10, retries=0, service="Nimbus")
    zk_pid = private_zookeeper.pid
    assert zk_pid is not None
    try:
        wait_for(nimbus.is_leader, 30, "the Nimbus to lead")
        assert takes_writes(rpc)
        os.kill(zk_pid, signal.SIGSTOP)
        try:
            wait_for(lambda: not nimbus.is_leader(), 30, "the leader to notice the suspended connection")
            assert not takes_writes(rpc)
            assert rpc.call("get_leader")["leader"] in (None, nimbus.address)  # none, or the lock holder
        finally:
            os.kill(zk_pid, signal.SIGCONT)
        wait_for(lambda: takes_writes(rpc), 40, "the leader to take writes again after reconnecting")
        assert nimbus.is_leader()
    finally:
        rpc.close()
        nimbus.stop()


def test_a_leader_whose_session_expired_leads_and_takes_writes_again(zookeeper: Any, zk_root: str,
                                                                      tmp_path: Path) -> None:
    nimbus = Nimbus(nimbus_conf(zookeeper.connect_string, zk_root, tmp_path, 6000)).start()
    rpc = RpcClient("127.0.0.1", nimbus.port, timeout_secs=10, retries=0, service="Nimbus")
    try:
        wait_for(nimbus.is_leader, 30, "the Nimbus to lead")
        assert takes_writes(rpc)
        assert nimbus.state is not None
        storage = nimbus.state.storage
        old_session = storage.session_id
        credentials = storage.session_credentials
        assert credentials is not None
        deposed = []
        assert nimbus.leadership is not None
        original = nimbus.leadership._on_deposed
        nimbus.leadership._on_deposed = lambda: (deposed.append(time.monotonic()), original())[1]
        thief = KazooClient(hosts=zookeeper.connect_string, client_id=credentials)  # expire it
        thief.start(timeout=20)
        thief.stop()
        thief.close()
        wait_for(lambda: deposed, 30, "the leader to step down with its lost session")
        wait_for(lambda: storage.connected and storage.session_id not in (None, old_session), 30,
                 "a new ZooKeeper session")
        wait_for(lambda: takes_writes(rpc), 40, "the Nimbus to lead and take writes again")
        assert nimbus.is_leader() and nimbus.monitor is not None and nimbus.monitor.running
        assert rpc.call("get_leader")["leader"] == nimbus.address
    finally:
        rpc.close()
        nimbus.stop()
