"""``python -m bench.multilang_bench``: the word count's split bolt four ways, and Apache
Storm's shell path beside them, in one run.

1. native stormpy: a ``Bolt`` splitting each sentence, emits anchored, then the ack;
2. pystorm in-process: the same split as a pystorm ``Bolt`` (auto-anchor, auto-ack) through
   ``pystorm_component(cls)``: no subprocess, no serialisation;
3. pystorm over the shell host, JSON: ``pystorm_component(cls, shell=True)``, one subprocess
   speaking Storm's multilang protocol (what streamparse users run on Storm);
4. the same with msgpack (pystorm's ``MsgpackSerializer``);
5. Apache Storm's shell path (``--storm``, on when ``java`` and ``mvn`` are on PATH): Storm
   2.8's ``ShellBolt`` in its ``LocalCluster`` (``bench/peers/storm_shell_split.py``, one JVM
   for the whole run) running the very command row 3 runs
   (``python -m stormpy.multilang.pystorm_run bench.multilang_bench:PySplitBolt --serializer
   json``): the same component file and class, the same JSON serializer (Storm's
   ``JsonSerializer``, its default), the same sentences, the same topology (a reliable spout
   with message ids, ``topology.max.spout.pending`` 2000, one acker, the split bolt as one
   task, a counting sink acking each word) and the same clock; only the host differs.

Each row: a reliable spout emitting sentences (``topology.max.spout.pending`` 2000) → the split
bolt (one task) → a counting sink, in a ``LocalCluster`` (one worker, acking on); timed from the
sink's first word to the spout's last ack; the word count is checked. Rows run interleaved
``--repeat`` times (default 3), the best of each counts (each row also gives the median and
every run's rate). Reports sentences/s into the split bolt and sentences per CPU second (this
process and its subprocesses; for Storm the JVM and its subprocess: the shell path spends a
second core), each with its ratio to native; writes bench/results/multilang.json (or
``--output``). The shell rows (Storm's too) run a tenth of the sentences (they are that much
slower).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import psutil
from pystorm import Bolt as PystormBolt

from bench.peers.storm_peer import missing_tools
from stormpy import Bolt, Spout, TopologyBuilder, Tuple
from stormpy.multilang import pystorm_component
from stormpy.multilang._pystorm_spec import RUNNER
from stormpy.multilang._shell import python_command
from stormpy.testing import LocalCluster, WaitTimeout, wait_for
from stormpy.testing import _registry as registry
from stormpy.topology._context import TopologyContext

RESULTS = Path(__file__).parent / "results"
WORDS = ("the", "cow", "jumped", "over", "moon", "an", "apple", "a", "day", "keeps", "doctor",
         "away", "four", "score", "and", "seven", "years", "ago", "snow", "white", "dwarfs",
         "storm", "python", "bolt", "spout", "tuple")


def sentences(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 9))) for _ in range(n)]


#: processes (with their subprocesses) whose CPU the stormpy rows do not count: the Storm JVM,
#: which runs beside them for the whole bench
NOT_COUNTED: set[int] = set()


def _tree(proc: psutil.Process) -> list[psutil.Process]:
    """``proc``'s subprocesses, recursively, leaving out the trees of :data:`NOT_COUNTED`."""
    out = []
    for child in proc.children():
        if child.pid not in NOT_COUNTED:
            out.append(child)
            out.extend(_tree(child))
    return out


def cpu_seconds() -> float:
    """CPU time of this process (every thread) and of its running subprocesses."""
    total = time.process_time()
    for child in _tree(psutil.Process()):
        try:
            t = child.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system
    return total


def wait_for_subprocesses(timeout: float = 60.0) -> None:
    """Waits (up to ``timeout``) until the previous row's subprocesses are gone: one ending
    between a row's two CPU readings would take its CPU time out of the row's."""
    try:
        wait_for(lambda: not _tree(psutil.Process()), timeout, "the previous row's subprocesses "
                 "to exit", interval=0.05, ignore=(psutil.Error,))
    except WaitTimeout:
        print("warning: a subprocess outlived its row; its CPU time skews the next row's")


class _State:
    def __init__(self, rows: list[str]) -> None:
        self.rows = rows
        self.acked = 0
        self.words = 0
        self.first_word: float | None = None
        self.last_ack = 0.0
        self.cpu_first = 0.0
        self.cpu_last = 0.0


