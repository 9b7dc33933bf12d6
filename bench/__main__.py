"""``python -m bench``: two word-count workloads, the same work on every side, through a plain
loop (the ceiling), Bytewax, stormpy local mode and a two-worker stormpy cluster (against Bytewax
with two processes over a two-partition source), and as a transactional topology with commit
latencies per transaction; then a complete-latency run at a fixed rate. Prints best words/s,
the spread over the rounds and ratios (within this run) and writes bench/results/latest.json.

- ``final``: count every word, one counter per word, nothing emitted per word (Bytewax
  ``count_final``; stormpy's count bolt only counts and acks);
- ``running``: emit the running ``(word, count)`` for every word to a sink that counts them
  (Bytewax ``key_on`` + ``stateful_map`` → sink; stormpy's count bolt emits ``[word, count]`` to
  a sink bolt on a fields grouping)."""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

import stormpy._native as native
from bench import runners
from bench.runners import sentences

RESULTS = Path(__file__).parent / "results"
PLAIN = "plain python loop"
BYTEWAX = "bytewax (1 worker)"
BYTEWAX_2 = "bytewax (2 processes, 2 partitions)"
FORMS = {"per-tuple": False, "batch": True}


def interleaved(runs: dict[str, Callable[[], tuple[int, float]]],
                repeat: int) -> dict[str, list[float]]:
    """Words/s of each runner in each of ``repeat`` rounds, each round running every runner once
    (A B C, A B C, ...): a change in the machine's load then hits every runner alike."""
    rates: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            words, secs = run()
            rates[name].append(words / secs)
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--sentences", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5, help="rounds of the local runners")
    parser.add_argument("--cluster-repeat", type=int, default=2,
                        help="rounds of the cluster runners")
    parser.add_argument("--workloads", nargs="*", default=list(runners.WORKLOADS),
                        choices=runners.WORKLOADS)
    parser.add_argument("--forms", nargs="*", default=list(FORMS), choices=list(FORMS),
                        help="stormpy bolts: per-tuple (execute) and/or batch (execute_batch)")
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

    def record(name: str, workload: str, words: int, rates: list[float], **extra: Any) -> None:
        results[name] = {"workload": workload, "words": words,
                         "words_per_sec": round(max(rates), 1),
                         "median": round(statistics.median(rates), 1),
                         "rounds": [round(r, 1) for r in rates], **extra}
        console.print(f"{name}: {max(rates):,.0f} words/s (rounds: "
                      f"{', '.join(f'{r:,.0f}' for r in rates)})")

    def wanted(name: str) -> bool:
        return not args.only or any(o in name for o in args.only)

    words = sum(len(s.split()) for s in sentences(n))
    local: dict[str, Callable[[], tuple[int, float]]] = {}
    for w in args.workloads:
        local[f"{w}: {PLAIN}"] = partial(runners.plain_loop, n, w)
        local[f"{w}: {BYTEWAX}"] = partial(runners.bytewax, n, w)
        for form in args.forms:
            for acking in (False, True):
                local[f"{w}: stormpy local, acking {'on' if acking else 'off'}, {form}"] = \
                    partial(runners.stormpy_local, n, w, acking, FORMS[form])
    chosen = {name: run for name, run in local.items() if wanted(name)}
    for name, rates in interleaved(chosen, args.repeat).items():
        record(name, name.split(":")[0], words, rates)
    latency: dict[str, Any] | None = None
    cluster_runs: dict[str, tuple[str, bool, bool]] = {}
    for w in args.workloads:
        for form in args.forms:
            for acking in (False, True):
                cluster_runs[f"{w}: stormpy cluster 2 workers (ZeroMQ), acking "
                             f"{'on' if acking else 'off'}, {form}"] = (w, acking, FORMS[form])
    if not args.no_cluster and (any(map(wanted, cluster_runs)) or wanted("latency")
                                or wanted("transactional") or wanted("2 processes")):
        from bench import cluster_runner

        with cluster_runner.two_worker_cluster() as (cluster, bundle):
            runs: dict[str, list[dict[str, Any]]] = {}
            for i in range(args.cluster_repeat):
                for w in args.workloads:
                    name = f"{w}: {BYTEWAX_2}"
                    if wanted(name):
                        runs.setdefault(name, []).append(runners.bytewax_processes(n, w, 2))
                for name, (w, acking, batch) in cluster_runs.items():
                    if wanted(name):
                        runs.setdefault(name, []).append(cluster_runner.run_topology(
                            cluster, bundle, f"bench-{w}-{int(acking)}-{int(batch)}-{i}", n,
                            acking, workload=w, batch=batch))
            for name, rs in runs.items():
                extra: dict[str, Any] = {}
                if "wall" in rs[0]:
                    extra["with_startup_words_per_sec"] = round(max(
                        r["words"] / r["wall"] for r in rs), 1)
                else:
                    extra["first_tuple_after_submit_s"] = round(
                        min(r["first_tuple_after_submit"] for r in rs), 3)
                    extra["worker_rss_mb"] = max(r["worker_rss_mb"] for r in rs)
                record(name, name.split(":")[0], rs[0]["words"],
                       [r["words"] / r["seconds"] for r in rs], **extra)
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
                record(name, "final", tx_best["words"], [tx_best["rate"]],
                       transactions=tx_best["transactions"],
                       commit_latency_p50_ms=round(cluster_runner.percentile(lat, 50), 1),
                       commit_latency_p99_ms=round(cluster_runner.percentile(lat, 99), 1))
            if wanted("latency"):
                count = int(args.latency_rate * args.latency_seconds)
                r = cluster_runner.run_topology(cluster, bundle, "bench-latency", count, True,
                                                rate=args.latency_rate)
                latency = {"rate": args.latency_rate, "failed": r["failed"],
                           "worker_rss_mb": r["worker_rss_mb"],
                           **cluster_runner.latency_summary(r["latencies"])}
                if r["warmup_latencies"]:
                    latency["warmup"] = cluster_runner.latency_summary(r["warmup_latencies"])
                console.print(f"complete latency at {args.latency_rate:,.0f} tuples/s: {latency}")
    path = "compiled (mypyc)" if native.COMPILED else f"pure Python ({native.PURE_REASON})"
    table = Table(title=f"word count, {n:,} sentences ({args.repeat} rounds local, "
                        f"{args.cluster_repeat} cluster); stormpy tuple path: {path}")
    for col in ("runner", "best words/s", "spread", "vs plain loop", "vs bytewax"):
        table.add_column(col, justify="left" if col == "runner" else "right")
    for name, r in results.items():
        w = r["workload"]
        plain = results.get(f"{w}: {PLAIN}", {}).get("words_per_sec")
        bw_name = BYTEWAX_2 if "2 workers" in name or "2 processes" in name else BYTEWAX
        bw = results.get(f"{w}: {bw_name}", {}).get("words_per_sec")
        rate = r["words_per_sec"]
        r["vs_plain"] = round(rate / plain, 4) if plain else None
        r["vs_bytewax"] = round(rate / bw, 3) if bw else None
        rounds = r["rounds"]
        table.add_row(name, f"{rate:,.0f}", f"{min(rounds) / 1e6:.2f}–{max(rounds) / 1e6:.2f} M",
                      f"{r['vs_plain']:.3f}x" if plain else "-",
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
