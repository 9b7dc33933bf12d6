"""``python -m bench.cluster_bench`` (``make bench-cluster``): the cluster rows of the word-count
benchmark, the complete latency at a fixed rate and the workers' memory, on ONE real cluster
(ZooKeeper, Nimbus, two supervisors with one slot each, so two worker processes over ZeroMQ).

- Throughput: each round runs Bytewax with two processes over a two-partition source
  (``python -m bytewax.run ... -i K -a ...``, what ``python -m bytewax.testing -p 2`` starts)
  and then every stormpy configuration (workload × bolt form × acking), so a change in the
  machine's load hits both sides alike; rates are words per second of the run (first sentence
  read or emitted → last word counted or item written; start-up outside on both sides), and
  words per CPU-second of the processes over the same window (the load-independent measure).
- Complete latency: a spout limited to ``--latency-rate`` sentences/s, acking on, the time from
  each emit to its ack in the spout; p50/p95/p99 of the tuples after a 1 s warm-up.
- The machine: a probe process beside each latency run times a fixed unit of work every
  millisecond (``bench/cpu_probe.py``); the runner reports the windows where that unit ran
  slowed, and how many of the tuples over 5 ms were in flight during a slowed stretch of 5 ms or
  more, or the 100 ms after it while its backlog drains (beside the share of the run those
  cover: the level chance alone would give).
- Memory: each worker's peak RSS (psutil, while word count runs) and its USS (read once the
  clock stopped: reading it walks the worker's memory map).

Writes ``bench/results/cluster.json``. See docs/performance.md, "Cluster, latency and memory".
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

import stormpy._native as native
from bench import cluster_runner, cpu_probe, runners
from bench.cpu_probe import CpuProbe
from bench.runners import sentences

RESULTS = Path(__file__).parent / "results"
BYTEWAX_2 = "bytewax (2 processes, 2 partitions)"
FORMS = ("per-tuple", "batch", "columns")


def stormpy_name(workload: str, acking: bool, form: str) -> str:
    return f"{workload}: stormpy 2 workers, acking {'on' if acking else 'off'}, {form}"


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Rates of every round, best and median; words per CPU-second; peak memory."""
    rates = [r["words"] / r["seconds"] for r in runs]
    per_cpu = [r["words"] / r["cpu_seconds"] for r in runs if r.get("cpu_seconds")]
    out: dict[str, Any] = {
        "words": runs[0]["words"], "rounds": [round(x, 1) for x in rates],
        "words_per_sec": round(max(rates), 1), "median": round(statistics.median(rates), 1),
        "words_per_cpu_sec": round(statistics.median(per_cpu), 1) if per_cpu else None,
        "cpu_rounds": [round(x, 1) for x in per_cpu]}
    if "wall" in runs[0]:
        out["with_startup_words_per_sec"] = round(max(r["words"] / r["wall"] for r in runs), 1)
    if "worker_rss_mb" in runs[0]:
        out["worker_peak_rss_mb"] = max(max(r["worker_rss_mb"], default=0) for r in runs)
        out["worker_peak_uss_mb"] = max(max(r["worker_uss_mb"], default=0) for r in runs)
        out["first_count_after_first_emit_s"] = round(
            statistics.median(r["first_count_after_first_emit"] for r in runs), 3)
    return out


