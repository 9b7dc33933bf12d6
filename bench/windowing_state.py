"""``python -m bench.windowing_state``: windows and state, each against its peer in the same run.

1. A keyed event-time sliding window (length 10 s, slide 1 s, generated timestamps) summing
   values per key: a plain Python loop (the ceiling), Bytewax's ``fold_window`` with an
   ``EventClock`` and a ``SlidingWindower`` (as its docs show), and a stormpy ``WindowedBolt`` in
   local mode (one worker, acking off like Bytewax; then with acking on). Every side produces
   the same ``(key, window end, sum)`` rows, which are checked equal before timing.
2. The bench word count, plain acked against the same with a ``StatefulBolt`` counting into a
   checkpointed KeyValueState (memory provider, Storm's default 1 s checkpoint interval).
3. The memory a window holds for 1M tuples.

Best of N, interleaved (A B C, A B C, ...); writes bench/results/windowing_state.json.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

TOPOLOGIES = Path(__file__).resolve().parent / "topologies"
if str(TOPOLOGIES) not in sys.path:
    sys.path.insert(0, str(TOPOLOGIES))

from bench_windowing import build_stateful, build_window, events  # noqa: E402
from bench_workload import sentences  # noqa: E402

from bench import runners  # noqa: E402
from stormpy.testing import LocalCluster  # noqa: E402
from stormpy.testing import _registry as registry  # noqa: E402
from stormpy.topology._tuple import Tuple  # noqa: E402
from stormpy.windowing import Duration, WindowConfig, WindowManager  # noqa: E402

RESULTS = Path(__file__).parent / "results"
Rows = set[tuple[str, int, int]]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def plain_sliding_sum(rows: list[tuple[str, int, int]]) -> tuple[Rows, float]:
    """Each event added to the 10 windows that hold it, per key."""
    t0 = time.perf_counter()
    acc: dict[tuple[str, int], int] = {}
    for k, v, ts in rows:
        first = -(-ts // 1000) * 1000  # smallest window end >= ts
        for end in range(first, first + 10_000, 1000):
            acc[(k, end)] = acc.get((k, end), 0) + v
    out = {(k, end, s) for (k, end), s in acc.items()}
    return out, time.perf_counter() - t0


def bytewax_sliding_sum(rows: list[tuple[str, int, int]], meta: bool = False
                        ) -> tuple[Rows, float]:
    import bytewax.operators as op
    from bytewax.dataflow import Dataflow
    from bytewax.operators.windowing import EventClock, SlidingWindower, fold_window
    from bytewax.testing import TestingSink, TestingSource, run_main

    items = [(k, v, EPOCH + timedelta(milliseconds=ts)) for k, v, ts in rows]
    down: list[tuple[str, tuple[int, int]]] = []
    metas: list[Any] = []
    flow = Dataflow("sliding_sum")
    inp = op.input("inp", flow, TestingSource(items, batch_size=256))
    keyed = op.key_on("key", inp, lambda e: e[0])
    # the clock's watermark also advances with system time; 10 s of it keeps an in-order event
    # from ever being late after a pause (the run ends by end of input, which closes every window)
    clock = EventClock(lambda e: e[2], wait_for_system_duration=timedelta(seconds=10))
    windower = SlidingWindower(length=timedelta(seconds=10), offset=timedelta(seconds=1),
                               align_to=EPOCH)
    win = fold_window("sum", keyed, clock, windower, builder=lambda: 0,
                      folder=lambda acc, e: acc + e[1], merger=lambda a, b: a + b)
    op.output("out", win.down, TestingSink(down))
    late: list[Any] = []
    if meta:
        op.output("meta", win.meta, TestingSink(metas))
        op.output("late", win.late, TestingSink(late))
    t0 = time.perf_counter()
    run_main(flow)
    elapsed = time.perf_counter() - t0
    if meta:  # no event late, and the window id → close time mapping used below, checked
        assert not late, f"{len(late)} late events"
        for _k, (wid, m) in metas:
            assert int((m.close_time - EPOCH).total_seconds() * 1000) == wid * 1000 + 10_000
    return {(k, wid * 1000 + 10_000, s) for k, (wid, s) in down}, elapsed


def stormpy_sliding_sum(rows: list[tuple[str, int, int]], expected: int, acking: bool,
                        anchor: str = "window") -> tuple[Rows, float]:
    out: list[tuple[str, int, int]] = []
    key = registry.register({"events": rows, "out": out})
    conf = {"topology.acker.executors": 1 if acking else 0,
            "topology.max.spout.pending": 20_000 if acking else None,
            "topology.message.timeout.secs": 60}
    try:
        with LocalCluster() as lc:
            t0 = time.perf_counter()
            worker = lc.submit_topology("win", conf, build_window(key, reliable=acking,
                                                                anchor=anchor))
            while len(out) < expected:
                if worker.failure is not None:
                    raise worker.failure
                time.sleep(0.005)
            elapsed = time.perf_counter() - t0
    finally:
        registry.unregister(key)
    return set(out), elapsed


def stateful_wordcount(n: int, max_pending: int) -> tuple[int, float]:
    words = sum(len(s.split()) for s in sentences(n))
    conf = {"topology.acker.executors": 1, "topology.max.spout.pending": max_pending}
    with LocalCluster() as lc:
        t0 = time.perf_counter()
        worker = lc.submit_topology("swc", conf, build_stateful(n))
        while worker.stats()["sentences"]["acked"] < n:
            if worker.failure is not None:
                raise worker.failure
            time.sleep(0.02)
        elapsed = time.perf_counter() - t0
    return words, elapsed


def window_memory(n: int) -> float:
    """Bytes per tuple held by a duration window of ``n`` tuples (tuples of 3 values included)."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    m = WindowManager(WindowConfig.sliding(Duration(seconds=3600), Duration(seconds=1))
                      .with_(timestamp_field="ts").validate())
    for i in range(n):
        m.add(Tuple([f"k{i % 100}", i % 100, i], "default", 1, "events", None), i)
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert len(m) == n
    return used / n


