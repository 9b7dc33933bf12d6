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

``--ops registered|counter|eventlogger`` (per-tuple form) measures what the operations features
cost on the tuple path: ``registered``, every task registers one user metric of each kind
(counter, gauge, histogram, meter, timer) and updates none; ``counter``, the count bolt also
increments a user counter per word (``bench_wordcount.BenchCountMetered``); ``eventlogger``,
an event logger samples every task (100%) and is then turned off before the run (the wrappers
put on and taken off, as ``stormpy debug --enable`` then ``--disable`` do). Compare each with the
run without ``--ops``.

``--framework`` measures, the same two-run way, the plain Python loop doing the same split and
count (``bench.runners.plain_loop``), Bytewax (``bench.bytewax_flows``, one worker, ``run_main``)
and stormpy's per-tuple form (the README's code; ``--acking`` for acking on), and prints each
framework's instructions per word beyond the plain loop's: what the framework costs per word,
measured the same way for both (the workload's generation cancels in the subtraction).

``--hop [--acking] [--breakdown]`` counts what a tuple costs to cross between two workers,
sender plus receiver (``bench/instructions_hop.py``): the same count on two in-process workers
exchanging real frames, minus one worker, per crossing word; ``--breakdown`` splits it into
the outbox writes, msgpack's packing and unpacking, the inbound checks and the acker messages.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys

from bench.runners import TOPOLOGIES  # noqa: F401 - puts bench/topologies on sys.path


def run(n: int, workload: str, acking: bool, batch: bool, columns: bool | str = False,
        ops: str | None = None) -> int:
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
    spec = build(n, acking, workload=workload, batch=batch, columns=columns)
    if ops == "counter":
        spec.components["count"].class_path = "bench_wordcount:BenchCountMetered"
    worker = Worker(WorkerConfig("instructions", spec, conf))
    worker.tune_gc()
    if ops == "registered":
        for runner in worker.tasks.values():
            ctx = runner.context
            ctx.register_counter("c")
            ctx.register_gauge("g", lambda: 1)
            ctx.register_histogram("h")
            ctx.register_meter("m")
            ctx.register_timer("t")
    worker.open()
    if ops == "eventlogger":
        import tempfile
        from pathlib import Path

        from stormpy.worker.event_logger import EventLogger

        logger = EventLogger(Path(tempfile.mkdtemp()) / "events.log", "instructions")
        logger.apply(worker.tasks.values(), {"instructions": {"enable": True, "samplingpct": 100.0}})
        logger.apply(worker.tasks.values(), {})
        logger.stop()
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
    cmd += ["--ops", args.ops] if getattr(args, "ops", None) else []
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
    parser.add_argument("--ops", choices=["registered", "counter", "eventlogger"], default=None,
                        help="with a user metric of each kind registered, a user counter "
                             "incremented per word, or the event logger turned on then off")
    parser.add_argument("--small", type=int, default=3000)
    parser.add_argument("--large", type=int, default=9000)
    parser.add_argument("--loop", action="store_true",
                        help="count only inside the executor loop's rounds (Worker.run_once; "
                             "compiled path only), one run of --large sentences")
    parser.add_argument("--framework", action="store_true",
                        help="the plain loop, Bytewax and stormpy's per-tuple form, and each "
                             "framework's instructions per word beyond the plain loop's")
    parser.add_argument("--hop", action="store_true",
                        help="instructions per tuple that crosses workers, sender plus receiver "
                             "(bench/instructions_hop.py): two workers minus one")
    parser.add_argument("--breakdown", action="store_true",
                        help="with --hop (compiled path): the hop's parts per crossing word")
    parser.add_argument("--symbols", type=int, default=0,
                        help="with --breakdown: also print the N costliest functions (inclusive)")
    parser.add_argument("--runner", default="stormpy", choices=["stormpy", "bytewax", "plain"],
                        help=argparse.SUPPRESS)
    parser.add_argument("--run", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.hop:
        hop(args, parser)
        return
    if args.run and args.runner != "stormpy":
        print("words", run_peer(args.runner, args.run, args.workload))
        return
    if args.framework:
        framework(args)
        return
    if args.run:
        columns: bool | str = "sentence" if args.columns and args.per_sentence else args.columns
        print("words", run(args.run, args.workload, args.acking, args.batch, columns, args.ops))
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
          f"{form}{', ops ' + args.ops if args.ops else ''}, "
          f"{'compiled' if native.COMPILED else 'pure'}: {(i2 - i1) / (w2 - w1):,.0f} "
          "instructions per word")


def hop(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """``--hop``: see bench/instructions_hop.py."""
    from bench import instructions_hop

    if args.run:
        print("words", instructions_hop.run_two(args.run, args.workload, args.acking))
        return
    if args.breakdown:
        instructions_hop.breakdown(args)
        return
    import stormpy._native as native

    extra = ["--workload", args.workload] + ["--acking"] * args.acking
    one = instructions_hop.per_word(args.small, args.large, extra)
    two = instructions_hop.per_word(args.small, args.large, ["--hop", *extra])
    print(f"{args.workload}, acking {'on' if args.acking else 'off'}, per-tuple, "
          f"{'compiled' if native.COMPILED else 'pure'}: one worker {one:,.0f}, two workers "
          f"{two:,.0f} instructions per word; the hop: {two - one:,.0f} per crossing word")


def run_peer(runner: str, n: int, workload: str) -> int:
    """One run of the plain loop or Bytewax over ``n`` sentences, with the same work around it
    as ``run`` (the sentences generated, their words counted once); returns the words."""
    from bench import runners
    from bench.bytewax_flows import CountingSink, flow

    lines = runners.sentences(n)
    words = sum(len(s.split()) for s in lines)
    if runner == "plain":
        counted = runners.plain_loop(n, workload)[0]
    elif runner == "bytewax":
        from bytewax.testing import run_main

        sink = CountingSink()
        run_main(flow(workload, n, 1, sink=sink))
        counted = words if workload == "final" else sink.items  # final: one item per word kind
    else:
        raise ValueError(f"unknown runner {runner!r} (plain or bytewax)")
    if counted != words:
        raise RuntimeError(f"{runner} counted {counted} words of {words}")
    return words


def count_peer(runner: str, n: int, workload: str) -> tuple[int, int]:
    """Instructions (callgrind) and words of one ``run_peer`` process."""
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
           "-m", "bench.instructions", "--runner", runner, "--run", str(n), "--workload",
           workload]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "0"})
    m = re.search(r"Collected : (\d+)", out.stderr)
    words = re.search(r"words (\d+)", out.stdout)
    if not m or not words:
        raise RuntimeError(f"no instruction count in: {out.stderr[-2000:]}{out.stdout[-500:]}")
    return int(m.group(1)), int(words.group(1))


