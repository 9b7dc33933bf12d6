"""A real many-host run on one machine (``make scale``; ``python -m bench.scale_hosts
--supervisors 100 --topologies 50``): ZooKeeper, a leader Nimbus and a standby, the UI, and
``--supervisors`` supervisor processes, each with a host address of its own on the loopback
network (``127.0.1.<n>``, ``127.0.2.<n>``...: its workers bind it and peers dial it; no network
namespaces), running ``--topologies`` idle topologies (``bench/topologies/bench_idle.py``) of 1 to
4 workers each (topology i asks for ``i % 4 + 1``).

Contract: prints one JSON document with ZooKeeper writes/s (from the zxid, which every write
advances) and znode count over ``--steady-secs``; the leader Nimbus's CPU seconds per second and
its monitor's round duration (its log's ``monitor round`` lines); submit → every assigned worker
heartbeating; the time to reschedule after one supervisor is killed with its workers (bounded by
``storm.zookeeper.session.timeout`` + ``nimbus.supervisor.timeout.secs`` + 5 s: its node lasts
until its session expires); the UI's REST response times for the cluster summary and a topology
page; and the RSS of every daemon and worker. Leaves no process behind.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil

from bench.scale_sim import TOPOLOGIES, zk_counters
from stormpy.bundle import build_bundle
from stormpy.cluster.zkserver import ZooKeeperServer
from stormpy.local._processes import end_processes
from stormpy.testing._cluster import ProcessCluster

CONF = {"nimbus.monitor.freq.secs": 2, "nimbus.supervisor.timeout.secs": 15,
        "nimbus.task.timeout.secs": 30, "nimbus.task.launch.secs": 240,
        "supervisor.heartbeat.frequency.secs": 5, "supervisor.monitor.frequency.secs": 3,
        "supervisor.worker.start.timeout.secs": 240, "storm.zookeeper.session.timeout": 10000,
        "topology.min.replication.count": 1}


def host_address(i: int) -> str:
    """Supervisor ``i``'s own loopback address."""
    return f"127.0.{1 + i // 250}.{1 + i % 250}"


def stats(values: list[float]) -> dict[str, float]:
    """n, median, p95 and max of ``values`` (rounded), or {} for none."""
    if not values:
        return {}
    values = sorted(values)
    return {"n": len(values), "median": round(statistics.median(values), 4),
            "p95": round(values[int(0.95 * (len(values) - 1))], 4), "max": round(values[-1], 4)}


def rss_mb(pid: int | None) -> int | None:
    try:
        return round(psutil.Process(pid).memory_info().rss / 2**20) if pid else None
    except psutil.Error:
        return None


