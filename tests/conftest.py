"""Fixtures shared by every test directory."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import Phase, settings

from stormpy.connectors.spark.errors import SparkUnavailableError, require_spark

# Mutation runs (tools/mutate.py sets STORMPY_HYPOTHESIS_PROFILE=mutation): a property test only
# has to fail, not to find the smallest failing example, so shrinking is skipped; every test keeps
# its own example counts, so exactly the same mutants are killed, sooner.
settings.register_profile("mutation", phases=(Phase.explicit, Phase.reuse, Phase.generate))
if os.environ.get("STORMPY_HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["STORMPY_HYPOTHESIS_PROFILE"])


@pytest.fixture(scope="session")
def spark_required() -> None:
    """Skip when PySpark or Java is missing; in CI (``CI=true``) that is a failure instead."""
    try:
        require_spark()
    except SparkUnavailableError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"Spark is required in CI: {exc}", pytrace=False)
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def spark_standalone(spark_required: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real standalone Spark master + 1 worker (1 core, 1 GB) for the test session, started
    from the installed PySpark (:class:`stormpy.local.spark_cluster.SparkStandalone`); logs in a
    session temp dir. Skipped when PySpark or Java is missing, a failure in CI (``CI=true``)."""
    from stormpy.local.spark_cluster import SparkStandalone

    cluster = SparkStandalone(1, base_dir=tmp_path_factory.mktemp("spark-standalone"),
                              worker_cores=1, worker_memory="1g", startup_timeout_secs=180)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
        left = cluster.executor_processes()
        assert left == [], f"Spark executor JVMs left: {left}"
