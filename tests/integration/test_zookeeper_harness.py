"""The real-ZooKeeper harness and the dev-zookeeper runner."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from stormpy.cluster.devzk import default_dev_data_dir, run_dev_zookeeper
from stormpy.cluster.zkserver import (
    ZooKeeperServer,
    ZooKeeperStartError,
    four_letter_word,
    require_java,
)
from stormpy.testing import free_port

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(180)]


def test_session_server_answers(zookeeper: ZooKeeperServer) -> None:
    assert zookeeper.running and zookeeper.ruok()
    assert "Mode: standalone" in four_letter_word(zookeeper.host, zookeeper.port, "srvr")
    client = KazooClient(hosts=zookeeper.connect_string)
    client.start(timeout=30)
    try:
        assert client.exists("/zookeeper") is not None
    finally:
        client.stop()
        client.close()


def test_start_stop_cleans_up(zookeeper: ZooKeeperServer) -> None:
    # (Requesting the session fixture makes this test skip when ZooKeeper is not installed.)
    server = ZooKeeperServer(heap_mb=128)
    with server:
        assert server.ruok()
        data_dir, pid = server.data_dir, server.pid
        assert data_dir is not None and data_dir.is_dir() and pid is not None
        assert (data_dir / "zoo.cfg").is_file()
        assert server.connect_string != zookeeper.connect_string
    assert not server.running and server.pid is None
    assert not data_dir.exists()
    server.stop()  # idempotent


def test_given_data_dir_is_kept(zookeeper: ZooKeeperServer, tmp_path: Path) -> None:
    data_dir = tmp_path / "zkdata"
    with ZooKeeperServer(port=free_port(), data_dir=data_dir, heap_mb=128) as server:
        client = KazooClient(hosts=server.connect_string)
        client.start(timeout=30)
        client.create("/kept", b"yes")
        client.stop()
        client.close()
    assert (data_dir / "version-2").is_dir()
    with ZooKeeperServer(port=free_port(), data_dir=data_dir, heap_mb=128) as again:
        client = KazooClient(hosts=again.connect_string)
        client.start(timeout=30)
        assert client.get("/kept")[0] == b"yes"
        client.stop()
        client.close()


def test_start_failure_reports_the_log_tail(zookeeper: ZooKeeperServer) -> None:
    server = ZooKeeperServer(classpath=["/nonexistent/zookeeper.jar"], java=require_java(),
                             startup_timeout_secs=30)
    try:
        with pytest.raises(ZooKeeperStartError) as info:
            server.start()
    finally:
        server.stop()
    message = str(info.value)
    assert "exited with status" in message and "ZooKeeperServerMain" in message
    assert not server.running and server.data_dir is not None and not server.data_dir.exists()


def test_port_in_use_is_reported(zookeeper: ZooKeeperServer) -> None:
    server = ZooKeeperServer(port=zookeeper.port, startup_timeout_secs=30)
    try:
        with pytest.raises(ZooKeeperStartError, match="(exited with status|did not start serving)"):
            server.start()
        assert server.data_dir is not None and not server.data_dir.exists()
    finally:
        server.stop()


def test_dev_zookeeper_runs_until_stopped(zookeeper: ZooKeeperServer, tmp_path: Path) -> None:
    stop = threading.Event()
    ready: list[ZooKeeperServer] = []
    lines: list[str] = []
    result: list[int] = []
    port = free_port()

    def on_ready(server: ZooKeeperServer) -> None:
        ready.append(server)

    runner = threading.Thread(target=lambda: result.append(run_dev_zookeeper(
        port, tmp_path / "dev-zk", heap_mb=128, echo=lines.append, stop_event=stop, on_ready=on_ready)))
    runner.start()
    try:
        for _ in range(600):
            if ready or not runner.is_alive():
                break
            runner.join(0.1)
        assert ready, f"dev ZooKeeper did not become ready: {lines}"
        assert ready[0].port == port and ready[0].ruok()
    finally:
        stop.set()
        runner.join(60)
    assert result == [0]
    assert any(f"127.0.0.1:{port}" in line for line in lines)
    assert (tmp_path / "dev-zk" / "zoo.cfg").is_file()


def test_default_dev_data_dir() -> None:
    assert default_dev_data_dir({"storm.local.dir": "/var/stormpy"}) == Path("/var/stormpy/dev-zookeeper")
    assert default_dev_data_dir({}) == Path("stormpy-local/dev-zookeeper")
