"""Instructions per word of the local word count, counted with callgrind (repeatable on a noisy
machine, unlike time).

``python -m bench.instructions [--workload final|running] [--acking] [--batch | --columns]`` runs
the bench
topology twice under ``valgrind --tool=callgrind`` (``--small`` and ``--large`` sentences) and
prints (instructions of the large run - those of the small run) / (words of the difference):
start-up, imports and the workload's generation cancel out. ``--run N`` (used by the above) runs
the topology once over N sentences, driving ``Worker.run_once`` on the main thread, with the
``random`` module seeded from N: the latency sampling's gaps, the shuffles and the root and edge
ids are the same in every run, so two builds are compared on the same work (unseeded, the counts
of one build varied by a few tens of instructions per word).

``--loop`` (compiled path) counts only inside ``Worker.run_once`` (callgrind's
``--toggle-collect``), over one run of ``--large`` sentences: the executor loop's instructions
per word without the workload's generation, imports or start-up, which the difference above
still includes in part (generating the sentences grows with their number).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys

from bench.runners import TOPOLOGIES  # noqa: F401 - puts bench/topologies on sys.path


def run(n: int, workload: str, acking: bool, batch: bool, columns: bool | str = False) -> int:
    from bench_wordcount import build
    from bench_workload import sentences

    from stormpy.worker.factory import WorkerConfig
    from stormpy.worker.loop import Worker

    random.seed(n)  # sampling gaps, shuffles, root and edge ids: the same in every run
    lines = sentences(n)
    words = sum(len(s.split()) for s in lines)
    # the message timeout far beyond the run: under callgrind on a busy machine a run can take
    # longer than the default 30 s, and tuples timed out and replayed would be counted as work
    conf = {"topology.acker.executors": 1 if acking else 0,
            "topology.max.spout.pending": 5000 if acking else None,
            "topology.message.timeout.secs": 3600}
    worker = Worker(WorkerConfig("instructions", build(n, acking, workload=workload, batch=batch,
                                                       columns=columns), conf))
    worker.tune_gc()
    worker.open()
    last = "sink" if workload == "running" else "count"
    instance = next(r.instance for r in worker.tasks.values() if r.component_id == last)
    spout = next(r.instance for r in worker.tasks.values() if r.component_id == "sentences")
    while instance.n < words or (acking and spout.acked < n):
        worker.run_once()
    return words


def count(n: int, args: argparse.Namespace) -> tuple[int, int]:
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    if args.loop:  # only what runs inside the compiled Worker.run_once
        cmd.append("--toggle-collect=CPyDef_loop___Worker___run_once")
    cmd += [sys.executable, "-m", "bench.instructions", "--run", str(n), "--workload",
            args.workload]
    cmd += ["--acking"] * args.acking + ["--batch"] * args.batch + ["--columns"] * args.columns
    cmd += ["--per-sentence"] * args.per_sentence
    out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "0"})
    m = re.search(r"Collected : (\d+)", out.stderr)
    words = re.search(r"words (\d+)", out.stdout)
    if not m or not words:
        raise RuntimeError(f"no instruction count in: {out.stderr[-2000:]}{out.stdout[-500:]}")
    return int(m.group(1)), int(words.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.instructions", description=__doc__)
    parser.add_argument("--workload", default="final", choices=["final", "running"])
    parser.add_argument("--acking", action="store_true")
    parser.add_argument("--batch", action="store_true", help="the execute_batch bolts")
    parser.add_argument("--columns", action="store_true",
                        help="the columnar bolts (execute_columns), one batch per split round")
    parser.add_argument("--per-sentence", action="store_true",
                        help="with --columns: one batch per sentence (per-tuple replay "
                             "granularity)")
    parser.add_argument("--small", type=int, default=3000)
    parser.add_argument("--large", type=int, default=9000)
    parser.add_argument("--loop", action="store_true",
                        help="count only inside the executor loop's rounds (Worker.run_once; "
                             "compiled path only), one run of --large sentences")
    parser.add_argument("--run", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        columns: bool | str = "sentence" if args.columns and args.per_sentence else args.columns
        print("words", run(args.run, args.workload, args.acking, args.batch, columns))
        return
    import stormpy._native as native

    form = ("columns per sentence" if args.per_sentence else "columns") if args.columns else \
        "batch" if args.batch else "per-tuple"

    if args.loop:
        if not native.COMPILED:
            parser.error(f"--loop needs the compiled tuple path ({native.PURE_REASON})")
        ins, words = count(args.large, args)
        print(f"{args.workload}, acking {'on' if args.acking else 'off'}, "
              f"{form}, compiled, executor loop only: "
              f"{ins / words:,.0f} instructions per word")
        return

    (i1, w1), (i2, w2) = count(args.small, args), count(args.large, args)
    print(f"{args.workload}, acking {'on' if args.acking else 'off'}, "
          f"{form}, "
          f"{'compiled' if native.COMPILED else 'pure'}: {(i2 - i1) / (w2 - w1):,.0f} "
          "instructions per word")


if __name__ == "__main__":
    main()