def paired_ratio(ours: list[float], theirs: list[float]) -> float | None:
    """Median over rounds of (ours / theirs) in the same round."""
    pairs = [a / b for a, b in zip(ours, theirs, strict=False) if b]
    return round(statistics.median(pairs), 3) if pairs else None


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster_bench", description=__doc__)
    parser.add_argument("--sentences", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workloads", nargs="*", default=list(runners.WORKLOADS),
                        choices=runners.WORKLOADS)
    parser.add_argument("--forms", nargs="*", default=list(FORMS), choices=list(FORMS))
    parser.add_argument("--acking", nargs="*", default=["off", "on"], choices=["off", "on"])
    parser.add_argument("--latency-rate", type=float, default=10_000.0,
                        help="spout sentences/s for the complete-latency run (0: skip it)")
    parser.add_argument("--latency-seconds", type=float, default=10.0)
    parser.add_argument("--latency-rounds", type=int, default=2)
    parser.add_argument("--latency-conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a topology setting for the latency runs (repeatable; VALUE read "
                             "as JSON, else a string), e.g. topology.batch.flush.interval.millis=1"
                             " to see what the batching settings trade")
    parser.add_argument("--tx-batches", type=int, nargs="*", default=[1000, 10_000],
                        help="sentences per transaction for the transactional runs")
    parser.add_argument("--output", type=Path, default=RESULTS / "cluster.json")
    args = parser.parse_args()
    latency_conf = _settings(parser, args.latency_conf)
    n = args.sentences
    console = Console(width=150)
    sentences(n)  # generated (and cached) before any clock starts
    raw: dict[str, list[dict[str, Any]]] = {}
    latency_runs: list[dict[str, Any]] = []
    tx: dict[str, Any] = {}
    loads: list[float] = []
    with cluster_runner.two_worker_cluster() as (cluster, bundle):
        for i in range(args.rounds):
            for w in args.workloads:
                raw.setdefault(f"{w}: {BYTEWAX_2}", []).append(runners.bytewax_processes(n, w, 2))
                for form in args.forms:
                    for ack in args.acking:
                        name = stormpy_name(w, ack == "on", form)
                        raw.setdefault(name, []).append(cluster_runner.run_topology(
                            cluster, bundle, f"bench-{w}-{ack}-{form}-{i}", n, ack == "on",
                            workload=w, batch=form == "batch", columns=form == "columns"))
                        loads.append(os.getloadavg()[0])
            console.print(f"round {i + 1}/{args.rounds} done (load average {os.getloadavg()[0]:.1f})")
        if args.latency_rate > 0:
            count = int(args.latency_rate * args.latency_seconds)
            for i in range(args.latency_rounds):
                with tempfile.TemporaryDirectory(prefix="stormpy-bench-probe-") as tmp, \
                        CpuProbe(Path(tmp) / "units.json") as probe:
                    r = cluster_runner.run_topology(cluster, bundle, f"bench-latency-{i}", count,
                                                    True, rate=args.latency_rate,
                                                    conf=latency_conf)
                r["load"] = os.getloadavg()[0]
                r["machine"] = cpu_probe.summary(probe.units, r["slow_spans"])
                latency_runs.append(r)
        for batch in args.tx_batches:
            r = cluster_runner.run_transactional(cluster, bundle, f"bench-tx-{batch}", n, batch)
            lat = [x * 1000 for x in r["commit_latencies"]]
            tx[str(batch)] = {"words_per_sec": round(r["words"] / r["seconds"], 1),
                              "transactions": r["transactions"],
                              "commit_latency_p50_ms": round(cluster_runner.percentile(lat, 50), 1),
                              "commit_latency_p99_ms": round(cluster_runner.percentile(lat, 99), 1)}
    results = {name: summarize(runs) for name, runs in raw.items()}
    for name, r in results.items():
        w = name.split(":")[0]
        bw = results.get(f"{w}: {BYTEWAX_2}")
        if bw is None:
            continue
        r["vs_bytewax_paired_median"] = paired_ratio(r["rounds"], bw["rounds"])
        if r["words_per_cpu_sec"] and bw["words_per_cpu_sec"]:
            r["vs_bytewax_per_cpu"] = round(r["words_per_cpu_sec"] / bw["words_per_cpu_sec"], 3)
    latency = _latency(latency_runs, args.latency_rate)
    if latency is not None:
        latency["conf"] = latency_conf
    _print(console, n, args.rounds, results, latency, loads)
    for batch, t in tx.items():
        console.print(f"transactional, {int(batch):,} sentences per transaction: "
                      f"{t['words_per_sec']:,.0f} words/s, commit latency p50 "
                      f"{t['commit_latency_p50_ms']} ms, p99 {t['commit_latency_p99_ms']} ms")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    doc = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "sentences": n,
           "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                       "load_average_during_runs": [round(min(loads), 1), round(max(loads), 1)]
                       if loads else None},
           "stormpy_compiled": native.COMPILED, "throughput": results, "latency": latency,
           "transactional": tx}
    args.output.write_text(json.dumps(doc, indent=2))
    console.print(f"results written to {args.output}")