class SentenceSpout(Spout):
    outputs = ["sentence"]

    def __init__(self, key: str) -> None:
        self.key = key

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.state: _State = registry.lookup(self.key)
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < len(self.state.rows):
            self.emit([self.state.rows[self.i]], msg_id=self.i)
            self.i += 1

    def ack(self, msg_id: Any) -> None:
        state = self.state
        state.acked += 1
        if state.acked == len(state.rows):
            state.last_ack = time.perf_counter()
            state.cpu_last = cpu_seconds()

    def fail(self, msg_id: Any) -> None:
        self.emit([self.state.rows[msg_id]], msg_id=msg_id)


class NativeSplitBolt(Bolt):
    outputs = ["word"]

    def execute(self, tup: Tuple) -> None:
        for word in tup.values[0].split():
            self.emit([word], anchors=tup)
        self.ack(tup)


class PySplitBolt(PystormBolt):  # type: ignore[misc]
    """The streamparse word count's split bolt, as streamparse users write it."""

    outputs = ["word"]

    def process(self, tup: Any) -> None:
        for word in tup.values[0].split():
            self.emit([word])


class CountSink(Bolt):
    def __init__(self, key: str) -> None:
        self.key = key

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.state: _State = registry.lookup(self.key)

    def execute(self, tup: Tuple) -> None:
        state = self.state
        if state.first_word is None:
            state.first_word = time.perf_counter()
            state.cpu_first = cpu_seconds()
        state.words += 1
        self.ack(tup)


def run_split(split: Any, rows: list[str], timeout: float) -> dict[str, Any]:
    wait_for_subprocesses()
    state = _State(rows)
    key = registry.register(state)
    try:
        b = TopologyBuilder()
        b.set_spout("sentences", SentenceSpout, kwargs={"key": key})
        b.set_bolt("split", split).shuffle_grouping("sentences")
        b.set_bolt("sink", CountSink, kwargs={"key": key}).shuffle_grouping("split")
        with LocalCluster() as cluster:
            cluster.submit_topology("bench", {"topology.max.spout.pending": 2000},
                                    b.create_topology())
            def done() -> bool:
                if cluster.errors("bench"):
                    raise RuntimeError(f"the topology failed: {cluster.errors('bench')[0]}")
                return state.acked >= len(rows)
            wait_for(done, timeout, "every sentence acked")
        expected = sum(len(r.split()) for r in rows)
        if state.words < expected:
            raise AssertionError(f"{state.words} words counted, expected {expected}")
        assert state.first_word is not None
        secs = state.last_ack - state.first_word
        cpu = state.cpu_last - state.cpu_first
        return {"sentences": len(rows), "words": expected, "seconds": round(secs, 3),
                "sentences_per_sec": round(len(rows) / secs),
                "cpu_seconds": round(cpu, 3), "sentences_per_cpu_sec": round(len(rows) / cpu)}
    finally:
        registry.unregister(key)


def storm_row(r: dict[str, Any]) -> dict[str, Any]:
    """A Storm round's answer as a row (the word count checked)."""
    if r["counted"] < r["words"]:
        raise AssertionError(f"Storm: {r['counted']} words counted, expected {r['words']}")
    secs, cpu = r["seconds"], r["cpu_seconds"]
    return {"sentences": r["sentences"], "words": r["words"], "seconds": round(secs, 3),
            "sentences_per_sec": round(r["sentences"] / secs),
            "cpu_seconds": round(cpu, 3), "sentences_per_cpu_sec": round(r["sentences"] / cpu)}


