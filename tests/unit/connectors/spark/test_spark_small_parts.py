"""The Spark connector's small parts without a Spark session: what the availability checks say
is missing, which code directory is shipped and the exact zip it becomes, how a standalone
master's hosts are probed, a batch turned into an Arrow table (or refused naming the field) and
handed to ``createDataFrame``, and what a ``process_batch`` result becomes as rows to emit."""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyspark
import pytest

from stormpy.config import SettingError
from stormpy.connectors.spark import _code as code
from stormpy.connectors.spark import _errors as errors
from stormpy.connectors.spark._arrow import (
    BatchConversionError,
    arrow_to_dataframe,
    batch_dataframe,
    result_rows,
    rows_to_arrow,
)
from stormpy.connectors.spark._code import code_dir_of, probe_master, zip_code
from stormpy.connectors.spark._errors import (
    SparkBatchTimeout,
    SparkMasterUnreachable,
    SparkUnavailableError,
    require_java,
    require_spark,
    require_spark_packages,
)


# --- availability ------------------------------------------------------------------------------
@pytest.mark.parametrize("module", ["pyspark", "pyarrow"])
def test_a_missing_package_names_itself_and_the_extra(monkeypatch: pytest.MonkeyPatch,
                                                      module: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(SparkUnavailableError) as err:
        require_spark_packages()
    text = str(err.value)
    assert text.startswith(f"Spark bolts need the optional Spark dependencies, but {module!r} "
                           "cannot be imported (")
    assert text.endswith("); install them with: pip install 'stormpy-runtime[spark]'")
    assert isinstance(err.value.__cause__, ImportError)


def test_java_is_found_or_its_absence_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(errors, "find_java", lambda: "/opt/jdk/bin/java")
    assert require_java() == "/opt/jdk/bin/java"
    monkeypatch.setattr(errors, "find_java", lambda: None)
    monkeypatch.setattr(errors, "missing_java_reason", lambda: "JAVA_HOME=/x has no bin/java")
    with pytest.raises(SparkUnavailableError) as err:
        require_java()
    assert str(err.value) == (
        "Spark bolts need a Java runtime for Spark's JVM, but JAVA_HOME=/x has no bin/java; "
        "install a Java 17+ runtime (for example `apt-get install openjdk-17-jre-headless`) and "
        "put `java` on PATH, or set JAVA_HOME")
    with pytest.raises(SparkUnavailableError, match="needs a Java runtime|need a Java runtime"):
        require_spark()  # the packages are here: java is what is missing
    monkeypatch.setattr(errors, "find_java", lambda: "/opt/jdk/bin/java")
    require_spark()
    assert issubclass(SparkUnavailableError, RuntimeError)
    assert issubclass(SparkMasterUnreachable, RuntimeError)
    assert issubclass(SparkBatchTimeout, TimeoutError)


# --- shipping code ---------------------------------------------------------------------------
@pytest.mark.parametrize(("value", "ships"), [
    (None, True), (True, True), (1, True), ("true", True), ("yes", True), (" On ", True),
    (False, False), (0, False), ("false", False), (" FALSE ", False), ("0", False), ("no", False),
    ("off", False), ("", False), ("  ", False),
])
def test_the_ship_code_switch(tmp_path: Path, value: Any, ships: bool) -> None:
    conf = {"worker.code.dir": str(tmp_path), "spark.stormpy.ship.code": value}
    assert code_dir_of(conf) == (str(tmp_path.resolve()) if ships else None)


def test_the_code_dir_and_the_setting_named_when_it_is_no_directory(tmp_path: Path) -> None:
    assert code_dir_of(None) is None
    assert code_dir_of({"spark.stormpy.code.dir": "", "worker.code.dir": ""}) is None
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    assert code_dir_of({"worker.code.dir": str(tmp_path / "link")}) == str(tmp_path / "real")
    missing = str(tmp_path / "missing")
    for key in ("spark.stormpy.code.dir", "worker.code.dir"):
        with pytest.raises(SettingError) as err:
            code_dir_of({key: missing})
        assert str(err.value) == (f"{key}: {missing!r} is not a directory; cannot ship the "
                                  "topology's code to Spark")


def test_the_zip_holds_the_code_files_with_fixed_metadata(tmp_path: Path) -> None:
    root = tmp_path / "code"
    (root / "pkg" / "__pycache__").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "topo.py").write_text("x = 1\n")
    (root / "pkg" / "mod.py").write_text("y = 2\n")
    (root / "pkg" / "old.pyc").write_bytes(b"\0")
    (root / "pkg" / "__pycache__" / "mod.pyc").write_bytes(b"\0")
    (root / "pkg" / "__pycache__" / "notes.txt").write_text("cache, not code")
    (root / ".git" / "HEAD").write_text("ref")
    (root / "pkg" / ".env").write_text("secret")
    (root / "data.txt").write_text("d")
    out = tmp_path / "out"
    out.mkdir()
    path = zip_code(root, out)
    assert Path(path).parent == out and sorted(os.listdir(out)) == [Path(path).name]
    name = Path(path).name
    assert len(name) == len("stormpy-code-") + 16 + len(".zip")
    digest = name.removeprefix("stormpy-code-").removesuffix(".zip")
    assert all(c in "0123456789abcdef" for c in digest)
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        assert [i.filename for i in infos] == ["data.txt", "pkg/mod.py", "topo.py"]
        for info in infos:
            assert info.date_time == (1980, 1, 1, 0, 0, 0)
            assert info.compress_type == zipfile.ZIP_DEFLATED
            assert info.external_attr == 0o644 << 16
        assert zf.read("pkg/mod.py") == b"y = 2\n"
    import hashlib
    assert digest == hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    os.utime(root / "topo.py", (1, 1))  # a touched file with the same content: the same zip
    Path(path).write_bytes(b"kept")  # an existing zip of that content is not written again
    assert zip_code(root, out) == path and Path(path).read_bytes() == b"kept"


