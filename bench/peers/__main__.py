"""``python -m bench.peers`` (``make bench-peers``): the README's word count on Apache Storm
itself beside stormpy and Bytewax, in one run over the same sentences.

Rows, for the ``final`` and ``running`` workloads (see ``python -m bench``), acking off and on:

- Storm, Java bolts: the README's topology in Java on Storm's ``LocalCluster`` (one JVM, one task
  per component), after ``--warmup`` untimed rounds of each configuration (JIT warm-up);
- Storm, multilang Python split: the same topology with the split bolt a ``ShellBolt`` running a
  Python splitter with Storm's ``storm.py`` (how Python runs on Storm), over the first
  ``--python-sentences`` sentences (6–80x slower than the Java bolts here: every emit waits for
  its task ids);
- stormpy local mode, per-tuple form (the README's code) and columnar form (the batch API);
- Bytewax (one worker; no acking, so one row per workload).

Rounds interleave (every runner once per round); the table gives the best words/s, the spread
and ratios within the run to Storm's Java bolts (same workload and acking) and to Bytewax. Storm
and stormpy are timed from the spout's first emit to the last word counted (and, acking, the
last sentence acked); Bytewax from ``run_main``'s start to its end. Memory: the JVM's RSS after a
round (Nimbus, supervisor, ZooKeeper and the worker share it in ``LocalCluster``) and the
ShellBolt Python process's peak; stormpy's in a fresh process running the same row once. Writes
``bench/results/peers.json``. Without Java or Maven, or when the Maven build fails, the Storm
rows are left out and the reason printed.

``--storm-workers 2`` runs Storm's topologies on two workers of its ``LocalCluster`` (one JVM,
Netty between the workers); ``--storm-cluster`` on a real Storm cluster instead: ZooKeeper, Nimbus
and a supervisor, each its own JVM, and the topology on ``--storm-workers`` (default 2) worker
JVMs the supervisor starts (see ``bench/peers/storm_cluster.py``); the RSS is then the workers'
sum, and the ShellBolt's Python process is not measured.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

import stormpy._native as native
from bench import runners
from bench.peers import storm_cluster, storm_peer
from bench.runners import sentences

RESULTS = Path(__file__).resolve().parent.parent / "results"
STORM_JAVA = "storm {v}, java bolts"
STORM_PYTHON = "storm {v}, multilang python split"
STORMPY = "stormpy local, {form}"
BYTEWAX = "bytewax (1 worker)"
#: stormpy forms: (row name, runner keywords)
FORMS = {"per-tuple (README form)": {}, "columnar": {"columns": True}}

#: run in a fresh process: one stormpy local row, then its RSS and peak RSS (kB) on stdout
_RSS_CHILD = """
import json, sys
from bench import runners
n, workload, acking, columns = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "on", \\
    sys.argv[4] == "columns"
runners.sentences(n)
runners.stormpy_local(n, workload, acking, columns=columns)
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
print(json.dumps({k: int(status[v].split()[0]) for k, v in
                  (("rss_kb", "VmRSS"), ("hwm_kb", "VmHWM"))}))
