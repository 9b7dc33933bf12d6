"""The soak: a reliable word count on a real cluster (ZooKeeper, Nimbus, two supervisors as
processes on this machine) at a steady rate for a long time, one worker ``kill -9`` every few
minutes, every daemon's and worker's resources sampled and checked for growth.

``python -m bench.soak --minutes 120 --out DIR`` (``make soak``; ``SOAK_MINUTES`` shortens it).

Contract:

* The topology is the durable file word count of the cluster tests (``filewc``): two spout tasks
  emit ``rate`` sentences/s in all, each with a message id, and append every acked id to a ledger
  file; a restarted spout re-emits the ids of its share not in its ledger. The spouts emit exactly
  ``rate * seconds`` ids, so at the end ``lost`` (ids never acked) must be 0.
* Every ``kill_every`` seconds one worker process (alternating between them) gets SIGKILL; the
  supervisor restarts it.
* Every ``interval`` seconds (60 s, or the run's length / 30 when shorter) it samples RSS (MB),
  open file descriptors and threads of ZooKeeper, Nimbus, each supervisor and each live worker
  (keyed by role and pid), and the number of znodes under the cluster's ZooKeeper root; the rows go
  to ``samples.csv`` and a plot to ``soak.png`` (matplotlib, the ``soak`` extra).
* After the warm-up (the first quarter of the run, at least two samples) a least-squares slope is
  fitted per series; :data:`BOUNDS` are the limits per hour. A daemon series is checked over the
  whole run after warm-up; a worker's only over a life long enough to fit (worker processes are
  killed on purpose) and against the worker bounds. The verdict, slopes and counts go to
  ``summary.json``; the exit status is 1 when a bound is exceeded or an id was lost.
* Every process it started is stopped on the way out, also on an exception or Ctrl-C.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from kazoo.client import KazooClient

from stormpy.bundle import build_bundle
from stormpy.cluster.zkserver import ZooKeeperServer
from stormpy.host.waiting import WaitTimeout, wait_for
from stormpy.testing._cluster import FAST_TIMEOUTS, ProcessCluster

TOPOLOGIES = Path(__file__).resolve().parent.parent / "tests" / "integration" / "nimbus_topologies"

#: Growth allowed per hour after warm-up: (RSS MB, fds, threads); znodes per hour.
BOUNDS: dict[str, tuple[float, float, float]] = {
    "daemon": (20.0, 6.0, 3.0),
    "worker": (60.0, 12.0, 6.0),
}
ZNODE_BOUND = 10.0
#: Growth always allowed over the checked span (noise of a short run): (RSS MB, fds, threads,
#: znodes) — one more connection or thread in a ten-minute run is not a rate.
TOLERANCE = {"rss_mb": 5.0, "fds": 2.0, "threads": 1.0, "znodes": 2.0}
#: ZooKeeper runs with -Xmx256m: its RSS may grow into the heap, never past this.
ZK_RSS_CEILING_MB = 512.0
METRICS = ("rss_mb", "fds", "threads")


@dataclass
class Series:
    """One process's (or the znode count's) samples: (minutes since start, value) per metric."""
    role: str
    pid: int
    points: dict[str, list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))


def slope_per_hour(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (minute, value) points, per hour; None under three points."""
    if len(points) < 3:
        return None
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return None
    return 60.0 * sum((x - mx) * (y - my) for x, y in points) / sxx


def count_znodes(zk: KazooClient, path: str) -> int:
    total = 1
    try:
        children = zk.get_children(path)
    except Exception:  # noqa: BLE001 - a node removed while counting
        return 0
    for child in children:
        total += count_znodes(zk, f"{path.rstrip('/')}/{child}")
    return total


def process_sample(pid: int) -> tuple[float, int, int] | None:
    try:
        p = psutil.Process(pid)
        with p.oneshot():
            return p.memory_info().rss / 2 ** 20, p.num_fds(), p.num_threads()
    except psutil.Error:
        return None


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f}/{five:.2f}"