def best(runs: dict[str, Callable[[], tuple[Any, float]]], repeat: int) -> dict[str, float]:
    secs: dict[str, float] = {}
    for _ in range(repeat):
        for name, run in runs.items():
            _, elapsed = run()
            secs[name] = min(secs.get(name, float("inf")), elapsed)
    return secs


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.windowing_state", description=__doc__)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--sentences", type=int, default=30_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--anchored-events", type=int, default=10_000,
                        help="events for the run with Storm's whole-window anchoring")
    parser.add_argument("--memory-tuples", type=int, default=1_000_000)
    parser.add_argument("--output", type=Path, default=RESULTS / "windowing_state.json")
    args = parser.parse_args()
    results: dict[str, Any] = {"events": args.events, "keys": args.keys}

    rows = events(args.events, args.keys)
    check = events(5000, 7)
    want, _ = plain_sliding_sum(check)
    assert bytewax_sliding_sum(check, meta=True)[0] == want, "bytewax rows differ"
    assert stormpy_sliding_sum(check, len(want), False)[0] == want, "stormpy rows differ"
    # Storm's default anchoring (every emit to the whole window) with acking on, on a small input
    small = events(args.anchored_events, args.keys)
    small_rows, _ = plain_sliding_sum(small)
    got, anchored_secs = stormpy_sliding_sum(small, len(small_rows), True, "window")
    assert got == small_rows
    results["window_anchored_acking"] = {"events": len(small),
                                         "events_per_sec": round(len(small) / anchored_secs)}
    expected, _ = plain_sliding_sum(rows)
    window_runs: dict[str, Callable[[], tuple[Any, float]]] = {
        "plain python loop": lambda: plain_sliding_sum(rows),
        "bytewax fold_window (1 worker)": lambda: bytewax_sliding_sum(rows),
        "stormpy WindowedBolt (local, acking off)":
            lambda: stormpy_sliding_sum(rows, len(expected), False),
        "stormpy WindowedBolt (local, acking on, emits anchored to new tuples)":
            lambda: stormpy_sliding_sum(rows, len(expected), True, "new"),
    }
    secs = best(window_runs, args.repeat)
    window = {name: {"seconds": round(s, 3), "events_per_sec": round(args.events / s)}
              for name, s in secs.items()}
    ratio = secs["bytewax fold_window (1 worker)"] / secs["stormpy WindowedBolt (local, acking off)"]
    results["sliding_window"] = {"rows": len(expected), "runs": window,
                                 "stormpy_vs_bytewax": round(ratio, 2)}

    n = args.sentences
    state_runs: dict[str, Callable[[], tuple[Any, float]]] = {
        "plain acked word count": lambda: runners.stormpy_local(n, "final", acking=True,
                                                                max_pending=20_000),
        "stateful word count": lambda: stateful_wordcount(n, max_pending=20_000),
    }
    words = sum(len(s.split()) for s in sentences(n))
    secs = best(state_runs, args.repeat)
    results["stateful_wordcount"] = {
        "words": words,
        "runs": {name: {"seconds": round(s, 3), "words_per_sec": round(words / s)}
                 for name, s in secs.items()},
        "stateful_vs_plain": round(secs["plain acked word count"] / secs["stateful word count"], 2)}
    per = window_memory(args.memory_tuples)
    results["window_memory"] = {"tuples": args.memory_tuples, "bytes_per_tuple": round(per),
                                "mib_total": round(per * args.memory_tuples / 2**20)}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
