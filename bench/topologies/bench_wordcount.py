"""Benchmark topologies (shipped as a bundle to cluster workers, so self-contained).

Components report their own timing to files under ``report_dir`` (tuple-level timestamps; a
heartbeat every second would be far too coarse to time a run):
- ``spout-<task>.json``: first emit time, last ack time, acked count, complete-latency samples;
- ``count-<task>.json``: words counted, time of the first and the last word.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

from bench_workload import sentences

from stormpy import Bolt, Spout, TopologyBuilder, TopologyContext, Tuple


def _write(path: str, doc: dict[str, Any]) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, path)


class BenchSentenceSpout(Spout):
    """Emits this task's share of ``count`` sentences; with ``reliable`` each has a message id
    and failed ones are replayed. With ``rate`` > 0 emits at that many tuples/s (per task) and
    records the complete latency of every tuple (emit → ack), keeping those emitted in the first
    ``warmup_secs`` (workers still connecting to each other) apart."""

    outputs = ["sentence"]

    def __init__(self, count: int, reliable: bool, rate: float = 0.0,
                 report_dir: str | None = None, warmup_secs: float = 1.0) -> None:
        self.warmup_secs = warmup_secs
        self.count = count
        self.reliable = reliable
        self.rate = rate
        self.report_dir = report_dir

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        n, idx = len(context.component_tasks), context.task_index
        self.lines = sentences(self.count)
        self.ids = iter(range(idx, self.count, n))
        self.share = len(range(idx, self.count, n))
        self.replay: list[int] = []
        self.task = context.task_id
        self.first_emit: float | None = None
        self.last_ack: float | None = None
        self.acked = 0
        self.failed = 0
        self.emitted_at: dict[int, float] = {}
        self.latencies: list[float] = []
        self.warmup_latencies: list[float] = []
        self.interval = 1.0 / self.rate if self.rate > 0 else 0.0
        self.next_due = 0.0
        self.reported = False

    def next_tuple(self) -> None:
        now = time.time()
        if self.interval:
            if now < self.next_due:
                return
            self.next_due = max(self.next_due + self.interval, now - 0.05)
        i = self.replay.pop() if self.replay else next(self.ids, None)
        if i is None:
            self._report()
            return
        if self.first_emit is None:
            self.first_emit = now
        if self.rate > 0:
            self.emitted_at[i] = now
        self.emit([self.lines[i]], msg_id=i if self.reliable else None)

    def ack(self, msg_id: int) -> None:
        self.acked += 1
        self.last_ack = time.time()
        start = self.emitted_at.pop(msg_id, None)
        if start is not None:
            warm = self.first_emit is not None and start - self.first_emit >= self.warmup_secs
            (self.latencies if warm else self.warmup_latencies).append(self.last_ack - start)

    def fail(self, msg_id: int) -> None:
        self.failed += 1
        self.replay.append(msg_id)

    def _report(self) -> None:
        if self.report_dir is None or self.reported:
            return
        if self.reliable and self.acked < self.share:
            return
        self.reported = True
        _write(os.path.join(self.report_dir, f"spout-{self.task}.json"),
               {"first_emit": self.first_emit, "last_ack": self.last_ack, "acked": self.acked,
                "failed": self.failed, "latencies": self.latencies,
                "warmup_latencies": self.warmup_latencies})


class BenchSplit(Bolt):
    outputs = ["word"]

    def execute(self, tup: Tuple) -> None:
        emit = self.emit
        for word in tup.values[0].split():
            emit([word], tup)
        self.ack(tup)


class BenchCount(Bolt):
    """Counts words; with ``report_dir`` writes its progress on every tick."""

    outputs = ["word", "count"]
    component_config = {"topology.tick.tuple.freq.secs": 0.2}

    def __init__(self, report_dir: str | None = None) -> None:
        self.report_dir = report_dir

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.counts: Counter[str] = Counter()
        self.n = 0
        self.first: float | None = None
        self.last: float | None = None
        self.task = context.task_id

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            if self.report_dir is not None:
                _write(os.path.join(self.report_dir, f"count-{self.task}.json"),
                       {"count": self.n, "first": self.first, "last": self.last})
            return
        self.counts[tup.values[0]] += 1
        self.n += 1
        if self.report_dir is not None:
            self.last = time.time()
            if self.first is None:
                self.first = self.last
        self.ack(tup)


def build(count: int, reliable: bool, *, split: int = 1, counters: int = 1, spouts: int = 1,
          rate: float = 0.0, report_dir: str | None = None):
    """The bench word count: sentences → split (shuffle) → count (fields on word)."""
    b = TopologyBuilder()
    b.set_spout("sentences", BenchSentenceSpout, spouts,
                kwargs={"count": count, "reliable": reliable, "rate": rate,
                        "report_dir": report_dir})
    b.set_bolt("split", BenchSplit, split).shuffle_grouping("sentences")
    b.set_bolt("count", BenchCount, counters, kwargs={"report_dir": report_dir}) \
        .fields_grouping("split", ["word"])
    return b.create_topology()
