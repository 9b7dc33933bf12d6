"""The bench word count as a transactional topology (shipped in the bench bundle).

Transactions of ``batch_size`` sentences; split per tuple, words counted by a committer (fields
grouping on the word) that applies each batch's counts to the task's totals once per txid.
Reports under ``report_dir``:
- ``emit-<task>.json``: txid → time its batch was first emitted by this emitter task;
- ``txcount-<task>.json``: words applied, time of the first word, and txid → commit time.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

from bench_workload import sentences

from stormpy import BasicBolt, TopologyContext, Tuple
from stormpy.topology._spec import TopologySpec
from stormpy.transactional import (
    BatchOutputCollector,
    Committer,
    TransactionalSpout,
    TransactionalTopologyBuilder,
    TransactionAttempt,
)

#: per task: word totals and the last applied txid (the committer instance is per batch)
_TOTALS: dict[int, dict[str, Any]] = {}


def _write(path: str, doc: dict[str, Any]) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, path)


class TxSentenceSpout(TransactionalSpout):
    outputs = ["tx", "sentence"]

    def __init__(self, count: int, batch_size: int, report_dir: str | None = None) -> None:
        self.count = count
        self.batch_size = batch_size
        self.report_dir = report_dir

    def get_coordinator(self, conf: Mapping[str, Any], context: TopologyContext) -> Any:
        return TxCoordinator(self.count, self.batch_size)

    def get_emitter(self, conf: Mapping[str, Any], context: TopologyContext) -> Any:
        return TxEmitter(self.count, self.report_dir, context)


class TxCoordinator(TransactionalSpout.Coordinator):
    def __init__(self, count: int, batch_size: int) -> None:
        self.batch_size = batch_size
        self.count = count
        self.left = -(-count // batch_size)

    def is_ready(self) -> bool:
        self.left -= 1
        return self.left >= 0

    def initialize_transaction(self, txid: int, prev_metadata: Any) -> Any:
        start = (txid - 1) * self.batch_size
        return [min(start, self.count), min(start + self.batch_size, self.count)]


class TxEmitter(TransactionalSpout.Emitter):
    def __init__(self, count: int, report_dir: str | None, context: TopologyContext) -> None:
        self.lines = sentences(count)
        self.index = context.task_index
        self.tasks = len(context.component_tasks)
        self.task = context.task_id
        self.report_dir = report_dir
        self.emitted: dict[int, float] = {}

    def emit_batch(self, attempt: TransactionAttempt, metadata: Any,
                   collector: BatchOutputCollector) -> None:
        self.emitted.setdefault(attempt.transaction_id, time.time())
        lines = self.lines
        emit = collector.emit
        for i in range(metadata[0] + self.index, metadata[1], self.tasks):
            emit([attempt, lines[i]])
        if self.report_dir is not None:
            _write(os.path.join(self.report_dir, f"emit-{self.task}.json"), self.emitted)


class TxSplit(BasicBolt):
    outputs = ["id", "word"]

    def process(self, tup: Tuple) -> None:
        attempt = tup.values[0]
        emit = self.emit
        for word in tup.values[1].split():
            emit([attempt, word])


class TxCount(Committer):
    outputs = ["id", "words"]

    def __init__(self, report_dir: str | None = None) -> None:
        self.report_dir = report_dir

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: BatchOutputCollector, id: TransactionAttempt) -> None:  # noqa: A002
        super().prepare(conf, context, collector, id)
        self.task = context.task_id
        self.counts: Counter[str] = Counter()
        self.totals = _TOTALS.setdefault(self.task, {"counts": Counter(), "txid": 0, "words": 0,
                                                     "first": None, "commits": {}})

    def execute(self, tup: Tuple) -> None:
        if self.totals["first"] is None:
            self.totals["first"] = time.time()
        self.counts[tup.values[1]] += 1

    def finish_batch(self) -> None:
        totals = self.totals
        txid = self.id.transaction_id
        if totals["txid"] != txid:
            totals["counts"].update(self.counts)
            totals["words"] += sum(self.counts.values())
            totals["txid"] = txid
            totals["commits"][txid] = time.time()
        if self.report_dir is not None:
            _write(os.path.join(self.report_dir, f"txcount-{self.task}.json"),
                   {"count": totals["words"], "first": totals["first"],
                    "commits": totals["commits"]})
        self.emit([self.id, totals["words"]])


def build(count: int, batch_size: int, *, split: int = 2, counters: int = 2,
          report_dir: str | None = None) -> TopologySpec:
    b = TransactionalTopologyBuilder("bench-tx", "sentences", TxSentenceSpout, 1, kwargs={
        "count": count, "batch_size": batch_size, "report_dir": report_dir})
    b.set_bolt("split", TxSplit, split).shuffle_grouping("sentences")
    b.set_bolt("count", TxCount, counters, kwargs={"report_dir": report_dir}) \
        .fields_grouping("split", ["word"])
    return b.create_topology()