def run(minutes: float, out: Path, rate: float = 100.0, kill_every: float | None = None,
        interval: float | None = None, log: Any = print) -> dict[str, Any]:
    """Run the soak for ``minutes``; write samples.csv, soak.png and summary.json into ``out``."""
    sys.path.insert(0, str(TOPOLOGIES))
    import filewc  # the cluster tests' topology, shipped in the same bundle

    seconds = minutes * 60.0
    kill_every = kill_every if kill_every is not None else (600.0 if minutes >= 60 else seconds / 4)
    interval = interval if interval is not None else min(60.0, seconds / 30)
    warmup = max(seconds / 4, 2 * interval)
    out.mkdir(parents=True, exist_ok=True)
    count = int(rate * seconds)
    series: dict[tuple[str, int], Series] = {}
    rows: list[dict[str, Any]] = []
    kills: list[float] = []
    with tempfile.TemporaryDirectory(prefix="stormpy-soak-") as tmp, ZooKeeperServer(heap_mb=256) as zk:
        ledger = Path(tmp) / "ledger"
        ledger.mkdir()
        bundle = build_bundle(TOPOLOGIES, Path(tmp) / "filewc.zip").path
        root = f"/stormpy-soak-{uuid.uuid4().hex[:8]}"
        zkc = KazooClient(hosts=zk.connect_string, timeout=30.0)
        zkc.start(timeout=30)
        cluster = ProcessCluster(zk.connect_string, supervisors=2, slots_per_supervisor=1,
                                 base_dir=Path(tmp) / "cluster", zk_root=root, conf=FAST_TIMEOUTS)
        try:
            cluster.start(timeout_secs=120)
            spec = filewc.build(str(ledger), count, rate / 2).to_doc()
            conf = {"topology.workers": 2, "topology.message.timeout.secs": 30,
                    "topology.max.spout.pending": 2000}
            tid = cluster.client().submit("soak", bundle, spec, conf)
            wait_for(lambda: len(cluster.worker_processes(tid)) == 2, 180, "both workers to run",
                     interval=1.0)
            start = time.monotonic()
            next_sample = start
            next_kill = start + kill_every
            victim = 0
            zk_pid = zk.pid
            while True:
                now = time.monotonic()
                if now >= next_sample:
                    minute = (now - start) / 60.0
                    procs: list[tuple[str, int | None]] = [("zookeeper", zk_pid),
                                                           ("nimbus", cluster.nimbus.pid)]
                    procs += [(f"supervisor-{i}", s.pid) for i, s in enumerate(cluster.supervisors)]
                    procs += [("worker", pid) for pid, _ in cluster.worker_processes(tid)]
                    for role, pid in procs:
                        if pid is None:
                            continue
                        sample = process_sample(pid)
                        if sample is None:
                            continue
                        s = series.setdefault((role, pid), Series(role, pid))
                        for metric, value in zip(METRICS, sample, strict=True):
                            s.points[metric].append((minute, value))
                        rows.append({"minute": round(minute, 3), "role": role, "pid": pid,
                                     "rss_mb": round(sample[0], 2), "fds": sample[1],
                                     "threads": sample[2]})
                    znodes = count_znodes(zkc, root)
                    series.setdefault(("znodes", 0), Series("znodes", 0)).points["znodes"].append(
                        (minute, znodes))
                    rows.append({"minute": round(minute, 3), "role": "znodes", "pid": 0, "znodes": znodes})
                    acked = len(filewc.acked_ids(ledger))
                    log(f"[soak] {minute:6.1f} min  acked {acked}  znodes {znodes}  load {load()}")
                    next_sample += interval
                if now - start >= seconds:
                    break
                if now >= next_kill:
                    workers = sorted(pid for pid, _ in cluster.worker_processes(tid))
                    if workers:
                        pid = workers[victim % len(workers)]
                        os.kill(pid, signal.SIGKILL)
                        kills.append((now - start) / 60.0)
                        log(f"[soak] kill -9 worker {pid} at {(now - start) / 60:.1f} min")
                        victim += 1
                    next_kill += kill_every
                time.sleep(max(0.05, min(next_sample, next_kill) - time.monotonic()))
            emitted_by = time.monotonic()
            try:
                wait_for(lambda: filewc.acked_ids(ledger) == set(range(count)), 300,
                         f"all {count} ids to be acked", interval=2.0)
            except WaitTimeout:
                log("[soak] ids still unacked 300 s after the last emit: counted as lost")
            drain_secs = time.monotonic() - emitted_by
            acked_ids = filewc.acked_ids(ledger)
            lost = count - len(acked_ids & set(range(count)))
            cluster.client().kill("soak", 0)
        finally:
            zkc.stop()
            zkc.close()
            cluster.stop()
    summary = verdict(series, warmup / 60.0, minutes, lost, count, kills, rate, drain_secs)
    write_outputs(out, rows, series, summary, kills)
    return summary


def verdict(series: dict[tuple[str, int], Series], warmup_min: float, minutes: float, lost: int,
            count: int, kills: list[float], rate: float, drain_secs: float) -> dict[str, Any]:
    """The checks: a slope per series after warm-up (the fitted growth over the checked span may
    always reach :data:`TOLERANCE`) (a worker's warm-up is counted from its own
    first sample, since workers are restarted on purpose), against :data:`BOUNDS`; ZooKeeper's
    RSS against :data:`ZK_RSS_CEILING_MB` instead (a JVM grows into its heap before it collects)."""
    checks = []
    for (role, pid), s in sorted(series.items()):
        kind = "worker" if role == "worker" else "daemon"
        for metric, points in s.points.items():
            begin = points[0][0] + warmup_min if kind == "worker" else warmup_min
            after = [p for p in points if p[0] >= begin]
            slope = slope_per_hour(after)
            if slope is None:
                continue
            check: dict[str, Any] = {"role": role, "pid": pid, "metric": metric, "samples": len(after),
                                     "first": after[0][1], "last": after[-1][1],
                                     "slope_per_hour": round(slope, 3)}
            if role == "zookeeper" and metric == "rss_mb":
                peak = max(v for _, v in after)
                check.update(ceiling=ZK_RSS_CEILING_MB, peak=round(peak, 1), ok=peak <= ZK_RSS_CEILING_MB)
            else:
                bound = ZNODE_BOUND if metric == "znodes" else BOUNDS[kind][METRICS.index(metric)]
                hours = (after[-1][0] - after[0][0]) / 60.0
                growth = slope * hours
                check.update(bound_per_hour=bound, growth=round(growth, 2),
                             ok=growth <= max(bound * hours, TOLERANCE[metric]))
            checks.append(check)
    return {"minutes": minutes, "rate": rate, "ids": count, "lost": lost, "kills": len(kills),
            "kill_minutes": [round(k, 2) for k in kills],
            "drain_secs": round(drain_secs, 1), "warmup_minutes": round(warmup_min, 2),
            "checks": checks, "ok": lost == 0 and all(c["ok"] for c in checks)}


