"""Fixtures shared by every test directory: one per real part.

* ``zookeeper`` (session): a running :class:`stormpy.cluster.zkserver.ZooKeeperServer`
  (``-Xmx256m``, 127.0.0.1, free port, temp data dir); use ``zookeeper.connect_string``. When
  ZooKeeper or Java is missing, tests using it are skipped, or fail with the install hint when the
  environment variable ``CI`` is ``true``. A process cluster on it: ``cluster_kit.running_cluster``
  (the ``cluster`` fixture of tests/integration and tests/kafka).
* ``zk_root`` (function): a unique, empty znode path for this test (``/stormpy-tests/<test>-<id>``),
  deleted after the test. Pass it as the ``root`` of ZkStorage / ClusterState.
* ``spark_required`` / ``spark_standalone`` (session): a local Spark, or a standalone master.
"""

from __future__ import annotations

import json
import os
import re
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import Phase, settings
from kazoo.client import KazooClient

from stormpy.cluster import ClusterState, ZkStorage
from stormpy.cluster.zkserver import ZooKeeperServer
from stormpy.connectors.spark._errors import SparkUnavailableError, require_spark

TEST_ROOT = "/stormpy-tests"

# Mutation runs (tools/mutate.py sets STORMPY_HYPOTHESIS_PROFILE=mutation): a property test only
# has to fail, not to find the smallest failing example, so shrinking is skipped; every test keeps
# its own example counts, so exactly the same mutants are killed, sooner.
settings.register_profile("mutation", phases=(Phase.explicit, Phase.reuse, Phase.generate))
if os.environ.get("STORMPY_HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["STORMPY_HYPOTHESIS_PROFILE"])


def _cap_local_waits(cap: float) -> None:
    """Mutation runs (tools/mutate.py sets STORMPY_TEST_WAIT_CAP): every wait of the local testing
    kit (``wait_for``, ``LocalCluster.wait_for`` and ``wait_until_quiet``, tracked waits) gives up
    after at most ``cap`` seconds (a ``wait_for`` given its own ``clock`` is left alone: its time
    is driven, not waited). A mutant that breaks acking or delivery otherwise makes its test
    wait the test's whole timeout (10-30 s) before failing; an unmutated suite meets every such
    condition within milliseconds, and mutmut's clean run checks it with the cap in place."""
    import stormpy.host.waiting as waiting
    import stormpy.local._cluster as local_cluster
    import stormpy.testing as testing

    plain_wait_for = waiting.wait_for

    def wait_for(condition: Any, timeout: float, what: str, **kwargs: Any) -> Any:
        # a wait on a clock handed to it (a test's driven clock) costs no real time: not capped
        bound = timeout if kwargs.get("clock") is not None else min(timeout, cap)
        return plain_wait_for(condition, bound, what, **kwargs)

    for module in (waiting, local_cluster, testing):
        module.wait_for = wait_for  # type: ignore[attr-defined]
    quiet = local_cluster.LocalCluster.wait_until_quiet

    def wait_until_quiet(self: Any, name: str | None = None, timeout: float = 30.0, rounds: int = 3) -> None:
        quiet(self, name, min(timeout, cap), rounds)

    local_cluster.LocalCluster.wait_until_quiet = wait_until_quiet  # type: ignore[method-assign]


if float(os.environ.get("STORMPY_TEST_WAIT_CAP") or 0) > 0:
    _cap_local_waits(float(os.environ["STORMPY_TEST_WAIT_CAP"]))


#: mutation runs (tools/mutate.py sets it): the file each mutant's run appends its first failing
#: test to, so a kill can be checked against what the mutant changed (``tools/mutate.py kills``)
KILL_LOG = os.environ.get("STORMPY_MUTATION_KILL_LOG")
#: mutmut's own phases (not a mutant): stats, clean run, forced failure, collection
_MUTMUT_PHASES = ("", "stats", "fail", "list_all_tests", "mutant_generation")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """In a mutation run, record the mutant under test, the failing test, the phase and the last
    line of its error (one JSON line per failure in ``KILL_LOG``)."""
    if not KILL_LOG or not report.failed:
        return
    mutant = os.environ.get("MUTANT_UNDER_TEST", "")
    if mutant in _MUTMUT_PHASES:
        return
    crash = getattr(report.longrepr, "reprcrash", None)
    error = crash.message if crash is not None else str(report.longrepr).strip().splitlines()[-1:]
    with open(KILL_LOG, "a") as out:
        out.write(json.dumps({"mutant": mutant, "test": report.nodeid, "when": report.when,
                              "error": str(error)[:300]}) + "\n")


@pytest.fixture(scope="session")
def spark_required() -> None:
    """Skip when PySpark or Java is missing; in CI (``CI=true``) that is a failure instead."""
    from parts_kit import unavailable  # a kit on pytest's pythonpath

    try:
        require_spark()
    except SparkUnavailableError as exc:
        unavailable("Spark", str(exc))


@pytest.fixture(scope="session")
def spark_standalone(spark_required: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real standalone Spark master + 1 worker (1 core, 1 GB) for the test session, started
    from the installed PySpark (:class:`stormpy.local._spark_cluster.SparkStandalone`); logs in a
    session temp dir. Skipped when PySpark or Java is missing, a failure in CI (``CI=true``)."""
    from stormpy.local._spark_cluster import SparkStandalone

    cluster = SparkStandalone(1, base_dir=tmp_path_factory.mktemp("spark-standalone"),
                              worker_cores=1, worker_memory="1g", startup_timeout_secs=180)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
        left = cluster.executor_processes()
        assert left == [], f"Spark executor JVMs left: {left}"


@pytest.fixture(scope="session")
def redis_server() -> Iterator[Any]:
    """One real ``redis-server`` for the test session, on a free port (tests keep their keys apart
    by key prefix); skipped when Redis is not installed, a failure in CI (``CI=true``)."""
    from parts_kit import running_redis  # a kit on pytest's pythonpath

    with running_redis() as server:
        yield server


@pytest.fixture
def own_import_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """For a test that runs a user's code in this process (``stormpy local``, which puts the
    code directory first on the import path as a worker does, or a user's own test): the import
    path is this test's, and the modules imported from a directory the test added are forgotten
    afterwards, so the next test imports its own module of the same name."""
    before = list(sys.path)
    modules = set(sys.modules)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    added = tuple(os.path.join(str(p), "") for p in sys.path if p not in before and p)
    for name, module in list(sys.modules.items()):
        if name not in modules and str(getattr(module, "__file__", None) or "").startswith(added):
            del sys.modules[name]


@pytest.fixture(scope="session", autouse=True)
def private_leader_memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The CLI remembers the Nimbus leader in ``$STORMPY_CACHE_DIR``: tests (and the CLI
    processes they start) keep it in a session temp dir, never in the user's home."""
    previous = os.environ.get("STORMPY_CACHE_DIR")
    os.environ["STORMPY_CACHE_DIR"] = str(tmp_path_factory.mktemp("stormpy-cache"))
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("STORMPY_CACHE_DIR", None)
        else:
            os.environ["STORMPY_CACHE_DIR"] = previous


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[ZooKeeperServer]:
    """One real ZooKeeper server for the whole test session."""
    from parts_kit import running_zookeeper  # a kit on pytest's pythonpath

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
    """A connected ZkStorage rooted at ``zk_root`` (closed after the test)."""
    storage = ZkStorage(zookeeper.connect_string, zk_root, connect_timeout_secs=30).start()
    try:
        yield storage
    finally:
        storage.close()


@pytest.fixture
def cluster_state(zk_storage: ZkStorage) -> ClusterState:
    """A ClusterState over ``zk_storage`` (closed with it)."""
    return ClusterState(zk_storage)
