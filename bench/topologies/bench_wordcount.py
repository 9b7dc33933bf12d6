"""Benchmark topologies (shipped as a bundle to cluster workers, so self-contained).

Two workloads, the same as the Bytewax dataflows of ``bench/bytewax_flows.py``:
- ``final``: sentences → split (shuffle) → count (fields on word); the count bolt keeps one
  counter per word and emits nothing per word (Bytewax: ``count_final``);
- ``running``: the count bolt emits ``[word, count]`` (anchored) for every word to a sink bolt
  (fields on word) that counts what it receives (Bytewax: ``stateful_map`` → sink).

Each bolt comes in the per-tuple form (``execute``) and, with ``batch=True``, the batch form
(``execute_batch`` with ``emit_many``/``ack_many``); both do the same work. With
``columns=True``, the columnar form: the split bolt emits the words of every sentence it got in a
round with ONE ``emit_many`` anchored to all those sentences, so the count bolt (``execute_columns``)
gets one ``ColumnBatch`` per round and counts its word column, and (``running``) emits the
``[word, count]`` pairs of a batch with one ``emit_many`` anchored to it to the sink
(``execute_columns``), which counts them. The work per word is the same; what differs is the
replay granularity with acking: a batch is one node of the tuple tree, so a failed batch fails
(and replays) every sentence of its round. In the columnar form the spout also emits its
sentences in batches of ``SPOUT_BATCH`` with ``emit_batch`` (one tuple tree per batch when
reliable; the split bolt gets them as one ``ColumnBatch``), as Bytewax's source hands its
operators batches of sentences; the replay unit is then the spout batch. ``columns="sentence"``
keeps the per-tuple forms' granularity instead: one sentence per spout emit and one
``emit_many`` (so one batch per count task) per sentence.

The last bolt reports its own timing to files under ``report_dir`` (tuple-level timestamps; a
heartbeat every second would be far too coarse to time a run):
- ``spout-<task>.json``: first emit time, last ack time, acked count, complete-latency samples;
- ``count-<task>.json``: words counted (or pairs received by the sink), first and last times.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from array import array
from collections.abc import Mapping
from typing import Any

from bench_workload import sentence_share, sentence_stream

from stormpy import Bolt, ColumnBatch, Spout, TopologyBuilder, TopologyContext, Tuple


def _write(path: str, doc: dict[str, Any]) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, path)


#: a complete latency over this (the p99 target) is reported with its emit time
SLOW_TUPLE_SECS = 0.005

#: sentences per spout ``emit_batch`` in the columnar form
SPOUT_BATCH = 100


class BenchSentenceSpout(Spout):
    """Emits this task's share of ``count`` sentences; with ``reliable`` each has a message id
    and failed ones are replayed. With ``rate`` > 0 emits at that many tuples/s (per task) and
    records the complete latency of every tuple (emit → ack), keeping those emitted in the first
    ``warmup_secs`` (workers still connecting to each other) apart."""

    outputs = ["sentence"]

    def __init__(self, count: int, reliable: bool, rate: float = 0.0,
                 report_dir: str | None = None, warmup_secs: float = 1.0,
                 batch_size: int = 1, start_barrier: bool = False) -> None:
        self.start_barrier = start_barrier
        self.warmup_secs = warmup_secs
        self.batch_size = batch_size
        self.count = count
        self.reliable = reliable
        self.rate = rate
        self.report_dir = report_dir

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        n, idx = len(context.component_tasks), context.task_index
        # this task's partition only: sentence i (its message id) is lines[i // n]. At a fixed
        # rate (the latency and memory run) the partition is generated as it is emitted and only
        # the sentences in flight are held (for replay), as a spout reading a log holds them.
        self.parts = n
        self.lines = None if self.rate > 0 else sentence_share(self.count, idx, n)
        self.stream = sentence_stream(self.count, idx, n)
        self.held: dict[int, str] = {}
        self.ids = iter(range(idx, self.count, n))
        self.share = len(range(idx, self.count, n))
        self.replay: list[int] = []
        self.task = context.task_id
        self.first_emit: float | None = None
        self.last_ack: float | None = None
        self.acked = 0
        self.failed = 0
        self.emitted_at: dict[int, float] = {}
        # complete latencies as doubles (8 bytes each, not a float object per tuple)
        self.latencies = array("d")
        self.warmup_latencies = array("d")
        #: emit time and latency of each tuple over SLOW_TUPLE_SECS, flat (the bench compares
        #: them with the machine probe's slowed windows)
        self.slow = array("d")
        self.interval = 1.0 / self.rate if self.rate > 0 else 0.0
        self.next_due = 0.0
        self.reported = False
        # with ``start_barrier`` (and a report_dir): say ready once the partition is built, and
        # emit nothing until the runner writes ``go`` (every spout task ready), so the spouts of
        # all workers start within a millisecond of each other, as Bytewax's processes start
        # reading together once connected: no worker's start-up (its activation, seen through
        # ZooKeeper, and this open) falls inside the clock.
        self.go: str | None = None
        if self.start_barrier and self.report_dir is not None:
            self.go = os.path.join(self.report_dir, "go")
            _write(os.path.join(self.report_dir, f"ready-{self.task}.json"), {})

    def next_tuple(self) -> None:
        if self.go is not None:
            if not os.path.exists(self.go):
                return
            self.go = None
        if self.batch_size > 1 and not self.interval:
            self._next_batch()
            return
        if self.interval:  # the clock is read only when paced (or for the first emit)
            now = time.time()
            if now < self.next_due:
                return
            self.next_due = max(self.next_due + self.interval, now - 0.05)
        i = self.replay.pop() if self.replay else next(self.ids, None)
        if i is None:
            self._report()
            return
        if self.first_emit is None:
            self.first_emit = time.time()
        if self.rate > 0:
            self.emitted_at[i] = now
        lines = self.lines
        line = lines[i // self.parts] if lines is not None else self._streamed(i)
        self.emit([line], msg_id=i if self.reliable else None)

    def _streamed(self, i: int) -> str:
        """Sentence ``i`` at a fixed rate: held while in flight, else the stream's next."""
        line = self.held.get(i)
        if line is None:  # a new id: the ids and the stream advance together
            line = next(self.stream)
            if self.reliable:
                self.held[i] = line
        return line

    def _next_batch(self) -> None:
        """Up to ``batch_size`` sentences (replays first) as one ``emit_batch``: one tuple tree
        for all of them when reliable, as a Bytewax source hands its operators a batch."""
        ids: list[int] = []
        while self.replay and len(ids) < self.batch_size:
            ids.append(self.replay.pop())
        ids.extend(itertools.islice(self.ids, self.batch_size - len(ids)))
        if not ids:
            self._report()
            return
        if self.first_emit is None:
            self.first_emit = time.time()
        lines, parts = self.lines, self.parts
        assert lines is not None  # batches are emitted flat out only
        self.emit_batch([[lines[i // parts]] for i in ids], ids if self.reliable else None)

    def ack(self, msg_id: int) -> None:
        self.acked += 1
        self.held.pop(msg_id, None)
        self.last_ack = time.time()
        start = self.emitted_at.pop(msg_id, None)
        if start is not None:
            warm = self.first_emit is not None and start - self.first_emit >= self.warmup_secs
            latency = self.last_ack - start
            (self.latencies if warm else self.warmup_latencies).append(latency)
            if warm and latency > SLOW_TUPLE_SECS:
                self.slow.extend((start, latency))

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
                "failed": self.failed, "latencies": self.latencies.tolist(),
                "warmup_latencies": self.warmup_latencies.tolist(),
                "slow": self.slow.tolist()})


class BenchSplit(Bolt):
    outputs = ["word"]

    def execute(self, tup: Tuple) -> None:
        emit = self.emit
        for word in tup.values[0].split():
            emit([word], tup)
        self.ack(tup)


class BenchSplitBatch(Bolt):
    """BenchSplit in the batch form."""

    outputs = ["word"]

    def execute_batch(self, tuples: list[Tuple]) -> None:
        emit_many = self.emit_many
        for tup in tuples:
            emit_many([[word] for word in tup.values[0].split()], tup)
        self.ack_many(tuples)


class BenchSplitColumns(Bolt):
    """BenchSplit in the columnar form: all the words of the round's sentences in one
    ``emit_many``, anchored to those sentences."""

    outputs = ["word"]

    def execute_batch(self, tuples: list[Tuple]) -> None:
        self.emit_many([[word] for tup in tuples for word in tup.values[0].split()], tuples)
        self.ack_many(tuples)

    def execute_columns(self, batch: ColumnBatch) -> None:
        """A spout batch of sentences: their words as one column (``emit_columns``: no list
        per word), anchored to it."""
        self.emit_columns([[word for line in batch.column(0) for word in line.split()]], batch)
        self.ack(batch)


class BenchSplitColumnsPerSentence(Bolt):
    """The columnar form with the per-tuple forms' replay granularity: one ``emit_many`` per
    sentence, anchored to it (a batch of that sentence's words per count task)."""

    outputs = ["word"]

    def execute_batch(self, tuples: list[Tuple]) -> None:
        emit_many = self.emit_many
        for tup in tuples:
            emit_many([[word] for word in tup.values[0].split()], tup)
        self.ack_many(tuples)


#: the per-tuple bolts read the clock on every STAMP_EVERY-th tuple (a power of two), as the
#: Bytewax sink reads it once per batch written: the last read is at most STAMP_EVERY - 1 tuples
#: (a few hundredths of a millisecond) before the last tuple, on runs of a few hundred
#: milliseconds or more; a clock read per word would cost the per-tuple rows ~60 ns a word
#: (a method call and ``time.time()``) that Bytewax's side does not pay
STAMP_EVERY = 64  # the bolts test ``n & 63`` (a literal: no global read per word)


class _Reporting(Bolt):
    """Counts what it processes (``n``) and, with ``report_dir``, stamps the first and last and
    writes them on every tick (the per-tuple forms stamp every :data:`STAMP_EVERY`-th tuple; a
    task that got fewer has its first and last stamped at its first tick)."""

    component_config = {"topology.tick.tuple.freq.secs": 0.2}

    def __init__(self, report_dir: str | None = None) -> None:
        self.report_dir = report_dir

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        # a plain dict: a Counter's item assignment takes CPython's slow path for dict
        # subclasses (~1.4k more instructions per word); the plain loop counts the same way
        self.counts: dict[str, int] = {}
        self.n = 0
        self.first: float | None = None
        self.last: float | None = None
        self.task = context.task_id

    def report(self) -> None:
        if self.report_dir is not None:
            if self.n and self.last is None:  # fewer than STAMP_EVERY tuples (tiny inputs only)
                self.stamp()
            _write(os.path.join(self.report_dir, f"count-{self.task}.json"),
                   {"count": self.n, "first": self.first, "last": self.last})

    def stamp(self) -> None:
        self.last = time.time()
        if self.first is None:
            self.first = self.last


class BenchCount(_Reporting):
    """Counts words; with ``emit`` emits ``[word, count]`` anchored to each word."""

    outputs = ["word", "count"]

    def __init__(self, report_dir: str | None = None, emit: bool = False) -> None:
        super().__init__(report_dir)
        self.emits = emit

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            self.report()
            return
        word = tup.values[0]
        counts = self.counts
        c = counts.get(word, 0) + 1
        counts[word] = c
        self.n += 1
        if self.emits:
            self.emit([word, c], tup)
        if self.report_dir is not None and not self.n & 63:  # every STAMP_EVERY-th
            self.stamp()
        self.ack(tup)


class BenchCountMetered(BenchCount):
    """BenchCount with a user counter (``context.register_counter``) incremented per word
    (``python -m bench.instructions --ops counter``): what one ``inc`` costs on the tuple path."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        super().prepare(conf, context)
        self.words = context.register_counter("words")

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            self.report()
            return
        word = tup.values[0]
        counts = self.counts
        c = counts.get(word, 0) + 1
        counts[word] = c
        self.n += 1
        self.words.inc()
        if self.emits:
            self.emit([word, c], tup)
        if self.report_dir is not None and not self.n & 63:  # every STAMP_EVERY-th
            self.stamp()
        self.ack(tup)


class BenchCountBatch(BenchCount):
    """BenchCount in the batch form."""

    def execute_batch(self, tuples: list[Tuple]) -> None:
        counts = self.counts
        n = 0
        if self.emits:
            emit = self.emit
            for tup in tuples:
                if tup.is_tick():
                    self.report()
                    continue
                word = tup.values[0]
                c = counts.get(word, 0) + 1
                counts[word] = c
                emit([word, c], tup)
                n += 1
        else:
            for tup in tuples:
                if tup.is_tick():
                    self.report()
                    continue
                word = tup.values[0]
                counts[word] = counts.get(word, 0) + 1
                n += 1
        self.n += n
        if self.report_dir is not None and n:
            self.stamp()
        self.ack_many(tuples)


class BenchCountColumns(BenchCount):
    """BenchCount in the columnar form: counts the word column of each batch (tick tuples and
    any single tuple come through ``execute``)."""

    def execute_columns(self, batch: ColumnBatch) -> None:
        counts = self.counts
        words = batch.column(0)
        if self.emits:
            running = []
            for word in words:
                c = counts.get(word, 0) + 1
                counts[word] = c
                running.append(c)
            self.emit_columns([words, running], batch)
        else:
            for word in words:
                counts[word] = counts.get(word, 0) + 1
        self.n += len(words)
        if self.report_dir is not None:
            self.stamp()
        self.ack(batch)


class BenchSink(_Reporting):
    """Receives the running counts and counts them (the Bytewax sink's work)."""

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            self.report()
            return
        self.n += 1
        if self.report_dir is not None and not self.n & 63:  # every STAMP_EVERY-th
            self.stamp()
        self.ack(tup)


class BenchSinkBatch(BenchSink):
    """BenchSink in the batch form."""

    def execute_batch(self, tuples: list[Tuple]) -> None:
        n = 0
        for tup in tuples:
            if tup.is_tick():
                self.report()
            else:
                n += 1
        self.n += n
        if self.report_dir is not None and n:
            self.stamp()
        self.ack_many(tuples)


class BenchSinkColumns(BenchSink):
    """BenchSink in the columnar form: counts the tuples of each batch."""

    def execute_columns(self, batch: ColumnBatch) -> None:
        self.n += len(batch)
        if self.report_dir is not None:
            self.stamp()
        self.ack(batch)


def build(count: int, reliable: bool, *, workload: str = "final", batch: bool = False,
          columns: bool | str = False, split: int = 1, counters: int = 1, spouts: int = 1, rate: float = 0.0,
          report_dir: str | None = None, local_split: bool = False, start_barrier: bool = False):
    """The bench word count: sentences → split (shuffle) → count (fields on word), and for the
    ``running`` workload → sink (fields on word). ``local_split``: sentences go to a split task
    of the spout task's own worker (local-or-shuffle grouping), as a Bytewax process splits the
    sentences of its own source partition; the same as shuffle in one worker. ``start_barrier``:
    the spouts wait for a ``go`` file in ``report_dir`` (see ``BenchSentenceSpout.open``)."""
    if workload not in ("final", "running"):
        raise ValueError(f"unknown workload {workload!r} (final or running)")
    running = workload == "running"
    b = TopologyBuilder()
    b.set_spout("sentences", BenchSentenceSpout, spouts,
                kwargs={"count": count, "reliable": reliable, "rate": rate,
                        "report_dir": report_dir, "start_barrier": start_barrier,
                        "batch_size": SPOUT_BATCH if columns is True else 1})
    splitter = b.set_bolt("split", BenchSplitColumnsPerSentence if columns == "sentence" else
                          BenchSplitColumns if columns else
                          BenchSplitBatch if batch else BenchSplit, split)
    if local_split:
        splitter.local_or_shuffle_grouping("sentences")
    else:
        splitter.shuffle_grouping("sentences")
    b.set_bolt("count", BenchCountColumns if columns else
               BenchCountBatch if batch else BenchCount, counters,
               kwargs={"report_dir": None if running else report_dir, "emit": running}) \
        .fields_grouping("split", ["word"])
    if running:
        b.set_bolt("sink", BenchSinkColumns if columns else
                   BenchSinkBatch if batch else BenchSink, counters,
                   kwargs={"report_dir": report_dir}).fields_grouping("count", ["word"])
    return b.create_topology()
