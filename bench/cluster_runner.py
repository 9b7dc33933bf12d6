"""The bench word count on a real two-worker cluster: ZooKeeper, Nimbus and two supervisors as
processes on this machine, one worker on each, tuples between them over ZeroMQ."""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.runners import TOPOLOGIES, build, sentences
from stormpy.bundle import build_bundle
from stormpy.cluster.zkserver import ZooKeeperServer
from stormpy.testing._cluster import ProcessCluster

CLUSTER_CONF = {
    "nimbus.monitor.freq.secs": 1,
    "supervisor.monitor.frequency.secs": 1,
    "worker.heartbeat.frequency.secs": 1,
}


@contextmanager
def two_worker_cluster() -> Iterator[tuple[ProcessCluster, Path]]:
    """ZooKeeper + Nimbus + 2 supervisors (1 slot each) and a bundle of bench/topologies."""
    with tempfile.TemporaryDirectory(prefix="stormpy-bench-") as tmp, ZooKeeperServer() as zk:
        bundle = build_bundle(TOPOLOGIES, Path(tmp) / "bench.zip").path
        with ProcessCluster(zk.connect_string, supervisors=2, slots_per_supervisor=1,
                            conf=CLUSTER_CONF) as cluster:
            cluster.start()
            yield cluster, Path(bundle)


def _read_reports(report: Path, prefix: str) -> list[dict[str, Any]]:
    out = []
    for p in report.glob(f"{prefix}-*.json"):
        try:
            out.append(json.loads(p.read_text()))
        except (OSError, ValueError):
            pass  # being replaced right now; read again next poll
    return out


def run_topology(cluster: ProcessCluster, bundle: Path, name: str, n: int, acking: bool,
                 rate: float = 0.0, timeout: float = 600.0, workload: str = "final",
                 batch: bool = False, workers: int = 2,
                 conf: dict[str, Any] | None = None, columns: bool = False) -> dict[str, Any]:
    """Submit the bench word count (``workload``; per-tuple, ``batch`` or ``columns`` bolts) over
    ``workers``
    workers (``conf``: more topology settings; ``rate``: sentences/s in all, 0 = flat out),
    wait until every word is counted (and, with acking, every sentence acked), kill it.

    The run is timed from the spout's first emit to the last word counted (with acking: or the
    last ack, whichever is later), the times the topology itself stamps (start-up, submission and
    the kill are outside). Returns words, seconds, the spout reports (complete latencies, split
    into warm-up and steady), the CPU seconds the worker processes used inside that window
    (sampled by psutil, interpolated at its ends), each worker's peak RSS and its USS once the
    clock stopped, and how long after the first emit the first word was counted.

    The spouts start together (``start_barrier``): once every spout task has opened (built its
    partition) the runner writes ``go``; before, one worker's spout could start up to ~1 s after
    the other's (each worker sees the activation through ZooKeeper on its own), with that
    start-up inside the clock."""
    words = sum(len(s.split()) for s in sentences(n))
    with tempfile.TemporaryDirectory(prefix="stormpy-bench-report-") as tmp:
        report = Path(tmp)
        # one spout task per worker, each splitting its own share of the sentences in its own
        # worker (as each Bytewax process reads and splits one partition); words cross to the
        # other worker by the fields grouping, as Bytewax exchanges them by key
        spec = build(n, acking, workload=workload, batch=batch, columns=columns, split=workers,
                     counters=workers,
                     spouts=workers, rate=rate / workers, report_dir=str(report),
                     local_split=True, start_barrier=True)
        topology_conf = {"topology.workers": workers,
                         "topology.acker.executors": 2 if acking else 0,
                         "topology.max.spout.pending": 5000 if acking else None,
                         "topology.message.timeout.secs": 60, **(conf or {})}
        client = cluster.client(timeout_secs=30)
        t_submit = time.time()
        client.submit(name, bundle, spec.to_doc(), topology_conf)
        deadline = time.monotonic() + timeout
        probe = WorkerProbe(cluster, name)
        # the start barrier: every spout task has built its partition; then all start at once
        while len(list(report.glob("ready-*.json"))) < workers:
            probe.sample()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name}: the spouts not ready after {timeout}s")
            time.sleep(0.01)
        (report / "go").touch()
        while True:
            probe.sample()
            counts = _read_reports(report, "count")
            spouts = _read_reports(report, "spout")
            counted = sum(c["count"] for c in counts)
            # every spout task reports once its share is emitted (acking: acked)
            if counted >= words and len(spouts) >= workers:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name}: counted {counted} of {words} words in {timeout}s")
            time.sleep(0.05)
        probe.sample(full=True)
        client.kill(name, wait_secs=0)
        probe.wait_exited()  # a worker may still write its report while the directory goes
    first = min(c["first"] for c in counts if c["first"])
    first_emit = min((s["first_emit"] for s in spouts if s.get("first_emit")), default=first)
    end = max(c["last"] for c in counts if c["last"])
    if acking:
        end = max(end, max(s["last_ack"] for s in spouts))
    start = min(first, first_emit)
    return {"words": words, "seconds": end - start, "first_tuple_after_submit": first - t_submit,
            "first_count_after_first_emit": first - first_emit,
            "cpu_seconds": round(probe.cpu_between(start, end), 4),
            "latencies": [x for s in spouts for x in s.get("latencies", [])],
            "warmup_latencies": [x for s in spouts for x in s.get("warmup_latencies", [])],
            "slow_spans": [[s["slow"][i], s["slow"][i + 1]] for s in spouts
                           for i in range(0, len(s.get("slow", [])), 2)],
            "failed": sum(s.get("failed", 0) for s in spouts),
            "worker_rss_mb": [round(v / 2**20, 1) for v in probe.peak_rss.values()],
            "worker_uss_mb": [round(v / 2**20, 1) for v in probe.peak_uss.values()]}


