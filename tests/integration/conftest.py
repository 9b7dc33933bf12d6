"""The integration tests' hooks over the session's ZooKeeper (``zookeeper``, ``zk_root``,
``zk_storage`` and ``cluster_state`` are defined once for every test directory, in
tests/conftest.py).

When a test using ``zookeeper`` fails, the tail of the server log is attached to the report.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stormpy.cluster.zkserver import ZooKeeperServer


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report = yield
    if report.failed and call.when == "call" and "zookeeper" in getattr(item, "fixturenames", ()):
        server = item.funcargs.get("zookeeper") if hasattr(item, "funcargs") else None
        if isinstance(server, ZooKeeperServer):
            report.sections.append(("ZooKeeper log tail", server.log_tail(60)))
    return report
