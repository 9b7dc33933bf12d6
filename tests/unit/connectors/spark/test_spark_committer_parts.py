"""SparkCommitterBolt without a Spark session (a stand-in ``get_spark`` whose DataFrame writer
creates the part directory): its arguments checked, the columns taken from the input stream or
given, each batch's part written once under ``txid=<txid>/task=<task index>`` through a
temporary directory, stale attempts of the task cleaned, a replayed txid skipped, an empty batch
committed as an empty part, and ``[attempt, rows, written]`` emitted."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from stormpy.config import SettingError
from stormpy.connectors.spark import _committer as committer
from stormpy.connectors.spark._committer import SparkCommitterBolt
from stormpy.topology import Tuple
from stormpy.topology._fields import Fields
from stormpy.transactional import BatchOutputCollector, TransactionAttempt


class Writer:
    def __init__(self, spark: FakeSpark, frame: Any) -> None:
        self.spark, self.frame = spark, frame

    def mode(self, mode: str) -> Writer:
        self.spark.modes.append(mode)
        return self

    def parquet(self, path: str) -> None:
        self.spark.written.append(path)
        Path(path).mkdir()
        (Path(path) / "part-0.parquet").write_text(repr(self.frame.to_pydict()))


class Frame:
    def __init__(self, spark: FakeSpark, table: Any) -> None:
        self.write = Writer(spark, table)


class FakeSpark:
    """``createDataFrame`` records the Arrow table and the schema (PySpark 4 is installed)."""

    def __init__(self) -> None:
        self.frames: list[tuple[Any, Any]] = []
        self.modes: list[str] = []
        self.written: list[str] = []

    def createDataFrame(self, data: Any, schema: Any = None) -> Frame:  # noqa: N802 - Spark's name
        self.frames.append((data, schema))
        return Frame(self, data)


class Run:
    """One batch of one committer task: its collector's emits and deferred work."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, bolt: SparkCommitterBolt, txid: int = 7,
                 attempt: int = 1, task_index: int = 2) -> None:
        self.spark = FakeSpark()
        self.confs: list[Any] = []
        monkeypatch.setattr(committer, "get_spark", self._get_spark)
        self.emitted: list[tuple[list[Any], str]] = []
        self.deferred: list[tuple[Any, Any]] = []
        collector = BatchOutputCollector(lambda values, stream: self.emitted.append((values, stream))
                                         or [1], lambda *a: None, lambda e: None,
                                         lambda work, then: self.deferred.append((work, then)))

        class Context:
            pass

        context: Any = Context()
        context.task_index = task_index
        self.conf = {"spark.master": "local[1]"}
        self.attempt = TransactionAttempt(txid, attempt)
        self.bolt = bolt
        bolt.prepare(self.conf, context, collector, self.attempt)

    def _get_spark(self, conf: Any) -> FakeSpark:
        self.confs.append(conf)
        return self.spark

    def tuple(self, *values: Any, fields: list[str] | None = None) -> Tuple:
        return Tuple([self.attempt, *values], "default", 4, "words",
                     Fields(fields) if fields is not None else None)

    def finish(self) -> None:
        self.bolt.finish_batch()
        assert len(self.deferred) == 1
        work, then = self.deferred.pop()
        then(work())


def test_the_arguments_are_checked_and_kept() -> None:
    for bad in ("", None, 5):
        with pytest.raises(SettingError) as err:
            SparkCommitterBolt(bad)  # type: ignore[arg-type]
        assert str(err.value) == f"SparkCommitterBolt.path: must be a directory path, got {bad!r}"
    bolt = SparkCommitterBolt("/t", ("word", "n"), "word string, n long")
    assert (bolt.path, bolt.columns, bolt.schema) == (Path("/t"), ["word", "n"], "word string, n long")
    plain = SparkCommitterBolt("/t")
    assert plain.columns is None and plain.schema is None


