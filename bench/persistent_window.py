"""``python -m bench.persistent_window``: a persistent sliding count window over one million
tuples in local mode (not part of ``make test``).

A reliable spout emits 0..n-1; a StatefulWindowedBolt with ``with_persistence()`` and
``with_max_events_in_memory`` keeps a running count and sum of a sliding count window (default
length 200,000, slide 10,000) in its checkpointed state, the window's events in a SQLite state
store (checkpoint every 200 ms, 10,000 pending inputs: inputs are acked at checkpoints, and one
checkpoint's changes stay under the 512 KiB document limit). Samples the process's resident set
size (the whole local cluster runs in this process) and the window's metrics as the stream goes,
checks the last window's sum, and writes bench/results/persistent_window.json. With
``--in-memory`` the same window without persistence, for comparison (every event in memory until
it expires, and the spout's pending inputs raised to cover the window, which holds its inputs
un-acked).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TOPOLOGIES = Path(__file__).resolve().parent / "topologies"
if str(TOPOLOGIES) not in sys.path:
    sys.path.insert(0, str(TOPOLOGIES))

from bench_persistent_window import build  # noqa: E402

from stormpy.testing import LocalCluster, registry  # noqa: E402

RESULTS = Path(__file__).parent / "results"


def rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def run(n: int, length: int, slide: int, max_events: int, persistent: bool,
        store: Path, pending: int, checkpoint_ms: int) -> dict[str, Any]:
    log: dict[str, Any] = {"acked": 0, "failed": 0, "windows": 0, "last": None}
    key = registry.register(log)
    conf = {"topology.state.provider": "sqlite",
            "topology.state.provider.config": {"path": str(store)},
            "topology.state.checkpoint.interval.ms": checkpoint_ms,
            "topology.max.spout.pending": pending, "topology.message.timeout.secs": 120}
    spec = build(key, n, length, slide, max_events)
    if not persistent:  # the same bolt and window, events in memory
        from stormpy.windowing.stateful import PERSIST
        spec.components["window"].kwargs[PERSIST] = {"persistent": False, "max_events": None}
    samples: list[dict[str, Any]] = []
    try:
        with LocalCluster() as lc:
            base = rss_mib()
            t0 = time.perf_counter()
            worker = lc.submit_topology("pwin", conf, spec)
            next_sample = 0
            # without persistence the last window's tuples stay un-acked (nothing expires them)
            while log["windows"] < n // slide or (persistent and log["acked"] < n):
                if worker.failure is not None:
                    raise worker.failure
                if log["acked"] >= next_sample:
                    metrics = next(iter(lc.get_metrics("pwin").get("window", {}).values()), {})
                    samples.append({"acked": log["acked"], "secs": time.perf_counter() - t0,
                                    "rss_mib": round(rss_mib(), 1),
                                    "held": metrics.get("window-events-held"),
                                    "window": metrics.get("window-events")})
                    next_sample += n // 20
                time.sleep(0.05)
            elapsed = time.perf_counter() - t0
            metrics = next(iter(lc.get_metrics("pwin")["window"].values()))
            final_rss = rss_mib()
    finally:
        registry.unregister(key)
    hi = n - n % slide
    want = (min(length, hi), sum(range(max(0, hi - length), hi)))
    assert tuple(log["last"]) == want, (log["last"], want)
    return {"persistent": persistent, "tuples": n, "length": length, "slide": slide,
            "max_events_in_memory": max_events if persistent else None,
            "secs": round(elapsed, 1), "tuples_per_sec": round(n / elapsed),
            "rss_before_mib": round(base, 1), "rss_end_mib": round(final_rss, 1),
            "rss_peak_sampled_mib": max(s["rss_mib"] for s in samples),
            "windows": log["windows"], "replayed": log["failed"], "metrics": metrics,
            "samples": samples}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.persistent_window", description=__doc__)
    parser.add_argument("--tuples", type=int, default=1_000_000)
    parser.add_argument("--length", type=int, default=200_000)
    parser.add_argument("--slide", type=int, default=10_000)
    parser.add_argument("--max-events", type=int, default=20_000)
    parser.add_argument("--pending", type=int, default=10_000,
                        help="topology.max.spout.pending (inputs are acked at checkpoints)")
    parser.add_argument("--checkpoint-ms", type=int, default=200)
    parser.add_argument("--in-memory", action="store_true",
                        help="also run the window without persistence")
    parser.add_argument("--output", type=Path, default=RESULTS / "persistent_window.json")
    args = parser.parse_args()
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        out.append(run(args.tuples, args.length, args.slide, args.max_events, True,
                       Path(tmp) / "persistent.sqlite", args.pending, args.checkpoint_ms))
        if args.in_memory:
            out.append(run(args.tuples, args.length, args.slide, args.max_events, False,
                           Path(tmp) / "memory.sqlite",
                           max(args.pending, args.length + 2 * args.slide), args.checkpoint_ms))
    for r in out:
        print(f"{'persistent' if r['persistent'] else 'in memory '}: {r['tuples']} tuples, "
              f"window {r['length']}/{r['slide']}, {r['tuples_per_sec']} tuples/s, RSS "
              f"{r['rss_before_mib']} -> peak {r['rss_peak_sampled_mib']} -> end "
              f"{r['rss_end_mib']} MiB, held events peak "
              f"{r['metrics'].get('window-events-cached-peak')}, partition loads "
              f"{r['metrics'].get('window-partition-loads')}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