def monitor_rounds(cluster: ProcessCluster, since: float) -> list[float]:
    """The median round durations the leader's monitor logged (once a minute) after ``since``
    (wall time)."""
    found = []
    for _, line in cluster.iter_log_lines("monitor round took"):
        match = re.search(r"monitor round took ([0-9.]+) s \(median", line)
        stamp = re.match(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)", line)
        if match and stamp and time.mktime(time.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S")) >= since:
            found.append(float(match.group(1)))
    return found


def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"supervisors": args.supervisors, "slots": args.slots,
                              "topologies": args.topologies, "hosts": "one loopback address per supervisor",
                              "load_at_start": [round(x, 1) for x in psutil.getloadavg()]}
    with tempfile.TemporaryDirectory(prefix="stormpy-scale-hosts-") as tmp, ZooKeeperServer() as zk:
        bundle = build_bundle(TOPOLOGIES, Path(tmp) / "idle.zip").path
        cluster = ProcessCluster(zk.connect_string, supervisors=args.supervisors,
                                 slots_per_supervisor=args.slots,
                                 nimbuses=2, ui=True, base_dir=Path(tmp) / "cluster",
                                 conf=CONF)
        for i, sup in enumerate(cluster.supervisors):
            sup.conf["supervisor.host"] = host_address(i)
        try:
            t0 = time.monotonic()
            cluster.start(timeout_secs=600)
            result["start_secs"] = round(time.monotonic() - t0, 1)
            sys.path.insert(0, str(TOPOLOGIES))
            import bench_idle
            client = cluster.client(timeout_secs=120)
            t_submit = time.monotonic()
            names = [f"idle-{i}" for i in range(args.topologies)]
            tids = [client.submit(name, bundle, bench_idle.build(i % 4 + 1).to_doc(),
                                  {"topology.workers": i % 4 + 1})
                    for i, name in enumerate(names)]
            result["workers"] = sum(i % 4 + 1 for i in range(args.topologies))
            state = cluster.state

            def all_running() -> bool:
                assignments = state.assignments()
                return all(tid in assignments and len(cluster.worker_heartbeats(tid))
                           >= len(set(assignments[tid].executors.values())) for tid in tids)
            cluster.wait_for(all_running, args.running_timeout, "every worker of every topology to heartbeat",
                             interval=2.0)
            result["submit_to_running_secs"] = round(time.monotonic() - t_submit, 1)
            leader = cluster.nimbuses[cluster.leader_index() or 0]
            nimbus = psutil.Process(leader.pid)
            wall0 = time.time()
            c0, cpu0, m0 = zk_counters(zk), sum(nimbus.cpu_times()[:2]), time.monotonic()
            time.sleep(args.steady_secs)
            c1, cpu1, elapsed = zk_counters(zk), sum(nimbus.cpu_times()[:2]), time.monotonic() - m0
            result["zk_writes_per_sec"] = round((c1["zxid"] - c0["zxid"]) / elapsed, 1)
            result["zk_znode_count"] = c1["znodes"]
            result["nimbus_cpu_per_sec"] = round((cpu1 - cpu0) / elapsed, 3)
            result["monitor_round_secs"] = stats(monitor_rounds(cluster, wall0))
            timings: dict[str, list[float]] = {"cluster_summary": [], "topology_page": []}
            for _ in range(5):
                for key, path in (("cluster_summary", "/api/v1/cluster/summary"),
                                  ("topology_page", f"/api/v1/topology/{tids[-1]}")):
                    t = time.perf_counter()
                    with urllib.request.urlopen(f"{cluster.ui_url}{path}", timeout=120) as answer:
                        answer.read()
                    timings[key].append(time.perf_counter() - t)
            result["ui_rest_secs"] = {k: stats(v) for k, v in timings.items()}
            result["rss_mb"] = {
                "zookeeper": max((rss_mb(p.pid) or 0) for p in psutil.process_iter(["cmdline"])
                                 if f"{zk.data_dir}/zoo.cfg" in " ".join(p.info["cmdline"] or [])),
                "nimbuses": [rss_mb(n.pid) for n in cluster.nimbuses],
                "ui": rss_mb(cluster.ui.pid if cluster.ui else None),
                "supervisors": stats([float(rss_mb(s.pid) or 0) for s in cluster.supervisors]),
                "workers": stats([float(rss_mb(pid) or 0) for pid, _ in cluster.worker_processes()]),
            }
            victim_index = next(i for i, sid in sorted(cluster.supervisor_ids().items())
                                if any(sid == n for a in state.assignments().values()
                                       for n, _ in a.executors.values()))
            victim = cluster.supervisor_ids()[victim_index]
            its_workers = [pid for pid, argv in cluster.worker_processes()
                           if f"supervisor-{victim_index}/" in " ".join(argv)]
            cluster.stop_supervisor(victim_index, kill=True)
            end_processes(its_workers, 0.0)
            t_cut = time.monotonic()
            cluster.wait_for(lambda: all(victim not in {n for n, _ in a.executors.values()}
                                         for a in state.assignments().values()),
                             300, "the cut supervisor's executors to be rescheduled", interval=0.2)
            result["reschedule_after_cut_secs"] = round(time.monotonic() - t_cut, 1)
            result["reschedule_bound_secs"] = (CONF["storm.zookeeper.session.timeout"] / 1000
                                               + CONF["nimbus.supervisor.timeout.secs"] + 5)
            result["load_at_end"] = [round(x, 1) for x in psutil.getloadavg()]
        finally:
            cluster.stop()
        result["leftover_workers"] = len(cluster.worker_processes())
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_hosts",
                                     description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--supervisors", type=int, default=100)
    parser.add_argument("--slots", type=int, default=2, help="worker slots per supervisor")
    parser.add_argument("--topologies", type=int, default=50)
    parser.add_argument("--steady-secs", type=float, default=60.0)
    parser.add_argument("--running-timeout", type=float, default=900.0)
    print(json.dumps(run(parser.parse_args(argv)), indent=1))


if __name__ == "__main__":
    main()
