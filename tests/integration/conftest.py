"""Fixtures of the integration tests over the session's ZooKeeper (``zookeeper`` and ``zk_root``
are defined once for every test directory, in tests/conftest.py).

Fixtures:

* ``zk_storage`` (function): a started :class:`stormpy.cluster.ZkStorage` on ``zk_root``.
* ``cluster_state`` (function): a :class:`stormpy.cluster.ClusterState` on ``zk_storage``.

When a test using ``zookeeper`` fails, the tail of the server log is attached to the report.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stormpy.cluster import ClusterState, ZkStorage
from stormpy.cluster.zkserver import ZooKeeperServer


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