def open_storm(shell_rows: list[str], component: str,
               stack: ExitStack) -> Callable[[], dict[str, Any]]:
    """Starts the Storm JVM (its LocalCluster) over ``shell_rows``; returns one round's runner.
    Its ShellBolt runs the JSON shell row's command for ``component`` (``module:Class``), which
    imports it as the stormpy subprocess does (the repository root on PYTHONPATH: Storm runs
    the command in its own directory)."""
    from bench.peers.storm_peer import write_sentences
    from bench.peers.storm_shell_split import StormShellSplit
    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="stormpy-ml-bench-")))
    write_sentences(shell_rows, tmp / "sentences.txt")
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    command = python_command(RUNNER, component, "--serializer", "json")
    storm = stack.enter_context(StormShellSplit(tmp / "sentences.txt", command, env))
    NOT_COUNTED.add(storm.proc.pid)
    return lambda: storm_row(storm.run(len(shell_rows)))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.multilang_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=50_000,
                        help="sentences for the in-process rows (the shell rows get a tenth)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each row, interleaved; the best counts (a shared machine)")
    parser.add_argument("--storm", action=argparse.BooleanOptionalAction,
                        default=not missing_tools(),
                        help="the Apache Storm shell row (default: on when java and mvn are "
                             "on PATH; builds bench/peers/storm with Maven)")
    parser.add_argument("--output", type=Path, default=RESULTS / "multilang.json")
    args = parser.parse_args()
    # the classes by this module's importable name (not __main__): subprocesses import them
    from bench.multilang_bench import NativeSplitBolt, PySplitBolt
    rows = sentences(args.sentences)
    shell_rows = rows[:max(1, args.sentences // 10)]
    shell_json = pystorm_component(PySplitBolt, shell=True, serializer="json")
    cases: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        (name, functools.partial(run_split, split, data, 600)) for name, split, data in [
            ("native stormpy", NativeSplitBolt, rows),
            ("pystorm in-process", pystorm_component(PySplitBolt), rows),
            ("pystorm shell, JSON", shell_json, shell_rows),
            ("pystorm shell, msgpack",
             pystorm_component(PySplitBolt, shell=True, serializer="msgpack"), shell_rows)]]
    results: dict[str, Any] = {}
    every: dict[str, list[int]] = {}
    with ExitStack() as stack:
        if args.storm:
            cases.append(("Storm 2.8 ShellBolt, JSON",
                          open_storm(shell_rows, shell_json.path, stack)))
        for _ in range(args.repeat):  # interleaved: A B C D E, A B C D E, ...
            for name, run in cases:
                r = run()
                every.setdefault(name, []).append(r["sentences_per_sec"])
                if (name not in results
                        or r["sentences_per_sec"] > results[name]["sentences_per_sec"]):
                    results[name] = r
    for name, rates in every.items():
        results[name]["every_run_sentences_per_sec"] = rates
        results[name]["median_sentences_per_sec"] = round(statistics.median(rates))
    native = results["native stormpy"]["sentences_per_sec"]
    inproc = results["pystorm in-process"]["sentences_per_sec"]
    native_cpu = results["native stormpy"]["sentences_per_cpu_sec"]
    print(f"{'split bolt':28} {'sentences/s':>12} {'x native':>9} {'per CPU-s':>10} {'x native':>9}"
          f" {'median/s':>9}")
    for name, r in results.items():
        r["ratio_to_native"] = round(r["sentences_per_sec"] / native, 3)
        r["cpu_ratio_to_native"] = round(r["sentences_per_cpu_sec"] / native_cpu, 3)
        print(f"{name:28} {r['sentences_per_sec']:>12,} {r['ratio_to_native']:>9.3f} "
              f"{r['sentences_per_cpu_sec']:>10,} {r['cpu_ratio_to_native']:>9.3f} "
              f"{r['median_sentences_per_sec']:>9,}")
    shell = [results[n] for n in ("pystorm shell, JSON", "pystorm shell, msgpack")]
    summary = {
        "in_process_vs_best_shell": round(inproc / max(r["sentences_per_sec"] for r in shell), 1),
        "in_process_vs_best_shell_per_cpu": round(
            results["pystorm in-process"]["sentences_per_cpu_sec"]
            / max(r["sentences_per_cpu_sec"] for r in shell), 1),
        "native_vs_in_process": round(native / inproc, 2)}
    print(f"in-process / best shell path: {summary['in_process_vs_best_shell']}x wall, "
          f"{summary['in_process_vs_best_shell_per_cpu']}x per CPU second; "
          f"native / in-process: {summary['native_vs_in_process']}x")
    storm = results.get("Storm 2.8 ShellBolt, JSON")
    if storm is not None:
        ours, theirs = results["pystorm shell, JSON"], storm
        summary["shell_json_vs_storm"] = round(
            ours["sentences_per_sec"] / theirs["sentences_per_sec"], 2)
        summary["shell_json_vs_storm_per_cpu"] = round(
            ours["sentences_per_cpu_sec"] / theirs["sentences_per_cpu_sec"], 2)
        summary["in_process_vs_storm_shell"] = round(inproc / theirs["sentences_per_sec"], 1)
        print(f"stormpy shell (JSON) / Storm shell (JSON): {summary['shell_json_vs_storm']}x "
              f"wall, {summary['shell_json_vs_storm_per_cpu']}x per CPU second; in-process / "
              f"Storm shell: {summary['in_process_vs_storm_shell']}x")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "python": platform.python_version(), "machine": platform.machine(),
        "load_average": os.getloadavg(), "cpus": os.cpu_count(),
        "rows": results, "summary": summary}, indent=2))
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
