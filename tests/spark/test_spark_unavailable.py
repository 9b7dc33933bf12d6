"""Without PySpark (the ``[spark]`` extra) or without Java, Spark bolts fail with an error that
says what to install — both when checked directly and when a topology prepares a Spark bolt."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from stormpy.connectors.spark import SparkBatchBolt, SparkUnavailableError, require_spark
from stormpy.host.java import find_java
from stormpy.testing import FeederSpout, LocalCluster
from stormpy.topology import TopologyBuilder


class NeverRuns(SparkBatchBolt):
    def process_batch(self, df: Any, batch_id: int) -> None:
        raise AssertionError("not reached")


def run_spark_topology() -> Exception:
    builder = TopologyBuilder()
    builder.set_spout("feed", FeederSpout(["x"]))
    builder.set_bolt("spark", NeverRuns).shuffle_grouping("feed")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("nospark", {}, builder.create_topology())
        with pytest.raises(Exception) as info:
            cluster.wait_until_quiet("nospark", 30)
    return info.value


@pytest.fixture
def no_pyspark(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(sys.modules):
        if name == "pyspark" or name.startswith("pyspark."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark -> ImportError


@pytest.fixture
def no_java(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))


@pytest.mark.usefixtures("no_pyspark")
def test_missing_pyspark_names_the_extra() -> None:
    with pytest.raises(SparkUnavailableError, match=r"pip install 'stormpy-runtime\[spark\]'"):
        require_spark()


@pytest.mark.usefixtures("no_pyspark")
def test_missing_pyspark_fails_the_topology_with_the_hint() -> None:
    error = run_spark_topology()
    assert "stormpy-runtime[spark]" in str(error)
    assert "'pyspark'" in str(error.__cause__)


@pytest.mark.usefixtures("no_java")
def test_missing_java_says_so() -> None:
    assert find_java() is None
    with pytest.raises(SparkUnavailableError, match=r"`java` is not on PATH") as info:
        require_spark()
    assert "JAVA_HOME" in str(info.value) and "install a Java" in str(info.value)


def test_java_home_without_java_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(SparkUnavailableError, match=r"JAVA_HOME=.* has no executable bin/java"):
        require_spark()


@pytest.mark.usefixtures("no_java")
def test_missing_java_fails_the_topology_with_the_hint() -> None:
    error = run_spark_topology()
    assert "Java runtime" in str(error.__cause__)


def test_importing_the_connector_does_not_import_pyspark() -> None:
    import subprocess

    code = ("import sys, stormpy.connectors.spark; "
            "print(any(m == 'pyspark' or m.startswith('pyspark.') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
