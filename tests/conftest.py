"""Fixtures shared by every test directory."""

from __future__ import annotations

import os

import pytest

from stormpy.connectors.spark.errors import SparkUnavailableError, require_spark


@pytest.fixture(scope="session")
def spark_required() -> None:
    """Skip when PySpark or Java is missing; in CI (``CI=true``) that is a failure instead."""
    try:
        require_spark()
    except SparkUnavailableError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"Spark is required in CI: {exc}", pytrace=False)
        pytest.skip(str(exc))
