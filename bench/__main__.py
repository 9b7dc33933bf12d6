"""``python -m bench``: two word-count workloads, the same work on every side, through a plain
loop (the ceiling), Bytewax and stormpy local mode. Prints best words/s, the spread over the
rounds and ratios (within this run) and writes bench/results/latest.json. The cluster rows (two
stormpy workers against Bytewax with two processes), the complete latency and the workers' memory
are ``python -m bench.cluster_bench`` (``make bench-cluster``).

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
#: stormpy bolt forms: per-tuple (execute), batch (execute_batch), columns (execute_columns)
FORMS = ("per-tuple", "batch", "columns")


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
    parser.add_argument("--workloads", nargs="*", default=list(runners.WORKLOADS),
                        choices=runners.WORKLOADS)
    parser.add_argument("--forms", nargs="*", default=list(FORMS), choices=list(FORMS),
                        help="stormpy bolts: per-tuple (execute), batch (execute_batch) and/or "
                             "columns (execute_columns)")
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
                    partial(runners.stormpy_local, n, w, acking, form == "batch",
                            columns=form == "columns")
    chosen = {name: run for name, run in local.items() if wanted(name)}
    for name, rates in interleaved(chosen, args.repeat).items():
        record(name, name.split(":")[0], words, rates)
    path = "compiled (mypyc)" if native.COMPILED else f"pure Python ({native.PURE_REASON})"
    table = Table(title=f"word count, {n:,} sentences ({args.repeat} rounds); stormpy tuple "
                        f"path: {path}")
    for col in ("runner", "best words/s", "spread", "vs plain loop", "vs bytewax"):
        table.add_column(col, justify="left" if col == "runner" else "right")
    for name, r in results.items():
        w = r["workload"]
        plain = results.get(f"{w}: {PLAIN}", {}).get("words_per_sec")
        bw = results.get(f"{w}: {BYTEWAX}", {}).get("words_per_sec")
        rate = r["words_per_sec"]
        r["vs_plain"] = round(rate / plain, 4) if plain else None
        r["vs_bytewax"] = round(rate / bw, 3) if bw else None
        rounds = r["rounds"]
        table.add_row(name, f"{rate:,.0f}", f"{min(rounds) / 1e6:.2f}–{max(rounds) / 1e6:.2f} M",
                      f"{r['vs_plain']:.3f}x" if plain else "-",
                      f"{r['vs_bytewax']:.2f}x" if bw else "-")
    console.print(table)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    doc = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "sentences": n,
           "machine": {"python": platform.python_version(), "cpu": platform.processor()},
           "stormpy_compiled": native.COMPILED,
           "throughput": results}
    args.output.write_text(json.dumps(doc, indent=2))
    console.print(f"results written to {args.output}")


if __name__ == "__main__":
    main()
