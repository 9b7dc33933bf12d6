"""Fixtures for the Spark connector tests.

* ``spark`` (session): the process's SparkSession from ``stormpy.connectors.spark``, held for the
  whole test run so every topology started meanwhile reuses it (one JVM for all tests). Skipped
  when PySpark or Java is missing, unless ``CI=true``, where that is a failure.
* ``registry_list`` (function): a list shared with components through the testing registry
  (its key is ``registry_list.key``).

``examples/`` is on pytest's pythonpath, so the flagship's ``accesslogs`` package imports.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stormpy.connectors.spark import spark_session
from stormpy.testing import _registry as registry

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="session")
def spark(spark_required: None) -> Iterator[Any]:
    """One local SparkSession for the whole test session."""
    with spark_session({"spark.app.name": "stormpy-tests"}) as session:
        yield session


class SharedList(list[Any]):
    """A list components can reach through ``registry.lookup(key)``."""

    key: str


@pytest.fixture
def registry_list() -> Iterator[SharedList]:
    shared = SharedList()
    shared.key = registry.register(shared)
    try:
        yield shared
    finally:
        registry.unregister(shared.key)