class WorkerProbe:
    """The worker processes of topology ``name`` under the cluster's supervisors (a previous
    topology's workers may still be exiting), sampled with psutil: peak RSS (every sample), USS
    (memory private to the process; only in a ``full`` sample, which the runner takes once the
    clock has stopped) and CPU time (user + system, all threads) with the time of each sample.

    USS is never read while the clock runs: psutil reads it from ``/proc/PID/smaps``, a walk of
    the worker's memory map under its lock (RSS and CPU times come from ``statm`` and
    ``stat``)."""

    def __init__(self, cluster: ProcessCluster, name: str) -> None:
        self.cluster = cluster
        self.topology_prefix = f"{name}-"  # Nimbus's ids are <name>-<time>-<random>
        self.procs: dict[int, Any] = {}
        self.peak_rss: dict[int, int] = {}
        self.peak_uss: dict[int, int] = {}
        self.cpu: dict[int, list[tuple[float, float]]] = {}

    def _find(self) -> None:
        import psutil

        for sup in self.cluster.supervisors:
            if sup.pid is None:
                continue
            try:
                children = psutil.Process(sup.pid).children(recursive=True)
            except psutil.Error:
                continue
            for child in children:
                try:
                    if child.pid in self.procs:
                        continue
                    cmd = child.cmdline()
                    if "stormpy.worker.process" in cmd and "--topology-id" in cmd and \
                            cmd[cmd.index("--topology-id") + 1].startswith(self.topology_prefix):
                        self.procs[child.pid] = child
                except psutil.Error:
                    continue

    def sample(self, full: bool = False) -> None:
        import psutil

        self._find()
        for pid, proc in self.procs.items():
            try:
                with proc.oneshot():
                    t = proc.cpu_times()
                    rss = proc.memory_info().rss
                    uss = proc.memory_full_info().uss if full else 0
            except psutil.Error:
                continue
            self.cpu.setdefault(pid, []).append((time.time(), t.user + t.system))
            self.peak_rss[pid] = max(self.peak_rss.get(pid, 0), rss)
            self.peak_uss[pid] = max(self.peak_uss.get(pid, 0), uss)

    def wait_exited(self, timeout: float = 60.0) -> None:
        """Wait until every worker process seen so far has exited (after the topology's kill)."""
        import psutil

        psutil.wait_procs(list(self.procs.values()), timeout=timeout)

    def cpu_between(self, start: float, end: float) -> float:
        """CPU seconds all workers used from ``start`` to ``end`` (linear between samples)."""
        return sum(_at(s, end) - _at(s, start) for s in self.cpu.values() if s)


def _at(samples: list[tuple[float, float]], t: float) -> float:
    """The sampled CPU time at ``t``, linear between the samples around it."""
    if t <= samples[0][0]:
        return samples[0][1]
    for (t0, c0), (t1, c1) in zip(samples, samples[1:], strict=False):
        if t0 <= t <= t1:
            return c0 + (c1 - c0) * ((t - t0) / (t1 - t0) if t1 > t0 else 1.0)
    return samples[-1][1]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def latency_summary(latencies: list[float]) -> dict[str, float]:
    ms = [x * 1000 for x in latencies]
    return {"tuples": len(ms), "p50_ms": round(percentile(ms, 50), 3),
            "p95_ms": round(percentile(ms, 95), 3), "p99_ms": round(percentile(ms, 99), 3),
            "max_ms": round(max(ms), 3), "mean_ms": round(statistics.fmean(ms), 3)}


def run_transactional(cluster: ProcessCluster, bundle: Path, name: str, n: int, batch_size: int,
                      timeout: float = 600.0) -> dict[str, Any]:
    """Submit the transactional word count (transactions of ``batch_size`` sentences, up to 3 in
    flight) over 2 workers, wait until every word is committed, kill it; return words, seconds and
    the commit latency of every transaction (first emit → commit on the last counter task)."""
    import uuid

    from bench_txwordcount import build as build_tx

    words = sum(len(s.split()) for s in sentences(n))
    with tempfile.TemporaryDirectory(prefix="stormpy-bench-report-") as tmp:
        report = Path(tmp)
        spec = build_tx(n, batch_size, report_dir=str(report))
        conf = {"topology.workers": 2, "topology.acker.executors": 2,
                "topology.max.spout.pending": 3, "topology.message.timeout.secs": 60,
                "transactional.zookeeper.root": f"/bench-transactional-{uuid.uuid4().hex[:8]}"}
        client = cluster.client(timeout_secs=30)
        client.submit(name, bundle, spec.to_doc(), conf)
        deadline = time.monotonic() + timeout
        while True:
            counts = _read_reports(report, "txcount")
            counted = sum(c["count"] for c in counts)
            if counted >= words:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name}: committed {counted} of {words} words in {timeout}s")
            time.sleep(0.1)
        client.kill(name, wait_secs=0)
        emits = _read_reports(report, "emit")
        probe = WorkerProbe(cluster, name)
        probe.sample()
        probe.wait_exited()  # a worker may still write its report while the directory goes
    emitted: dict[int, float] = {}
    for doc in emits:
        for txid, t in doc.items():
            emitted[int(txid)] = min(t, emitted.get(int(txid), t))
    committed: dict[int, float] = {}
    for doc in counts:
        for txid, t in doc["commits"].items():
            committed[int(txid)] = max(t, committed.get(int(txid), t))
    latencies = [committed[t] - emitted[t] for t in committed if t in emitted]
    start = min(emitted.values())
    end = max(committed.values())
    return {"words": words, "seconds": end - start, "transactions": len(committed),
            "commit_latencies": latencies}