def framework(args: argparse.Namespace) -> None:
    """Instructions per word of the plain loop, Bytewax and stormpy's per-tuple form (two runs
    each, ``--small`` and ``--large`` sentences), and the frameworks' beyond the plain loop."""
    import stormpy._native as native

    per_word: dict[str, float] = {}
    stormpy_args = argparse.Namespace(**{**vars(args), "batch": False, "columns": False,
                                         "per_sentence": False, "loop": False})
    acking = f"acking {'on' if args.acking else 'off'}"
    names = {"plain": "plain python loop", "bytewax": "bytewax (1 worker)",
             "stormpy": f"stormpy per-tuple (README form), {acking}, "
                        f"{'compiled' if native.COMPILED else 'pure'}"}
    for runner in names:
        if runner == "stormpy":
            (i1, w1), (i2, w2) = count(args.small, stormpy_args), count(args.large, stormpy_args)
        else:
            (i1, w1), (i2, w2) = (count_peer(runner, args.small, args.workload),
                                  count_peer(runner, args.large, args.workload))
        per_word[runner] = (i2 - i1) / (w2 - w1)
    plain = per_word["plain"]
    print(f"{args.workload}: instructions per word (callgrind, {args.large} - {args.small} "
          "sentences)")
    for runner, name in names.items():
        extra = "" if runner == "plain" else \
            f"; framework: {per_word[runner] - plain:,.0f} beyond the plain loop"
        print(f"  {name}: {per_word[runner]:,.0f}{extra}")


if __name__ == "__main__":
    main()
