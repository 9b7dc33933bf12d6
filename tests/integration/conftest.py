"""Shared fixtures for integration tests: one real ZooKeeper per session, one chroot per test.

Fixtures:

* ``zookeeper`` (session): a running :class:`stormpy.testing.zookeeper.ZooKeeperServer`
  (``-Xmx256m``, 127.0.0.1, free port, temp data dir); use ``zookeeper.connect_string``. When
  ZooKeeper or Java is missing, tests using it are skipped, or fail with the install hint when the
  environment variable ``CI`` is ``true``.
* ``zk_root`` (function): a unique, empty znode path for this test (``/stormpy-tests/<test>-<id>``),
  deleted after the test. Pass it as the ``root`` of ZkStorage / ClusterState.
* ``zk_storage`` (function): a started :class:`stormpy.cluster.ZkStorage` on ``zk_root``.
* ``cluster_state`` (function): a :class:`stormpy.cluster.ClusterState` on ``zk_storage``.

When a test using ``zookeeper`` fails, the tail of the server log is attached to the report.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from stormpy.cluster import ClusterState, ZkStorage
from stormpy.cluster.zkserver import ZooKeeperServer
from zookeeper_kit import running_zookeeper

TEST_ROOT = "/stormpy-tests"


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[ZooKeeperServer]:
    """One real ZooKeeper server for the whole test session."""
    with running_zookeeper(heap_mb=256) as server:
        yield server


@pytest.fixture(scope="session")
def _zk_admin(zookeeper: ZooKeeperServer) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zookeeper.connect_string, timeout=10.0)
    client.start(timeout=30)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@pytest.fixture
def zk_root(request: pytest.FixtureRequest, _zk_admin: KazooClient) -> Iterator[str]:
    """A unique, empty ZooKeeper path for this test, removed afterwards."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)[:80]
    root = f"{TEST_ROOT}/{name}-{uuid.uuid4().hex[:8]}"
    yield root
    _zk_admin.delete(root, recursive=True)


@pytest.fixture
def zk_storage(zookeeper: ZooKeeperServer, zk_root: str) -> Iterator[ZkStorage]:
    """A connected ZkStorage rooted at ``zk_root``."""
    storage = ZkStorage(zookeeper.connect_string, zk_root, connect_timeout_secs=30).start()
    try:
        yield storage
    finally:
        storage.close()


@pytest.fixture
def cluster_state(zk_storage: ZkStorage) -> ClusterState:
    """A ClusterState over ``zk_storage`` (closed with it)."""
    return ClusterState(zk_storage)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report = yield
    if report.failed and call.when == "call" and "zookeeper" in getattr(item, "fixturenames", ()):
        server = item.funcargs.get("zookeeper") if hasattr(item, "funcargs") else None
        if isinstance(server, ZooKeeperServer):
            report.sections.append(("ZooKeeper log tail", server.log_tail(60)))
    return report