def read_samples(path: Path) -> dict[tuple[str, int], Series]:
    """The series of a samples.csv written by :func:`write_outputs`."""
    series: dict[tuple[str, int], Series] = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            role, pid, minute = row["role"], int(row["pid"]), float(row["minute"])
            s = series.setdefault((role, pid), Series(role, pid))
            for metric in (*METRICS, "znodes"):
                if row.get(metric):
                    s.points[metric].append((minute, float(row[metric])))
    return series


def recheck(out: Path) -> dict[str, Any]:
    """Recompute the checks and the plot of a finished run in ``out`` from its samples.csv and
    summary.json (the run's ids, losses and kill times)."""
    old = json.loads((out / "summary.json").read_text())
    series = read_samples(out / "samples.csv")
    summary = verdict(series, old["warmup_minutes"], old["minutes"], old["lost"], old["ids"],
                      old.get("kill_minutes", []), old["rate"], old["drain_secs"])
    with open(out / "samples.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    write_outputs(out, rows, series, summary, summary["kill_minutes"])
    return summary


def write_outputs(out: Path, rows: list[dict[str, Any]], series: dict[tuple[str, int], Series],
                  summary: dict[str, Any], kills: list[float]) -> None:
    with open(out / "samples.csv", "w", newline="") as f:
        w = csv.DictWriter(f, ["minute", "role", "pid", "rss_mb", "fds", "threads", "znodes"])
        w.writeheader()
        w.writerows(rows)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("[soak] matplotlib missing (pip install stormpy[soak]): no soak.png", file=sys.stderr)
        return
    fig, axes = plt.subplots(2, 2, figsize=(12, 8), sharex=True)
    panels = [("rss_mb", "RSS (MB)"), ("fds", "open fds"), ("threads", "threads"), ("znodes", "znodes")]
    for ax, (metric, title) in zip(axes.flat, panels, strict=True):
        for (role, _pid), s in sorted(series.items()):
            pts = s.points.get(metric)
            if not pts:
                continue
            label = role if role != "worker" else None
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "-" if role != "worker" else ":",
                    label=label, color="grey" if role == "worker" else None)
        for k in kills:
            ax.axvline(k, color="red", alpha=0.2)
        ax.axvline(summary["warmup_minutes"], color="black", linestyle="--", alpha=0.4)
        ax.set_title(title)
        ax.set_xlabel("minutes")
        if metric != "znodes":
            ax.legend(fontsize=7)
    fig.suptitle(f"soak: {summary['minutes']:g} min, {summary['rate']:g} sentences/s, "
                 f"{summary['kills']} worker kill -9 (red), lost {summary['lost']} "
                 f"(workers dotted grey; dashed: end of warm-up)")
    fig.tight_layout()
    fig.savefig(out / "soak.png", dpi=80)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=float(os.environ.get("SOAK_MINUTES", "120")))
    parser.add_argument("--rate", type=float, default=100.0, help="sentences/s in all")
    parser.add_argument("--kill-every", type=float, default=None, help="seconds between worker kills")
    parser.add_argument("--out", type=Path, default=Path("soak-out"))
    parser.add_argument("--recheck", action="store_true",
                        help="recompute the checks and the plot of the run already in --out")
    args = parser.parse_args(argv)
    if args.recheck:
        return report(recheck(args.out), args.out)

    def interrupted(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupted)  # stop the cluster on the way out, as on Ctrl-C
    summary = run(args.minutes, args.out, args.rate, args.kill_every, log=lambda m: print(m, flush=True))
    return report(summary, args.out)


def report(summary: dict[str, Any], out: Path) -> int:
    for c in summary["checks"]:
        if not c["ok"] or c["role"] != "worker":
            limit = (f"bound {c['bound_per_hour']:g}/h" if "bound_per_hour" in c
                     else f"peak {c['peak']:g} MB, ceiling {c['ceiling']:g} MB")
            print(f"{'ok ' if c['ok'] else 'BAD'} {c['role']:>13} {c['metric']:>7} "
                  f"{c['slope_per_hour']:>9.2f}/h ({limit})")
    print(f"ids {summary['ids']}  lost {summary['lost']}  kills {summary['kills']}  "
          f"{'PASS' if summary['ok'] else 'FAIL'}  ({out})")
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