def _settings(parser: argparse.ArgumentParser, items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` items as a topology config (VALUE as JSON when it parses, else a string)."""
    conf: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            parser.error(f"--latency-conf {item!r}: expected KEY=VALUE")
        try:
            conf[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            conf[key.strip()] = value
    return conf


def _latency(runs: list[dict[str, Any]], rate: float) -> dict[str, Any] | None:
    if not runs:
        return None
    rounds = []
    for r in runs:
        s = cluster_runner.latency_summary(r["latencies"])
        rounds.append({**s, "failed": r["failed"], "load": round(r["load"], 1),
                       "achieved_rate": round((s["tuples"] + len(r["warmup_latencies"]))
                                              / r["seconds"], 1),
                       "worker_peak_rss_mb": r["worker_rss_mb"],
                       "worker_peak_uss_mb": r["worker_uss_mb"], "machine": r["machine"]})
    best = min(rounds, key=lambda x: x["p99_ms"])
    return {"rate": rate, "best": best, "rounds": rounds}


def _print(console: Console, n: int, rounds: int, results: dict[str, Any],
           latency: dict[str, Any] | None, loads: list[float]) -> None:
    path = "compiled (mypyc)" if native.COMPILED else f"pure Python ({native.PURE_REASON})"
    load = f"{min(loads):.1f}–{max(loads):.1f}" if loads else "-"
    table = Table(title=f"word count on 2 processes, {n:,} sentences, {rounds} rounds; stormpy "
                        f"tuple path: {path}; load average {load} on {os.cpu_count()} CPUs")
    for col in ("runner", "best words/s", "spread", "vs bytewax (paired)", "words/CPU-s",
                "vs bytewax per CPU", "worker RSS / USS MB"):
        table.add_column(col, justify="left" if col == "runner" else "right")
    for name, r in results.items():
        rs = r["rounds"]
        mem = f"{r['worker_peak_rss_mb']} / {r['worker_peak_uss_mb']}" \
            if "worker_peak_rss_mb" in r else "-"
        table.add_row(name, f"{r['words_per_sec']:,.0f}",
                      f"{min(rs) / 1e6:.2f}–{max(rs) / 1e6:.2f} M",
                      f"{r['vs_bytewax_paired_median']:.2f}x"
                      if r.get("vs_bytewax_paired_median") else "-",
                      f"{r['words_per_cpu_sec']:,.0f}" if r["words_per_cpu_sec"] else "-",
                      f"{r['vs_bytewax_per_cpu']:.2f}x" if r.get("vs_bytewax_per_cpu") else "-",
                      mem)
    console.print(table)
    if latency:
        if latency.get("conf"):
            console.print(f"latency runs with {latency['conf']}")
        for r in latency["rounds"]:
            console.print(f"complete latency at {latency['rate']:,.0f} sentences/s (achieved "
                          f"{r['achieved_rate']:,.0f}): p50 {r['p50_ms']} ms, p95 {r['p95_ms']} "
                          f"ms, p99 {r['p99_ms']} ms, max {r['max_ms']} ms ({r['tuples']} tuples, "
                          f"{r['failed']} failed, load {r['load']}, worker RSS "
                          f"{r['worker_peak_rss_mb']} MB, USS {r['worker_peak_uss_mb']} MB)")
            m = r["machine"]
            console.print(f"  machine probe (a {m['median_unit_us']} µs unit of work beside the "
                          f"run): slowed ≥{cpu_probe.SLOW_FACTOR:.0f}x in {m['windows']} windows "
                          f"({m['slowed_share']:.1%} of the time, longest "
                          f"{m['longest_window_ms']} ms, worst {m['worst_factor']}x); "
                          f"{m['stalls']} of them {cpu_probe.STALL_SECS * 1000:.0f} ms or "
                          f"longer; of the {m['slow_tuples']} tuples over 5 ms, "
                          f"{m['slow_tuples_in_stalls']} were in flight during such a stall or "
                          f"the {cpu_probe.DRAIN_SECS * 1000:.0f} ms after it, which cover "
                          f"{m['stall_cover_share']:.1%} of the run")


if __name__ == "__main__":
    main()
