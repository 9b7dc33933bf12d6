"""Shipping a topology's code to Spark executors, the master probe and the cluster driver
defaults (no Spark needed: the zips, config rules and sockets are checked directly)."""

from __future__ import annotations

import socket
import zipfile
from pathlib import Path

import pytest

from stormpy.connectors.spark import SparkMasterUnreachable, spark_settings
from stormpy.connectors.spark._code import code_dir_of, probe_master, zip_code
from stormpy.local._spark_cluster import SparkStandalone


def make_code(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "topo.py").write_text("def udf(x):\n    return x + 1\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "__pycache__").mkdir()
    (root / "pkg" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    (root / ".hidden").write_text("secret")
    return root


def test_zip_has_the_code_only_and_is_named_by_its_content(tmp_path: Path) -> None:
    code = make_code(tmp_path / "code")
    out = tmp_path / "zips"
    out.mkdir()
    first = zip_code(code, out)
    assert Path(first).name.startswith("stormpy-code-") and first.endswith(".zip")
    with zipfile.ZipFile(first) as zf:
        assert sorted(zf.namelist()) == ["pkg/__init__.py", "topo.py"]
        assert zf.read("topo.py").startswith(b"def udf")
    assert zip_code(code, out) == first, "the same code gives the same file"
    (code / "topo.py").write_text("def udf(x):\n    return x + 2\n")
    changed = zip_code(code, out)
    assert changed != first and Path(changed).is_file(), "a changed bundle is a new file"


def test_code_dir_comes_from_the_worker_or_the_topology_config(tmp_path: Path) -> None:
    code = make_code(tmp_path / "code")
    other = make_code(tmp_path / "other")
    assert code_dir_of({}) is None
    assert code_dir_of({"worker.code.dir": str(code)}) == str(code.resolve())
    assert code_dir_of({"worker.code.dir": str(code),
                        "spark.stormpy.code.dir": str(other)}) == str(other.resolve())
    assert code_dir_of({"worker.code.dir": str(code), "spark.stormpy.ship.code": False}) is None
    assert code_dir_of({"worker.code.dir": str(code), "spark.stormpy.ship.code": "false"}) is None
    with pytest.raises(ValueError, match="spark.stormpy.code.dir.*not a directory"):
        code_dir_of({"spark.stormpy.code.dir": str(tmp_path / "missing")})


def test_probe_master_accepts_a_listening_master_and_names_an_unreachable_one() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        probe_master(f"spark://127.0.0.1:{port}", 1.0)
        with socket.socket() as closed:
            closed.bind(("127.0.0.1", 0))
            dead = closed.getsockname()[1]  # bound, not listening: refused
            probe_master(f"spark://127.0.0.1:{dead},127.0.0.1:{port}", 1.0)  # HA: one answers
            with pytest.raises(SparkMasterUnreachable, match=f"127.0.0.1:{dead}"):
                probe_master(f"spark://127.0.0.1:{dead}", 1.0)
    with pytest.raises(ValueError, match="not host:port"):
        probe_master("spark://nohost", 1.0)


def test_settings_keep_the_connectors_keys_and_default_a_reachable_driver_on_clusters() -> None:
    local = spark_settings({"spark.stormpy.batch.timeout.secs": 5, "spark.executor.memory": "1g",
                            "supervisor.host": "node1"})
    assert not any(k.startswith("spark.stormpy.") for k in local)
    assert local["spark.executor.memory"] == "1g"
    assert "spark.driver.host" not in local and "spark.driver.bindAddress" not in local
    cluster = spark_settings({"spark.master": "spark://m:7077", "supervisor.host": "node1"})
    assert cluster["spark.driver.host"] == "node1"
    assert cluster["spark.driver.bindAddress"] == "0.0.0.0"
    own = spark_settings({"spark.master": "spark://m:7077", "supervisor.host": "node1",
                          "spark.driver.host": "10.0.0.5", "spark.driver.port": 40000})
    assert own["spark.driver.host"] == "10.0.0.5" and own["spark.driver.port"] == "40000"


def test_standalone_cluster_arguments_are_checked_before_anything_starts() -> None:
    with pytest.raises(ValueError, match="workers"):
        SparkStandalone(-1)
    with pytest.raises(ValueError, match="worker_cores"):
        SparkStandalone(1, worker_cores=0)
    with pytest.raises(RuntimeError, match="after start"):
        _ = SparkStandalone(1).master_url