# --- probing the master ---------------------------------------------------------------------
def test_every_host_of_the_master_url_is_tried_with_the_timeout(
        monkeypatch: pytest.MonkeyPatch) -> None:
    tried: list[tuple[Any, float]] = []

    class Connection:
        def __enter__(self) -> Connection:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

    def connect(address: tuple[str, int], timeout: float) -> Connection:
        tried.append((address, timeout))
        if address[0] != "up":
            raise ConnectionRefusedError(f"refused by {address[0]}")
        return Connection()

    monkeypatch.setattr(code.socket, "create_connection", connect)
    probe_master("spark://down:7077, up:7078,never:1", 2.5)
    assert tried == [(("down", 7077), 2.5), (("up", 7078), 2.5)]
    tried.clear()
    with pytest.raises(SparkMasterUnreachable):
        probe_master("spark://fe80::1:7077", 1.0)  # the port is after the last colon
    assert tried == [(("fe80::1", 7077), 1.0)]
    tried.clear()
    with pytest.raises(SparkMasterUnreachable) as err:
        probe_master("spark://a:1,b:2", 0.5)
    assert str(err.value) == "the Spark master spark://a:1,b:2 is unreachable (a:1: refused by a; " \
                             "b:2: refused by b)"
    assert tried == [(("a", 1), 0.5), (("b", 2), 0.5)]
    for url, hostport in (("spark://h", "h"), ("spark://:7077", ":7077"), ("spark://h:x", "h:x"),
                          ("spark://a:1,b", "b")):
        with pytest.raises(SettingError) as bad:
            probe_master(url, 1.0)
        assert str(bad.value) == f"spark.master: {url!r}: {hostport!r} is not host:port"


