"""Runners: each processes the workload and returns (words, seconds).

Two workloads (see ``bench/topologies/bench_wordcount.py`` and ``bench/bytewax_flows.py``):
``final`` (count every word, keep one counter per word, nothing emitted per word) and
``running`` (emit the running ``(word, count)`` for every word to a sink that counts them).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOPOLOGIES = Path(__file__).resolve().parent / "topologies"
if str(TOPOLOGIES) not in sys.path:
    sys.path.insert(0, str(TOPOLOGIES))

from bench_wordcount import build  # noqa: E402
from bench_workload import sentences  # noqa: E402

from stormpy.host.ports import free_ports  # noqa: E402
from stormpy.testing import LocalCluster  # noqa: E402

WORKLOADS = ("final", "running")


def _words(n: int) -> int:
    return sum(len(s.split()) for s in sentences(n))


def plain_loop(n: int, workload: str) -> tuple[int, float]:
    """The ceiling: split and count in a Python loop, no framework (``running`` also counts a
    (word, count) pair per word, as a sink would)."""
    lines = sentences(n)
    t0 = time.perf_counter()
    counts: dict[str, int] = {}  # as the count bolts (a Counter is slower in both)
    if workload == "final":
        for line in lines:
            for word in line.split():
                counts[word] = counts.get(word, 0) + 1
    else:
        received = 0
        for line in lines:
            for word in line.split():
                c = counts.get(word, 0) + 1
                counts[word] = c
                pair = (word, c)
                if pair:
                    received += 1
    elapsed = time.perf_counter() - t0
    assert workload == "final" or received == sum(counts.values())  # a pair per word
    return sum(counts.values()), elapsed


def stormpy_local(n: int, workload: str, acking: bool, batch: bool = False,
                  max_pending: int = 5000, columns: bool = False,
                  from_first_emit: bool = False) -> tuple[int, float]:
    """stormpy local mode (one worker, one executor loop); acking on = every sentence tracked;
    ``batch``: the bolts' batch form (``execute_batch``); ``columns``: the columnar form (one
    ``ColumnBatch`` per split round and count task, ``execute_columns``). Timed from the
    submission (the worker's start included), or with ``from_first_emit`` from the spout's
    first emit (as the Storm peer's rounds are), to the poll that sees the last word counted
    (and, acking, the last sentence acked)."""
    words = _words(n)
    conf = {"topology.acker.executors": 1 if acking else 0,
            "topology.max.spout.pending": max_pending if acking else None}
    last = "sink" if workload == "running" else "count"
    with LocalCluster() as cluster:
        t0 = time.perf_counter()
        worker = cluster.submit_topology(
            "bench", conf, build(n, reliable=acking, workload=workload, batch=batch,
                                 columns=columns))

        def done() -> bool:
            stats = worker.stats()
            if acking:
                return stats["sentences"]["acked"] >= n
            return stats[last]["acked"] >= words  # acked: tick tuples are executed too
        while not done():
            if worker.failure is not None:
                raise worker.failure
            time.sleep(0.01)
        elapsed = time.perf_counter() - t0
        if from_first_emit:
            spout = next(r.instance for r in worker.tasks.values()
                         if r.component_id == "sentences")
            elapsed = time.time() - spout.first_emit
        stats = worker.stats()
    # every word reached the last bolt and was acked there (acked also counts its tick tuples
    # where a batch bolt acks them with the rest)
    assert stats["count" if last == "sink" else "split"]["emitted"] == words, stats
    assert stats[last]["acked"] >= words, stats
    return words, elapsed


def bytewax(n: int, workload: str) -> tuple[int, float]:
    """Bytewax (Rust core, one worker) running the workload's dataflow."""
    from bytewax.testing import run_main

    from bench.bytewax_flows import CountingSink, flow

    sentences(n)  # generated before the clock starts, as for every runner
    sink = CountingSink()
    df = flow(workload, n, 1, sink=sink)
    t0 = time.perf_counter()
    run_main(df)
    elapsed = time.perf_counter() - t0
    words = _words(n)
    expected = words if workload == "running" else len(set(" ".join(sentences(n)).split()))
    assert sink.items == expected, (sink.items, expected)
    return words, elapsed


def bytewax_processes(n: int, workload: str, processes: int = 2,
                      timeout: float = 600.0) -> dict[str, float]:
    """Bytewax with ``processes`` processes (one worker each) over a source with as many
    partitions, started the way ``python -m bytewax.testing -p N`` starts them (on free ports).
    Timed from the first sentence read to the last item written, as the stormpy cluster runs
    are; ``wall`` includes the processes' start-up; ``cpu_seconds``: the processes' CPU time
    over their run."""
    import json

    root = str(Path(__file__).resolve().parent.parent)
    with tempfile.TemporaryDirectory(prefix="stormpy-bench-bytewax-") as tmp:
        ports = free_ports(processes)
        addresses = ";".join(f"localhost:{p}" for p in ports)
        target = f"bench.bytewax_flows:flow({workload!r}, {n}, {processes}, {tmp!r})"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [root, os.environ.get("PYTHONPATH", "")])}
        t0 = time.time()
        procs = [subprocess.Popen([sys.executable, "-m", "bytewax.run", target, "-i", str(i),
                                   "-a", addresses], env=env, cwd=root)
                 for i in range(processes)]
        try:
            for p in procs:
                if p.wait(timeout) != 0:
                    raise RuntimeError(f"bytewax process exited with {p.returncode}")
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        wall = time.time() - t0
        docs = {f.name: json.loads(f.read_text()) for f in Path(tmp).glob("bw-*.json")}
    first = min(d["first"] for k, d in docs.items() if k.startswith("bw-source"))
    last = max(d["last"] for k, d in docs.items() if k.startswith("bw-sink") and d["items"])
    items = sum(d["items"] for k, d in docs.items() if k.startswith("bw-sink"))
    words = _words(n)
    expected = words if workload == "running" else len(set(" ".join(sentences(n)).split()))
    assert items == expected, (items, expected)
    # CPU seconds of each process from its first sentence read to its sink's close (the end of
    # its input), summed: the same window the stormpy cluster runs sample their workers in
    cpu0 = {d["pid"]: d["cpu"] for k, d in docs.items() if k.startswith("bw-source")}
    cpu1 = {d["pid"]: d["cpu"] for k, d in docs.items() if k.startswith("bw-sink")}
    cpu = sum(cpu1[pid] - cpu0[pid] for pid in cpu0 if pid in cpu1)
    return {"words": words, "seconds": last - first, "wall": wall, "cpu_seconds": round(cpu, 4)}