"""


def stormpy_memory(n: int, workload: str, acking: bool, columns: bool) -> dict[str, int]:
    """RSS and peak RSS (kB) of a fresh Python process that ran one stormpy local row."""
    root = str(Path(__file__).resolve().parents[2])
    res = subprocess.run([sys.executable, "-c", _RSS_CHILD, str(n), workload,
                          "on" if acking else "off", "columns" if columns else "per-tuple"],
                         cwd=root, capture_output=True, text=True, timeout=600, check=True)
    doc: dict[str, int] = json.loads(res.stdout.strip().splitlines()[-1])
    return doc


def _storm_round(peer: storm_peer.StormPeer | storm_cluster.StormClusterPeer,
                 memory: dict[str, list[dict[str, Any]]], name: str, workload: str, acking: bool,
                 split: str, n: int, expected_words: int) -> tuple[int, float]:
    r = peer.run(workload, acking, split, n)
    if r["words"] != expected_words:
        raise RuntimeError(f"{name}: Storm counted {r['words']} words, expected {expected_words}")
    memory.setdefault(name, []).append(r)
    return r["words"], r["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=50_000)
    parser.add_argument("--python-sentences", type=int, default=2_000,
                        help="sentences of the multilang Python rows (0: leave them out)")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds")
    parser.add_argument("--warmup", type=int, default=1,
                        help="untimed rounds of each Storm configuration first (JVM warm-up)")
    parser.add_argument("--workloads", nargs="*", default=list(runners.WORKLOADS),
                        choices=runners.WORKLOADS)
    parser.add_argument("--no-storm", action="store_true", help="leave the Storm rows out")
    parser.add_argument("--storm-workers", type=int, default=None, choices=[1, 2],
                        help="2: Storm's topologies on two workers of its LocalCluster, "
                             "exchanging tuples over Netty (one JVM still); with "
                             "--storm-cluster the worker JVMs (default 2)")
    parser.add_argument("--storm-cluster", action="store_true",
                        help="Storm's rows on a real cluster: ZooKeeper, Nimbus and a "
                             "supervisor starting --storm-workers worker JVMs, laid out from "
                             "Maven Central under bench/peers/storm/target/")
    parser.add_argument("--output", type=Path, default=RESULTS / "peers.json")
    args = parser.parse_args()
    storm_workers = args.storm_workers or (2 if args.storm_cluster else 1)
    n, console = args.sentences, Console(width=max(Console().width, 150))
    lines = sentences(n)
    words = sum(len(s.split()) for s in lines)
    py_n = min(args.python_sentences, n)
    py_words = sum(len(s.split()) for s in lines[:py_n])
    storm_note = "left out (--no-storm)" if args.no_storm else None
    if storm_note is None:
        try:
            if storm_peer.missing_tools():
                raise RuntimeError(f"needs {' and '.join(storm_peer.missing_tools())} on PATH")
            console.print("building bench/peers/storm with Maven ...")
            storm_peer.build()
            if args.storm_cluster:
                console.print("laying out the Storm installation with Maven ...")
                storm_cluster.build_home()
        except RuntimeError as e:
            storm_note = f"left out: {e}"
    version = storm_peer.storm_version()
    if args.storm_cluster:
        version += f", cluster of {storm_workers} worker JVM{'s' if storm_workers > 1 else ''}"
    elif storm_workers == 2:
        version += ", 2 workers over Netty"
    runs: dict[str, Callable[[], tuple[int, float]]] = {}
    meta: dict[str, dict[str, Any]] = {}
    storm_memory: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="stormpy-bench-peers-") as tmp:
        peer: storm_peer.StormPeer | storm_cluster.StormClusterPeer | None = None
        if storm_note is None:
            path = Path(tmp) / "sentences.txt"
            storm_peer.write_sentences(lines, path)
            if args.storm_cluster:
                console.print(f"starting ZooKeeper, Nimbus and a supervisor ({storm_workers} "
                              f"slots) under {storm_cluster.RUN_DIR} ...")
                peer = storm_cluster.StormClusterPeer(path, workers=storm_workers)
            else:
                peer = storm_peer.StormPeer(path, workers=storm_workers)
            if peer.ready["words"] != words:
                raise RuntimeError(f"the JVM read {peer.ready['words']} words, not {words}")
        try:
            for w in args.workloads:
                for acking in (False, True):
                    ack = f"acking {'on' if acking else 'off'}"
                    if peer is not None:
                        name = f"{w}: {STORM_JAVA.format(v=version)}, {ack}"
                        runs[name] = partial(_storm_round, peer, storm_memory, name, w, acking,
                                             "java", n, words)
                        meta[name] = {"side": "storm", "acking": acking, "sentences": n}
                        if py_n:
                            name = f"{w}: {STORM_PYTHON.format(v=version)}, {ack}"
                            runs[name] = partial(_storm_round, peer, storm_memory, name, w,
                                                 acking, "python", py_n, py_words)
                            meta[name] = {"side": "storm", "acking": acking, "sentences": py_n}
                    for form, kw in FORMS.items():
                        name = f"{w}: {STORMPY.format(form=form)}, {ack}"
                        runs[name] = partial(runners.stormpy_local, n, w, acking,
                                             from_first_emit=True, **kw)
                        meta[name] = {"side": "stormpy", "acking": acking, "sentences": n,
                                      "columns": bool(kw)}
                name = f"{w}: {BYTEWAX}"
                runs[name] = partial(runners.bytewax, n, w)
                meta[name] = {"side": "bytewax", "acking": False, "sentences": n}
            storm_runs = {k: v for k, v in runs.items() if meta[k]["side"] == "storm"}
            for i in range(args.warmup if storm_runs else 0):
                console.print(f"Storm warm-up round {i + 1} of {args.warmup} ...")
                for run in storm_runs.values():
                    run()
            storm_memory.clear()
            rates: dict[str, list[float]] = {name: [] for name in runs}
            for i in range(args.repeat):
                console.print(f"round {i + 1} of {args.repeat} ...")
                for name, run in runs.items():
                    done, secs = run()
                    rates[name].append(done / secs)
        finally:
            if peer is not None:
                peer.close()
    results: dict[str, dict[str, Any]] = {}
    for name, r in rates.items():
        m = meta[name]
        results[name] = {**m, "workload": name.split(":")[0], "words_per_sec": round(max(r), 1),
                         "median": round(statistics.median(r), 1),
                         "rounds": [round(x, 1) for x in r]}
        if name in storm_memory:
            results[name]["jvm_rss_kb"] = max(x["jvm_rss_kb"] for x in storm_memory[name])
            results[name]["jvm_hwm_kb"] = max(x["jvm_hwm_kb"] for x in storm_memory[name])
            results[name]["python_hwm_kb"] = max(x["python_hwm_kb"] for x in storm_memory[name])
            if args.storm_cluster:
                results[name]["worker_pids"] = sorted({x["worker_pids"]
                                                       for x in storm_memory[name]})
                results[name]["start_seconds"] = [x["start_seconds"]
                                                  for x in storm_memory[name]]
        elif m["side"] == "stormpy":
            results[name].update(stormpy_memory(n, results[name]["workload"], m["acking"],
                                                m["columns"]))
    table = Table(title=f"word count, {n:,} sentences ({args.repeat} rounds"
                        f"{f', {args.warmup} Storm warm-up' if storm_note is None else ''}); "
                        f"stormpy tuple path: "
                        f"{'compiled' if native.COMPILED else 'pure Python'}")
    for col in ("runner", "best words/s", "spread", "vs storm java", "vs bytewax", "RSS"):
        table.add_column(col, justify="left" if col == "runner" else "right")
    for name, row in results.items():
        w = row["workload"]
        ack = "on" if row["acking"] else "off"
        java = results.get(f"{w}: {STORM_JAVA.format(v=version)}, acking {ack}")
        bw = results[f"{w}: {BYTEWAX}"]["words_per_sec"]
        rate = row["words_per_sec"]
        row["vs_storm_java"] = round(rate / java["words_per_sec"], 3) if java else None
        row["vs_bytewax"] = round(rate / bw, 3)
        if "jvm_rss_kb" in row:
            rss = f"{'workers' if args.storm_cluster else 'JVM'} " \
                  f"{row['jvm_rss_kb'] / 1024:.0f} MB" + (
                f" + python {row['python_hwm_kb'] / 1024:.0f} MB" if row["python_hwm_kb"] else "")
        elif "rss_kb" in row:
            rss = f"{row['rss_kb'] / 1024:.0f} MB (peak {row['hwm_kb'] / 1024:.0f})"
        else:
            rss = "-"
        table.add_row(name + (f" ({row['sentences']:,} sentences)" if row["sentences"] != n else ""),
                      f"{rate:,.0f}",
                      f"{min(row['rounds']) / 1e6:.2f}–{max(row['rounds']) / 1e6:.2f} M",
                      f"{row['vs_storm_java']:.2f}x" if java else "-", f"{row['vs_bytewax']:.2f}x",
                      rss)
    console.print(table)
    if storm_note is not None:
        console.print(f"Storm rows {storm_note}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    doc = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "sentences": n,
           "python_sentences": py_n, "storm_version": version, "storm_note": storm_note,
           "jvm_opts": ([storm_cluster.WORKER_CHILDOPTS] if args.storm_cluster
                        else list(storm_peer.JVM_OPTS)),
           "machine": {"python": platform.python_version(), "cpu": platform.processor()},
           "stormpy_compiled": native.COMPILED, "throughput": results}
    args.output.write_text(json.dumps(doc, indent=2))
    console.print(f"results written to {args.output}")


if __name__ == "__main__":
    main()