def test_a_batch_is_written_once_under_its_txid_and_task(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    run = Run(monkeypatch, SparkCommitterBolt(str(tmp_path)))
    assert run.bolt.rows == [] and run.bolt.conf is run.conf and run.bolt.task_index == 2
    run.bolt.execute(run.tuple("a", 1, fields=["id", "word", "n"]))
    run.bolt.execute(run.tuple("b", 2, fields=["id", "word", "n"]))
    assert run.bolt.columns == ["word", "n"] and run.bolt.rows == [["a", 1], ["b", 2]]
    final = tmp_path / "txid=7" / "task=2"
    assert run.bolt.target() == final
    stale = tmp_path / "txid=7" / ".tmp-task=2-0"  # left by a crashed attempt of this task
    other = tmp_path / "txid=7" / ".tmp-task=3-0"  # another task's attempt: not this task's
    stale.mkdir(parents=True)
    other.mkdir()
    run.finish()
    assert run.confs == [run.conf]
    [(table, schema)] = run.spark.frames
    assert table.to_pydict() == {"word": ["a", "b"], "n": [1, 2]} and schema is None
    assert run.spark.modes == ["overwrite"]
    assert run.spark.written == [str(tmp_path / "txid=7" / ".tmp-task=2-1")]
    assert sorted(p.name for p in (tmp_path / "txid=7").iterdir()) == [".tmp-task=3-0", "task=2"]
    assert (final / "part-0.parquet").read_text() == repr({"word": ["a", "b"], "n": [1, 2]})
    assert run.emitted == [([[7, 1], 2, True], "default")]

    replay = Run(monkeypatch, SparkCommitterBolt(str(tmp_path)), attempt=2)
    replay.bolt.execute(replay.tuple("c", 3, fields=["id", "word", "n"]))
    replay.finish()
    assert replay.spark.frames == [] and replay.emitted == [([[7, 2], 1, False], "default")]
    assert (final / "part-0.parquet").read_text() == repr({"word": ["a", "b"], "n": [1, 2]})


def test_an_empty_batch_commits_an_empty_part_unless_a_schema_asks_spark(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    run = Run(monkeypatch, SparkCommitterBolt(str(tmp_path)), txid=3, task_index=0)
    run.finish()
    part = tmp_path / "txid=3" / "task=0"
    assert part.is_dir() and list(part.iterdir()) == [] and run.spark.frames == []
    assert run.emitted == [([[3, 1], 0, True], "default")]
    typed = Run(monkeypatch, SparkCommitterBolt(str(tmp_path), ["word"], "word string"), txid=4)
    typed.finish()
    [(table, schema)] = typed.spark.frames
    assert table.column_names == ["word"] and table.num_rows == 0 and schema == "word string"
    assert (tmp_path / "txid=4" / "task=2" / "part-0.parquet").is_file()
    untyped = Run(monkeypatch, SparkCommitterBolt(str(tmp_path), schema="x long"), txid=5)
    untyped.finish()  # no columns known and no rows: a table of no column
    assert untyped.spark.frames[0][0].column_names == []


def test_a_leftover_the_cleanup_cannot_remove_does_not_fail_the_commit(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    run = Run(monkeypatch, SparkCommitterBolt(str(tmp_path), ["word"]), txid=8, task_index=1)
    run.bolt.execute(run.tuple("a"))
    leftover = tmp_path / "txid=8" / ".tmp-task=1-0"
    leftover.parent.mkdir()
    leftover.write_text("not a directory")  # rmtree refuses it
    run.finish()
    assert run.emitted == [([[8, 1], 1, True], "default")]
    assert (tmp_path / "txid=8" / "task=1" / "part-0.parquet").is_file()


def test_tuples_that_do_not_fit_the_columns_are_refused_naming_their_source(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    run = Run(monkeypatch, SparkCommitterBolt(str(tmp_path)))
    with pytest.raises(ValueError) as err:
        run.bolt.execute(run.tuple("a"))
    assert str(err.value) == ("tuple from words/default has no declared fields; give "
                              "SparkCommitterBolt its columns")
    given = Run(monkeypatch, SparkCommitterBolt(str(tmp_path), ["word", "n"]))
    given.bolt.execute(given.tuple("a", 1))  # given columns: no fields needed
    with pytest.raises(ValueError) as err:
        given.bolt.execute(given.tuple("a", 1, 2, fields=["id", "word", "n", "x"]))
    assert str(err.value) == ("tuple from words/default has 3 values after the attempt, columns "
                              "are ['word', 'n']")
    assert given.bolt.rows == [["a", 1]]


def finishes_while_held(run: Run, lock: Any) -> bool:
    """Whether ``run``'s commit completes while ``lock`` is held by another thread's writer."""
    done = threading.Event()
    worker = threading.Thread(target=lambda: (run.finish(), done.set()), daemon=True)
    with lock:
        worker.start()
        finished = done.wait(20.0)  # ms when the writer does not wait for this lock
    worker.join(20.0)
    return finished


def test_each_table_and_task_has_its_own_lock(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    a = Run(monkeypatch, SparkCommitterBolt(str(tmp_path / "a")), task_index=0)
    b = Run(monkeypatch, SparkCommitterBolt(str(tmp_path / "a")), task_index=1)
    locks = SparkCommitterBolt._locks
    other_task = locks.setdefault((tmp_path / "a", 1), threading.Lock())
    assert finishes_while_held(a, other_task)  # another task of the table writing: no wait
    other_table = locks.setdefault((tmp_path / "b", 1), threading.Lock())
    assert finishes_while_held(b, other_table)  # the same task of another table: no wait
    assert [r.emitted[0][0][2] for r in (a, b)] == [True, True]
    assert locks[(tmp_path / "a", 0)] is not other_task
