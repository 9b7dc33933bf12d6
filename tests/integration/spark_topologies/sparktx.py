"""A transactional topology whose committer is a SparkCommitterBolt (cluster tests, run on a
standalone Spark cluster by ``test_spark_standalone.py``).

``numbers`` (a MemoryTransactionalSpout over three partitions of ``(n, word)`` records, ``take``
per partition per transaction) feeds ``parquet`` (``OnceFlakyCommitter``, two tasks): each
transaction's records are written to ``<table>/txid=<txid>/task=<task>`` exactly once. The
first commit of ``fail_txid`` on each task fails after its Parquet write (so the replayed commit
finds the txid written and skips it). Every commit's outcome is logged to
``<marks>/commits.txt``: ``<txid> <task index> <written: 1|0>``.
"""

from __future__ import annotations

from pathlib import Path

from stormpy.connectors.spark import SparkCommitterBolt
from stormpy.topology._spec import TopologySpec
from stormpy.transactional import MemoryTransactionalSpout, TransactionalTopologyBuilder


class OnceFlakyCommitter(SparkCommitterBolt):
    def __init__(self, path: str, marks: str, fail_txid: int) -> None:
        super().__init__(path, schema="n long, word string")
        self.marks = marks
        self.fail_txid = fail_txid

    def written(self, written: bool) -> None:
        txid = self.id.transaction_id
        marks = Path(self.marks)
        with open(marks / "commits.txt", "a") as f:
            f.write(f"{txid} {self.task_index} {int(written)}\n")
        failed_once = marks / f"failed-{txid}-{self.task_index}"
        if txid == self.fail_txid and written and not failed_once.exists():
            failed_once.touch()
            raise RuntimeError(f"commit of {txid} broke after writing (on purpose)")
        super().written(written)


def records(n: int) -> list[list[list[object]]]:
    """The spout's three partitions of ``[n, word]`` records, 0 .. n-1."""
    return [[[i, f"w{i % 7}"] for i in range(p, n, 3)] for p in range(3)]


def build(table: str, marks: str, n: int, take: int, fail_txid: int = 2) -> TopologySpec:
    spout = MemoryTransactionalSpout(records(n), ["n", "word"], take)
    b = TransactionalTopologyBuilder("sparktx", "numbers", spout, 2)
    b.set_bolt("parquet", OnceFlakyCommitter, 2, kwargs={
        "path": table, "marks": marks, "fail_txid": fail_txid}).shuffle_grouping("numbers")
    return b.create_topology()


def commits(marks: Path) -> list[tuple[int, int, bool]]:
    path = marks / "commits.txt"
    if not path.exists():
        return []
    return [(int(p[0]), int(p[1]), p[2] == "1") for p in
            (line.split() for line in path.read_text().splitlines()) if len(p) == 3]
