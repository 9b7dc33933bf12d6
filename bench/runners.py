"""Runners: each processes the workload and returns (words, seconds)."""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

TOPOLOGIES = Path(__file__).resolve().parent / "topologies"
if str(TOPOLOGIES) not in sys.path:
    sys.path.insert(0, str(TOPOLOGIES))

from bench_wordcount import build  # noqa: E402
from bench_workload import sentences  # noqa: E402

from stormpy.testing import LocalCluster  # noqa: E402


def plain_loop(n: int) -> tuple[int, float]:
    """The ceiling: split and count in a Python loop, no framework."""
    lines = sentences(n)
    t0 = time.perf_counter()
    counts: Counter[str] = Counter()
    for line in lines:
        for word in line.split():
            counts[word] += 1
    return sum(counts.values()), time.perf_counter() - t0


def stormpy_local(n: int, acking: bool, max_pending: int = 5000) -> tuple[int, float]:
    """stormpy local mode (one worker, one executor loop); acking on = every sentence tracked."""
    words = sum(len(s.split()) for s in sentences(n))
    conf = {"topology.acker.executors": 1 if acking else 0,
            "topology.max.spout.pending": max_pending if acking else None}
    with LocalCluster() as cluster:
        t0 = time.perf_counter()
        worker = cluster.submit_topology("bench", conf, build(n, reliable=acking))

        def done() -> bool:
            stats = worker.stats()
            if acking:
                return stats["sentences"]["acked"] >= n
            return stats["count"]["acked"] >= words  # acked: tick tuples are executed too
        while not done():
            if worker.failure is not None:
                raise worker.failure
            time.sleep(0.02)
        elapsed = time.perf_counter() - t0
        stats = worker.stats()
    assert stats["count"]["acked"] == words, stats
    return words, elapsed


def bytewax(n: int) -> tuple[int, float]:
    """Bytewax (Rust core) running the same split-and-count in one worker."""
    import bytewax.operators as op
    from bytewax.dataflow import Dataflow
    from bytewax.testing import TestingSink, TestingSource, run_main

    lines = sentences(n)
    out: list[tuple[str, int]] = []
    flow = Dataflow("wordcount")
    inp = op.input("inp", flow, TestingSource(lines, batch_size=256))
    words = op.flat_map("split", inp, str.split)
    keyed = op.key_on("key", words, lambda w: w)

    def count(state: int | None, _word: str) -> tuple[int, int]:
        state = (state or 0) + 1
        return state, state

    counts = op.stateful_map("count", keyed, count)
    op.output("out", op.filter("drop", counts, lambda kv: False), TestingSink(out))
    t0 = time.perf_counter()
    run_main(flow)
    elapsed = time.perf_counter() - t0
    return sum(len(s.split()) for s in lines), elapsed
