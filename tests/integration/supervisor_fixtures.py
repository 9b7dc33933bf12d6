"""pytest plugin for the supervisor and worker-process tests: ``pytest_plugins =
["supervisor_fixtures"]`` in the test module.

* ``supervisor_env``: a :class:`supervisor_kit.SupervisorEnv` on the session's real ZooKeeper
  (``zookeeper``/``zk_root`` fixtures) in a fresh temp dir, closed afterwards: every supervisor
  stopped, every process started under the temp dir killed, the temp dir removed.
* When such a test fails, every daemon and worker log is attached to its report.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from supervisor_kit import SupervisorEnv


@pytest.fixture
def supervisor_env(request: pytest.FixtureRequest, zookeeper: Any, zk_root: str,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[SupervisorEnv]:
    base = tmp_path_factory.mktemp("supervisor-env")
    env = SupervisorEnv(zookeeper.connect_string, zk_root, base)
    request.node.stash[_ENV_KEY] = env
    try:
        yield env
    finally:
        env.close()
        shutil.rmtree(base, ignore_errors=True)


_ENV_KEY = pytest.StashKey[SupervisorEnv]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Attach every daemon/worker log to the report of a failed test using ``supervisor_env``."""
    report = yield
    env = item.stash.get(_ENV_KEY, None)
    if env is not None and report.failed and call.when == "call":
        report.sections.append(("stormpy daemon and worker logs", env.log_report()))
    return report


