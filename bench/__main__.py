"""``python -m bench``: run every runner on the same workload and print words/s and ratios.

Results also go to bench/results/latest.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench import runners

RESULTS = Path(__file__).parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--sentences", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs per runner")
    parser.add_argument("--only", nargs="*", help="run only these runners")
    args = parser.parse_args()
    n = args.sentences
    suite: dict[str, Callable[[], tuple[int, float]]] = {
        "plain python loop": lambda: runners.plain_loop(n),
        "bytewax (1 worker)": lambda: runners.bytewax(n),
        "stormpy local, acking off": lambda: runners.stormpy_local(n, acking=False),
        "stormpy local, acking on": lambda: runners.stormpy_local(n, acking=True),
    }
    results: dict[str, dict[str, float]] = {}
    console = Console()
    for name, run in suite.items():
        if args.only and not any(o in name for o in args.only):
            continue
        best = None
        for _ in range(args.repeat):
            try:
                words, secs = run()
            except ImportError as exc:
                console.print(f"[yellow]skipped {name}: {exc}[/yellow]")
                break
            rate = words / secs
            best = max(best or 0.0, rate)
        if best is not None:
            results[name] = {"words": words, "words_per_sec": round(best, 1)}
            console.print(f"{name}: {best:,.0f} words/s")
    table = Table(title=f"word count, {n:,} sentences")
    for col in ("runner", "words/s", "vs plain loop", "vs bytewax"):
        table.add_column(col, justify="left" if col == "runner" else "right")
    plain = results.get("plain python loop", {}).get("words_per_sec")
    bw = results.get("bytewax (1 worker)", {}).get("words_per_sec")
    for name, r in results.items():
        rate = r["words_per_sec"]
        r["vs_plain"] = round(rate / plain, 4) if plain else None
        r["vs_bytewax"] = round(rate / bw, 3) if bw else None
        table.add_row(name, f"{rate:,.0f}", f"{r['vs_plain']:.3f}x" if plain else "-",
                      f"{r['vs_bytewax']:.2f}x" if bw else "-")
    console.print(table)
    RESULTS.mkdir(exist_ok=True)
    doc = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "sentences": n,
           "machine": {"python": platform.python_version(), "cpu": platform.processor()},
           "throughput": results}
    (RESULTS / "latest.json").write_text(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
