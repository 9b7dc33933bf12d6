"""``python -m bench.join``: a windowed stream join against a plain Python dict join doing the same
work, in the same run.

Workload: generated click and view events (half each) over ``--keys`` keys, 999 per second of
event time; both sides join clicks and views of equal key within 1 s tumbling event-time windows
and produce every ``(key, click id, view id)`` row. The plain side groups events by window,
hashes each window's views by key and probes them with its clicks (the hash join JoinBolt runs
per window, without a framework); the stormpy side is a ``JoinBolt`` in local mode (one worker,
one join executor, watermark interval 100 ms), with acking off and on (each row anchored to its
two events). Rows are checked equal on a small input before timing; timing runs from submit
until the sink has every row. Best of N, interleaved; writes bench/results/join.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TOPOLOGIES = Path(__file__).resolve().parent / "topologies"
if str(TOPOLOGIES) not in sys.path:
    sys.path.insert(0, str(TOPOLOGIES))

from bench_join import Event, build_join, events  # noqa: E402

from stormpy.testing import LocalCluster  # noqa: E402
from stormpy.testing import _registry as registry  # noqa: E402

RESULTS = Path(__file__).parent / "results"
Rows = list[tuple[str, int, int]]


def plain_join(rows: list[Event]) -> tuple[Rows, float]:
    """Per 1 s window: views hashed by key, clicks probing them."""
    t0 = time.perf_counter()
    windows: dict[int, tuple[list[Event], dict[str, list[int]]]] = {}
    for ev in rows:
        end = -(-ev[3] // 1000) * 1000
        clicks, views = windows.setdefault(end, ([], {}))
        if ev[0] == "clicks":
            clicks.append(ev)
        else:
            views.setdefault(ev[1], []).append(ev[2])
    out: Rows = []
    for end in sorted(windows):
        clicks, views = windows[end]
        for _s, key, ident, _ts in clicks:
            for view in views.get(key, ()):
                out.append((key, ident, view))
    return out, time.perf_counter() - t0


def stormpy_join(rows: list[Event], expected: int, acking: bool) -> tuple[Rows, float]:
    out: Rows = []
    key = registry.register({"events": rows, "out": out})
    conf = {"topology.acker.executors": 1 if acking else 0,
            "topology.max.spout.pending": 20_000 if acking else None,
            "topology.message.timeout.secs": 60}
    try:
        with LocalCluster() as lc:
            t0 = time.perf_counter()
            worker = lc.submit_topology("join", conf, build_join(key, reliable=acking))
            while len(out) < expected:
                if worker.failure is not None:
                    raise worker.failure
                time.sleep(0.005)
            elapsed = time.perf_counter() - t0
    finally:
        registry.unregister(key)
    return list(out), elapsed


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.join", description=__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--output", type=Path, default=RESULTS / "join.json")
    args = parser.parse_args()

    check = events(4000, 50)
    want, _ = plain_join(check)
    assert want, "the check input joins nothing"
    for acking in (False, True):
        got, _ = stormpy_join(check, len(want), acking)
        assert sorted(got) == sorted(want), f"stormpy rows differ (acking {acking})"
    rows = events(args.events, args.keys)
    expected, _ = plain_join(rows)
    runs: dict[str, Callable[[], tuple[Any, float]]] = {
        "plain python dict join": lambda: plain_join(rows),
        "stormpy JoinBolt (local, acking off)": lambda: stormpy_join(rows, len(expected), False),
        "stormpy JoinBolt (local, acking on, rows anchored to their two events)":
            lambda: stormpy_join(rows, len(expected), True),
    }
    secs: dict[str, float] = {}
    for _ in range(args.repeat):
        for name, run in runs.items():
            _, elapsed = run()
            secs[name] = min(secs.get(name, float("inf")), elapsed)
    results = {"events": args.events, "keys": args.keys, "rows": len(expected),
               "runs": {name: {"seconds": round(s, 3), "events_per_sec": round(args.events / s),
                               "rows_per_sec": round(len(expected) / s)}
                        for name, s in secs.items()}}
    results["stormpy_vs_plain"] = round(secs["plain python dict join"]
                                        / secs["stormpy JoinBolt (local, acking off)"], 3)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
