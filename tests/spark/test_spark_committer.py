"""SparkCommitterBolt in a transactional topology (local mode, in-memory coordinator state): every
record lands in Parquet exactly once, also when a commit fails after its write and is replayed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stormpy.testing import LocalCluster
from stormpy.transactional import MemoryTransactionalSpout, TransactionalTopologyBuilder
from transactional_kit import FlakySparkCommitter, events, new_log

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]


def test_each_record_is_written_to_parquet_once(spark: Any, tmp_path: Path) -> None:
    import pyarrow.dataset as ds

    log = new_log()
    n = 180
    data = [[[i, f"w{i % 7}"] for i in range(p, n, 3)] for p in range(3)]
    spout = MemoryTransactionalSpout(data, ["n", "word"], 20)
    table = tmp_path / "table"
    b = TransactionalTopologyBuilder("spark-tx", "spout", spout, 2)
    b.set_bolt("parquet", FlakySparkCommitter, 2,
               kwargs={"path": str(table), "log": log, "fail_txid": 2}).shuffle_grouping("spout")
    batches = 3  # 60 rows per partition, 20 per batch
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("spark-tx", {"transactional.store": "memory",
                                                      "topology.max.spout.pending": 2},
                                         b.create_topology())

        def committed() -> int:
            return len({e[1] for e in events(log, "parquet")
                        if (table / f"txid={e[1]}").exists()})
        cluster.wait_for(lambda: committed() >= batches and
                         worker.stats().get("parquet", {}).get("emitted", 0) >= 2 * batches, 180,
                         "every batch written and committed")
        cluster.wait_until_quiet("spark-tx", 60)
        errors = [e["error"] for e in worker.errors.get("parquet", [])]
    rows = ds.dataset(str(table), format="parquet", partitioning="hive").to_table().to_pylist()
    assert sorted(r["n"] for r in rows) == list(range(n))  # every record, exactly once
    assert {r["txid"] for r in rows} == set(range(1, batches + 1))
    assert ("parquet", 2, False) in events(log, "parquet")  # the replayed commit skipped
    assert any("commit of 2 broke after writing" in e for e in errors)
    assert not list(table.glob("txid=*/.tmp-*"))
