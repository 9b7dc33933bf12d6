"""The bench's two word-count workloads as Bytewax dataflows, written the way Bytewax's docs write
them: a partitioned source handing out batches, ``flat_map`` to split, then

- ``final``: ``count_final`` (one count per distinct word, emitted when the input ends), into a
  sink that counts what it is given;
- ``running``: ``key_on`` + ``stateful_map`` emitting the running ``(word, count)`` for every word,
  into the same counting sink (every pair reaches it).

The source has one partition per Bytewax process (``parts``): partition ``i`` holds sentences
``i, i + parts, ...``, as a stormpy spout task's share. It reads them in batches of
``SOURCE_BATCH`` (the batch size of Bytewax's Kafka source). For runs across processes
(``python -m bytewax.run 'bench.bytewax_flows:flow(...)' -i K -a ...``) each partition and each
sink partition write their first and last item times (and the process's CPU time then) under
``report_dir``, so the run is timed from the first sentence read to the last item written, as the
stormpy cluster runs are.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from bytewax import operators as op
from bytewax.dataflow import Dataflow
from bytewax.inputs import FixedPartitionedSource, StatefulSourcePartition
from bytewax.outputs import DynamicSink, StatelessSinkPartition

#: sentences per source batch (bytewax.connectors.kafka's default batch_size)
SOURCE_BATCH = 1000


def _sentences(n: int) -> tuple[str, ...]:
    import sys
    from pathlib import Path

    topologies = str(Path(__file__).resolve().parent / "topologies")
    if topologies not in sys.path:
        sys.path.insert(0, topologies)
    from bench_workload import sentences

    return sentences(n)


def _write(report_dir: str | None, name: str, doc: dict[str, Any]) -> None:
    if report_dir is None:
        return
    path = os.path.join(report_dir, name)
    with open(f"{path}.tmp", "w") as f:
        json.dump(doc, f)
    os.replace(f"{path}.tmp", path)


class _Part(StatefulSourcePartition[str, int]):
    def __init__(self, lines: tuple[str, ...], index: int, parts: int, report_dir: str | None):
        self.lines = lines[index::parts]
        self.pos = 0
        self.index = index
        self.report_dir = report_dir

    def next_batch(self) -> list[str]:
        if self.pos >= len(self.lines):
            raise StopIteration
        if self.pos == 0:
            _write(self.report_dir, f"bw-source-{self.index}.json",
                   {"first": time.time(), "cpu": time.process_time(), "pid": os.getpid()})
        batch = list(self.lines[self.pos:self.pos + SOURCE_BATCH])
        self.pos += len(batch)
        return batch

    def snapshot(self) -> int:
        return self.pos


class SentenceSource(FixedPartitionedSource[str, int]):
    """``parts`` partitions over ``n`` bench sentences."""

    def __init__(self, n: int, parts: int, report_dir: str | None = None) -> None:
        self.n = n
        self.parts = parts
        self.report_dir = report_dir

    def list_parts(self) -> list[str]:
        return [str(i) for i in range(self.parts)]

    def build_part(self, step_id: str, for_part: str, resume_state: int | None) -> _Part:
        return _Part(_sentences(self.n), int(for_part), self.parts, self.report_dir)


class _CountingPart(StatelessSinkPartition[Any]):
    def __init__(self, sink: CountingSink, worker: int) -> None:
        self.sink = sink
        self.worker = worker
        self.items = 0
        self.last = 0.0

    def write_batch(self, items: list[Any]) -> None:
        self.items += len(items)
        self.sink.items += len(items)
        self.last = time.time()

    def close(self) -> None:  # called when the dataflow finishes its finite input
        _write(self.sink.report_dir, f"bw-sink-{self.worker}.json",
               {"items": self.items, "last": self.last, "cpu": time.process_time(),
                "pid": os.getpid()})


class CountingSink(DynamicSink[Any]):
    """Counts the items written to it (``items``, summed over this process's partitions)."""

    def __init__(self, report_dir: str | None = None) -> None:
        self.items = 0
        self.report_dir = report_dir

    def build(self, step_id: str, worker_index: int, worker_count: int) -> _CountingPart:
        return _CountingPart(self, worker_index)


def _running_count(state: int | None, _word: str) -> tuple[int, int]:
    state = (state or 0) + 1
    return state, state


def flow(workload: str, n: int, parts: int = 1, report_dir: str | None = None,
         sink: CountingSink | None = None) -> Dataflow:
    """The ``workload`` (``final`` or ``running``) dataflow over ``n`` sentences."""
    df = Dataflow(f"wordcount_{workload}")
    lines = op.input("inp", df, SentenceSource(n, parts, report_dir))
    words = op.flat_map("split", lines, str.split)
    if workload == "final":
        out = op.count_final("count", words, lambda w: w)
    elif workload == "running":
        out = op.stateful_map("count", op.key_on("key", words, lambda w: w), _running_count)
    else:
        raise ValueError(f"unknown workload {workload!r} (final or running)")
    op.output("out", out, sink if sink is not None else CountingSink(report_dir))
    return df
