"""``python -m bench``: the same word count through a plain loop, Bytewax, stormpy local mode
and a two-worker stormpy cluster (acked, and as a transactional topology with commit latencies
per transaction), plus a complete-latency run at a fixed rate; prints words/s with ratios and
writes bench/results/latest.json."""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

import stormpy._native as native
from bench import runners

RESULTS = Path(__file__).parent / "results"
PLAIN = "plain python loop"
BYTEWAX = "bytewax (1 worker)"


def best_of_interleaved(runs: dict[str, Callable[[], tuple[int, float]]],
                        repeat: int) -> dict[str, tuple[int, float]]:
    """Best words/s of each runner over ``repeat`` rounds, each round running every runner once
    (A B C, A B C, ...): a change in the machine's load then hits every runner alike."""
    best: dict[str, tuple[int, float]] = {}
    for _ in range(repeat):
        for name, run in runs.items():
            words, secs = run()
            best[name] = (words, max(best.get(name, (0, 0.0))[1], words / secs))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--sentences", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs per local runner")
    parser.add_argument("--cluster-repeat", type=int, default=2,
                        help="best of N runs per cluster runner")
    parser.add_argument("--no-cluster", action="store_true", help="skip the cluster runs")
    parser.add_argument("--latency-rate", type=float, default=10_000.0,
                        help="spout tuples/s for the complete-latency run")
    parser.add_argument("--latency-seconds", type=float, default=6.0)
    parser.add_argument("--tx-batches", type=int, nargs="*", default=[1000, 10_000],
                        help="sentences per transaction for the transactional cluster runs")
    parser.add_argument("--only", nargs="*", help="run only runners whose name contains these")
    parser.add_argument("--output", type=Path, default=RESULTS / "latest.json",
                        help="where to write the JSON results")
    args = parser.parse_args()
    n = args.sentences
    console = Console()
    results: dict[str, dict[str, Any]] = {}

    def record(name: str, words: int, rate: float, **extra: Any) -> None:
        results[name] = {"words": words, "words_per_sec": round(rate, 1), **extra}
        console.print(f"{name}: {rate:,.0f} words/s")

    def wanted(name: str) -> bool:
        return not args.only or any(o in name for o in args.only)

    local = {
        PLAIN: lambda: runners.plain_loop(n),
        BYTEWAX: lambda: runners.bytewax(n),
        "stormpy local, acking off": lambda: runners.stormpy_local(n, acking=False),
        "stormpy local, acking on": lambda: runners.stormpy_local(n, acking=True),
    }
    chosen = {name: run for name, run in local.items() if wanted(name)}
    for name, (words, rate) in best_of_interleaved(chosen, args.repeat).items():
        record(name, words, rate)
    latency: dict[str, Any] | None = None
    cluster_runs = {f"stormpy cluster 2 workers (ZeroMQ), acking {'on' if a else 'off'}": a
                    for a in (False, True)}
    if not args.no_cluster and (any(map(wanted, cluster_runs)) or wanted("latency")
                                or wanted("transactional")):
        from bench import cluster_runner

        with cluster_runner.two_worker_cluster() as (cluster, bundle):
            best: dict[str, dict[str, Any]] = {}
            for i in range(args.cluster_repeat):
                for name, acking in cluster_runs.items():
                    if wanted(name):
                        r = cluster_runner.run_topology(cluster, bundle,
                                                        f"bench-{int(acking)}-{i}", n, acking)
                        r["rate"] = r["words"] / r["seconds"]
                        if name not in best or r["rate"] > best[name]["rate"]:
                            best[name] = r
            for name, r in best.items():
                record(name, r["words"], r["rate"],
                       first_tuple_after_submit_s=round(r["first_tuple_after_submit"], 3))
            for batch in args.tx_batches:
                name = f"stormpy cluster 2 workers, transactional, batch {batch:,}"
                if not wanted(name):
                    continue
                tx_best: dict[str, Any] | None = None
                for i in range(args.cluster_repeat):
                    r = cluster_runner.run_transactional(cluster, bundle, f"bench-tx-{batch}-{i}",
                                                         n, batch)
                    r["rate"] = r["words"] / r["seconds"]
                    if tx_best is None or r["rate"] > tx_best["rate"]:
                        tx_best = r
                assert tx_best is not None
                lat = [x * 1000 for x in tx_best["commit_latencies"]]
                record(name, tx_best["words"], tx_best["rate"],
                       transactions=tx_best["transactions"],
                       commit_latency_p50_ms=round(cluster_runner.percentile(lat, 50), 1),
                       commit_latency_p99_ms=round(cluster_runner.percentile(lat, 99), 1))
            if wanted("latency"):
                count = int(args.latency_rate * args.latency_seconds)
                r = cluster_runner.run_topology(cluster, bundle, "bench-latency", count, True,
                                                rate=args.latency_rate)
                latency = {"rate": args.latency_rate, "failed": r["failed"],
                           **cluster_runner.latency_summary(r["latencies"])}
                if r["warmup_latencies"]:
                    latency["warmup"] = cluster_runner.latency_summary(r["warmup_latencies"])
                console.print(f"complete latency at {args.latency_rate:,.0f} tuples/s: {latency}")
    path = "compiled (mypyc)" if native.COMPILED else f"pure Python ({native.PURE_REASON})"
    table = Table(title=f"word count, {n:,} sentences (best of {args.repeat} for local runs, "
                        f"{args.cluster_repeat} for cluster runs); stormpy tuple path: {path}")
    for col in ("runner", "words/s", "vs plain loop", "vs bytewax"):
        table.add_column(col, justify="left" if col == "runner" else "right")
    plain = results.get(PLAIN, {}).get("words_per_sec")
    bw = results.get(BYTEWAX, {}).get("words_per_sec")
    for name, r in results.items():
        rate = r["words_per_sec"]
        r["vs_plain"] = round(rate / plain, 4) if plain else None
        r["vs_bytewax"] = round(rate / bw, 3) if bw else None
        table.add_row(name, f"{rate:,.0f}", f"{r['vs_plain']:.3f}x" if plain else "-",
                      f"{r['vs_bytewax']:.2f}x" if bw else "-")
    console.print(table)
    if latency:
        console.print(f"complete latency, 2-worker cluster, acking on, {latency['rate']:,.0f} "
                      f"tuples/s: p50 {latency['p50_ms']} ms, p99 {latency['p99_ms']} ms "
                      f"({latency['tuples']} tuples after a 1 s warm-up, {latency['failed']} "
                      "failed)")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    doc = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "sentences": n,
           "machine": {"python": platform.python_version(), "cpu": platform.processor()},
           "stormpy_compiled": native.COMPILED,
           "throughput": results, "latency": latency}
    args.output.write_text(json.dumps(doc, indent=2))
    console.print(f"results written to {args.output}")


if __name__ == "__main__":
    main()
