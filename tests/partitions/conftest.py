"""Fixtures of the network-partition tests.

* ``netns_cluster`` (function): a factory ``netns_cluster(**conf)`` that builds a
  :class:`~netns.HostNetwork` (hosts ``zk``, ``nimbus0``, ``nimbus1``, ``sup0``, ``sup1``), starts a
  :class:`~partition_cluster.NetnsCluster` on it with ``FAST_TIMEOUTS`` updated by ``conf`` and
  returns it. Its finalizer (also when the test failed) stops the cluster, checks that no worker
  process and no process inside a namespace was left (a test error otherwise), deletes the
  namespaces, links and bridge and removes the cluster's directory.
* ``ledger_bundle`` (session): the bundle of ``ledger_topology/``.

The tests skip outside Linux or without root, and fail when ``CI=true``; on Linux as root a
missing ``ip``/``nft`` or a network that cannot be built is a failure (``make netns-tools``
installs the tools). Without ZooKeeper they skip as the integration tests do (fail under CI).
A failed test gets the cluster's logs attached to its report; with ``STORMPY_PARTITIONS_KEEP=DIR``
every cluster's directory (logs, local state) is copied under ``DIR`` before it is removed.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, NoReturn

import pytest
from netns import HostNetwork, missing_tools, remove_stale_namespaces
from partition_cluster import HOSTS, NetnsCluster

from parts_kit import unavailable
from stormpy.bundle import build_bundle
from stormpy.testing._cluster import FAST_TIMEOUTS
from stormpy.testing._zookeeper import INSTALL_HINT, zookeeper_available

HERE = Path(__file__).resolve().parent
TOPOLOGY_DIR = HERE / "ledger_topology"

_CLUSTER = pytest.StashKey[NetnsCluster]()


def _unavailable(reason: str) -> NoReturn:
    unavailable("the network-partition harness", reason)


def require_netns() -> None:
    """Skip outside Linux/root (fail under CI); fail on Linux as root when a tool is missing."""
    reason = missing_tools()
    if reason is None:
        return
    if sys.platform.startswith("linux") and os.geteuid() == 0:
        pytest.fail(f"the partition harness cannot run: {reason}", pytrace=False)
    _unavailable(reason)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    cluster = item.stash.get(_CLUSTER, None)
    if cluster is not None and report.failed and call.when == "call":
        report.sections.append(("stormpy partition cluster logs", cluster.dump_logs(80)))
    return report


@pytest.fixture(scope="session")
def ledger_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_bundle(TOPOLOGY_DIR, tmp_path_factory.mktemp("ledger-bundle") / "ledger.zip").path


@pytest.fixture
def netns_cluster(request: pytest.FixtureRequest) -> Iterator[Callable[..., NetnsCluster]]:
    require_netns()
    if not zookeeper_available():
        _unavailable(f"ZooKeeper not installed; {INSTALL_HINT}")
    remove_stale_namespaces()
    made: list[tuple[HostNetwork, NetnsCluster | None, Path]] = []

    def make(**conf: Any) -> NetnsCluster:
        base = Path(tempfile.mkdtemp(prefix="stormpy-partitions-"))
        net = HostNetwork(HOSTS)
        made.append((net, None, base))
        net.create()
        cluster = NetnsCluster(net, base, {**FAST_TIMEOUTS, **conf})
        made[-1] = (net, cluster, base)
        request.node.stash[_CLUSTER] = cluster
        cluster.start(timeout_secs=90)
        return cluster

    yield make
    # every cluster, namespace and directory is cleaned up even when a step fails; then the first
    # failure is raised, or the problems found are asserted
    problems: list[str] = []
    errors: list[BaseException] = []

    def step(action: Callable[[], Any]) -> None:
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - raised below, after the rest of the clean-up
            errors.append(exc)

    def stop_cluster(net: HostNetwork, cluster: NetnsCluster) -> None:
        net.heal_all()
        cluster.stop()
        strays = cluster.worker_processes()
        if strays:
            problems.append(f"stray worker processes: {strays}")

    def check_inside(net: HostNetwork) -> None:
        inside = net.processes_inside()
        if inside:
            problems.append(f"processes left inside the namespaces: {inside}")

    def keep_logs(base: Path) -> None:
        keep = os.environ.get("STORMPY_PARTITIONS_KEEP")
        if keep:  # debugging: keep the daemons' and workers' logs
            shutil.copytree(base, Path(keep) / base.name,
                            ignore=shutil.ignore_patterns("stormdist", "*.zip"))

    def check_left(net: HostNetwork) -> None:
        left = net.leftovers()
        if left:
            problems.append(f"namespaces or links left: {left}")

    for net, cluster, base in made:
        if cluster is not None:
            step(partial(stop_cluster, net, cluster))
        step(partial(check_inside, net))
        step(net.destroy)
        step(partial(keep_logs, base))
        shutil.rmtree(base, ignore_errors=True)
        step(partial(check_left, net))
    if errors:
        raise errors[0]
    assert not problems, "; ".join(problems)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    from partition_kit import RESULTS

    if RESULTS:
        terminalreporter.section("stormpy partition runs (ledger counts)")
        for name, text in RESULTS.items():
            terminalreporter.write_line(f"{name}: {text}")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "partitions: network-partition tests on Linux network namespaces "
                                       "(root; tests/partitions, `make test-partitions`)")