# --- Arrow ---------------------------------------------------------------------------------
def test_rows_become_one_typed_column_per_field() -> None:
    table = rows_to_arrow(["word", "count"], [("a", 1), ["b", 2]])
    assert table.column_names == ["word", "count"]
    assert table.to_pydict() == {"word": ["a", "b"], "count": [1, 2]}
    assert table.schema.field("count").type == pa.int64()
    empty = rows_to_arrow(["word", "count"], [])
    assert empty.column_names == ["word", "count"] and empty.num_rows == 0


def test_a_batch_that_cannot_become_arrow_names_the_field() -> None:
    with pytest.raises(BatchConversionError) as err:
        rows_to_arrow(["word"], [("a", 1)])
    assert str(err.value) == "batch rows have 2 values, fields are ['word']"
    for rows in ([("a", 1), ("b", "two")], [("a", 2**70)]):
        with pytest.raises(BatchConversionError) as err:
            rows_to_arrow(["word", "count"], rows)
        text = str(err.value)
        assert text.startswith("field 'count': cannot convert the batch's values to Arrow (")
        assert text.endswith("); declare a schema or emit uniform types")
        assert err.value.__cause__ is not None


class FakeSpark:
    def __init__(self) -> None:
        self.frames: list[tuple[Any, Any]] = []

    def createDataFrame(self, data: Any, schema: Any = None) -> str:  # noqa: N802 - Spark's name
        self.frames.append((data, schema))
        return "frame"


def test_the_table_goes_to_spark_in_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    spark = FakeSpark()
    table = rows_to_arrow(["w"], [("a",)])
    monkeypatch.setattr(pyspark, "__version__", "4.0.1")
    assert arrow_to_dataframe(spark, table, "w string") == "frame"  # type: ignore[arg-type]
    assert spark.frames == [(table, "w string")]
    assert batch_dataframe(spark, ["w"], [("b",)]) == "frame"  # type: ignore[arg-type]
    assert spark.frames[1][0].to_pydict() == {"w": ["b"]} and spark.frames[1][1] is None
    batch_dataframe(spark, ["w"], [("c",)], "w string")  # type: ignore[arg-type]
    assert spark.frames.pop()[1] == "w string"
    monkeypatch.setattr(pyspark, "__version__", "3.5.3")  # takes pandas
    arrow_to_dataframe(spark, table, "w string")  # type: ignore[arg-type]
    frame, schema = spark.frames[2]
    assert type(frame).__name__ == "DataFrame" and list(frame["w"]) == ["a"]
    assert schema == "w string"


class Frame:
    schema = "w string"

    def collect(self) -> list[tuple[str]]:
        return [("a",), ("b",)]


def test_what_process_batch_returns_becomes_rows() -> None:
    assert result_rows(None) == []
    assert result_rows(Frame()) == [["a"], ["b"]]
    assert result_rows([("a", 1), ["b", 2]]) == [["a", 1], ["b", 2]]
    assert result_rows(iter([(1,)])) == [[1]]
    assert result_rows([]) == []

    class Collects:  # has collect but no schema: not a DataFrame, an iterable of rows
        def collect(self) -> list[Any]:
            raise AssertionError("not called")

        def __iter__(self) -> Any:
            return iter([(1,)])

    assert result_rows(Collects()) == [[1]]
    for bad, kind in (("rows", "str"), (b"rows", "bytes"), (5, "int")):
        with pytest.raises(TypeError) as err:
            result_rows(bad)
        assert str(err.value) == ("process_batch must return None, a DataFrame or an iterable of "
                                  f"rows, got {kind}")
    for row in ("ab", b"ab", 7):
        with pytest.raises(TypeError) as err:
            result_rows([(1,), row])
        assert str(err.value) == f"each result row must be a list/tuple of values, got {row!r}"
    with pytest.raises(TypeError) as err:
        result_rows(["x" * 200])
    assert str(err.value) == "each result row must be a list/tuple of values, got " + \
        repr("x" * 200)[:80]
