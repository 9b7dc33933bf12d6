"""Scale simulation: one real Nimbus on a real ZooKeeper with thousands of fake supervisors and
workers (``python -m bench.scale_sim --supervisors 1000 --slots 5 --topologies 250
--workers 20``; ``make scale-sim``).

Contract: the fakes run in ``--processes`` child processes and use the daemons' own code paths
with no tuples: a fake supervisor publishes ``SupervisorInfo`` through
``ClusterState.register_supervisor`` every ``supervisor.heartbeat.frequency.secs``, finds its
slots with the supervisor's ``assigned_slots`` over ``ClusterState.assignments`` read with a
change callback, as the supervisor's sync reads them (answered from the assignments' watches, so
re-reading costs ZooKeeper nothing until one changes; the fakes of a process share one session,
so ZooKeeper holds one set of watches per process where real supervisors hold one each), and
computes a fake supervisor's slots only when an assignment changed, from the assignments that
name its node (the function's answer is the same; a real supervisor computes its own once per
sync, the fakes would compute a thousand in one process), and sends its
fake workers' ``WorkerHeartbeat`` s (their executors and ``process_stats()``) to Nimbus in one
``NimbusClient.send_worker_heartbeats`` call (the RPC of the supervisor's heartbeat relay,
``send_supervisor_worker_heartbeats``) every ``task.heartbeat.frequency.secs``. Nimbus runs in
this process (its monitor's rounds are timed); topologies of ``bench/topologies/bench_idle.py``
are submitted through ``NimbusClient``. Printed as one JSON document: ZooKeeper writes/s (every
client's, from the server's zxid) and znode count (``mntr``), heartbeat RPC calls/s to Nimbus,
Nimbus CPU per second, monitor round durations (wall, and the round thread's CPU time), submit →
every executor assigned and heartbeating, the reschedule time after one supervisor is cut off,
``get_cluster_info``/``get_topology_info`` response times (what the UI and REST call), and each process's RSS.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import re
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil

import stormpy
from stormpy.bundle import build_bundle
from stormpy.client import NimbusClient
from stormpy.cluster import Assignment, ClusterState, SupervisorInfo, WorkerHeartbeat
from stormpy.cluster.zkserver import ZooKeeperServer, four_letter_word
from stormpy.local._processes import free_ports
from stormpy.nimbus.daemon import Nimbus
from stormpy.nimbus.monitor import Monitor
from stormpy.supervisor.sync import LocalAssignment, assigned_slots
from stormpy.worker.heartbeats import process_stats

HERE = Path(__file__).resolve().parent
TOPOLOGIES = HERE / "topologies"
ROOT = "/stormpy-scale"
FIRST_PORT = 6700


def _fakes(zk: str, nimbus_port: int, ids: list[str], slots: int, sup_secs: float, beat_secs: float,
           stop: Any, cut: Any, writes: Any, calls: Any) -> None:
    """One child process: the supervisors ``ids`` and their workers (see the module docstring)."""
    ports = tuple(range(FIRST_PORT, FIRST_PORT + slots))
    state = ClusterState.connect(zk, ROOT, session_timeout_secs=30.0)
    started = time.time()
    pool = ThreadPoolExecutor(8)
    local = threading.local()
    clients: list[NimbusClient] = []

    def send(sid: str, beats: list[WorkerHeartbeat]) -> int:
        client = getattr(local, "client", None)
        if client is None:  # one client per thread: an RpcClient serialises its calls
            client = local.client = NimbusClient("127.0.0.1", nimbus_port, timeout_secs=60)
            clients.append(client)
        return client.send_worker_heartbeats(sid, beats)

    live = set(ids)
    next_sup = 0.0
    count = 0
    sent = 0
    proc = process_stats()
    changed = threading.Event()
    changed.set()
    desired_of: dict[str, dict[int, LocalAssignment]] = {}
    try:
        while not stop.is_set():
            now = time.time()
            while not cut.empty():
                sid = cut.get()
                if sid in live:
                    live.discard(sid)
                    state.unregister_supervisor(sid)
            jobs = []
            if now >= next_sup:
                next_sup = now + sup_secs
                for sid in sorted(live):
                    info = SupervisorInfo(supervisor_id=sid, host=sid, ports=ports, start_time=started,
                                          version=stormpy.__version__)
                    jobs.append(pool.submit(state.register_supervisor, info))
            if changed.is_set():
                changed.clear()
                assignments = state.assignments(callback=changed.set)
                by_node: dict[str, dict[str, Assignment]] = {}
                for tid, assignment in assignments.items():
                    for node in assignment.worker_ports:
                        by_node.setdefault(node, {})[tid] = assignment
                desired_of = {sid: assigned_slots(by_node.get(sid, {}), sid, ports)[0] for sid in ids}
            rpcs = []
            for sid in sorted(live):
                desired = desired_of[sid]
                beats = [WorkerHeartbeat(topology_id=la.topology_id, node=sid, port=port, time=now,
                                         uptime=now - started, executors=la.executors, stats={},
                                         tasks=(), process=proc, metrics={})
                         for port, la in desired.items()]
                if beats:
                    rpcs.append(pool.submit(send, sid, beats))
            for job in jobs:
                try:
                    job.result()
                    count += 1
                except Exception as exc:  # noqa: BLE001 - a failed write is counted, not fatal
                    print(f"fake write failed: {exc}", file=sys.stderr)
            for job in rpcs:
                try:
                    job.result()
                    sent += 1
                except Exception as exc:  # noqa: BLE001 - a failed call is counted, not fatal
                    print(f"fake heartbeat call failed: {exc}", file=sys.stderr)
            with writes.get_lock():
                writes.value += count
            with calls.get_lock():
                calls.value += sent
            count = sent = 0
            stop.wait(max(0.0, beat_secs - (time.time() - now)))
    finally:
        pool.shutdown()
        for client in clients:
            client.close()
        state.close()


def _mntr(zk: ZooKeeperServer) -> dict[str, str]:
    host, port = zk.connect_string.split(",")[0].split(":")
    out = {}
    for line in four_letter_word(host, int(port), "mntr", timeout_secs=30.0).splitlines():
        key, _, value = line.partition("\t")
        out[key] = value
    return out


def zk_counters(zk: ZooKeeperServer) -> dict[str, int]:
    """``zxid`` (the last transaction id: every write advances it, so its delta counts the writes
    of every client) and ``znodes`` (``mntr``'s ``zk_znode_count``) of the server."""
    host, port = zk.connect_string.split(",")[0].split(":")
    srvr = four_letter_word(host, int(port), "srvr", timeout_secs=30.0)
    match = re.search(r"Zxid: (0x[0-9a-fA-F]+)", srvr)
    zxid = int(match.group(1), 16) & 0xFFFFFFFF if match else 0  # the counter (low 32 bits)
    return {"zxid": zxid, "znodes": int(_mntr(zk).get("zk_znode_count", 0))}


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    values = sorted(values)
    return {"n": len(values), "median": round(statistics.median(values), 4),
            "p95": round(values[int(0.95 * (len(values) - 1))], 4), "max": round(values[-1], 4)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    """One simulation; the figures as a dict."""
    result: dict[str, Any] = {"supervisors": args.supervisors, "slots": args.slots,
                              "topologies": args.topologies, "workers_per_topology": args.workers,
                              "load_at_start": list(psutil.getloadavg())}
    with tempfile.TemporaryDirectory(prefix="stormpy-scale-") as tmp, ZooKeeperServer() as zk:
        bundle = build_bundle(TOPOLOGIES, Path(tmp) / "idle.zip").path
        port = free_ports(1)[0]
        conf = {"storm.zookeeper.servers": [h for h in zk.connect_string.split(",") if h],
                "storm.zookeeper.root": ROOT, "storm.local.dir": f"{tmp}/nimbus",
                "storm.log.dir": f"{tmp}/logs", "nimbus.host": "127.0.0.1",
                "nimbus.seeds": [f"127.0.0.1:{port}"], "nimbus.thrift.port": port,
                "nimbus.monitor.freq.secs": args.monitor_secs,
                "nimbus.supervisor.timeout.secs": args.supervisor_timeout,
                "nimbus.task.timeout.secs": 30, "topology.min.replication.count": 1}
        rounds: list[float] = []
        round_cpu: list[float] = []
        tick = Monitor.tick

        def timed_tick(self: Monitor, *a: Any, **kw: Any) -> None:
            t0, c0 = time.perf_counter(), time.thread_time()
            tick(self, *a, **kw)
            rounds.append(time.perf_counter() - t0)
            round_cpu.append(time.thread_time() - c0)
        Monitor.tick = timed_tick  # type: ignore[method-assign]
        nimbus = Nimbus(conf).start()
        ctx = mp.get_context("spawn")
        stop, writes, calls = ctx.Event(), ctx.Value("q", 0), ctx.Value("q", 0)
        ids = [f"sim-{i:05d}" for i in range(args.supervisors)]
        cuts = [ctx.Queue() for _ in range(args.processes)]
        shares = [ids[i::args.processes] for i in range(args.processes)]
        procs = [ctx.Process(target=_fakes, args=(zk.connect_string, port, share, args.slots,
                                                  args.supervisor_secs, args.beat_secs, stop, cut, writes,
                                                  calls), daemon=True)
                 for share, cut in zip(shares, cuts, strict=True)]
        for p in procs:
            p.start()
        me = psutil.Process()
        try:
            client = NimbusClient("127.0.0.1", port, timeout_secs=60)
            state = nimbus.state
            assert state is not None
            deadline = time.monotonic() + 300
            while (len(state.storage.children(state.paths.supervisors())) < args.supervisors
                   and time.monotonic() < deadline):
                time.sleep(0.5)
            t_submit = time.monotonic()
            sys.path.insert(0, str(TOPOLOGIES))
            import bench_idle
            spec = bench_idle.build(args.workers).to_doc()
            tids = [client.submit(f"idle-{i}", bundle, spec, {"topology.workers": args.workers})
                    for i in range(args.topologies)]
            result["submit_secs"] = round(time.monotonic() - t_submit, 2)
            result["workers"] = args.topologies * args.workers

            manager = nimbus.manager
            assert manager is not None
            records = manager.records  # the leader's assignments, in memory (no ZooKeeper read in
            # Nimbus's process that a real cluster would not make)

            def all_running() -> bool:
                assignments = records.assignments()
                if len(assignments) < len(tids):
                    return False
                for tid in tids:
                    slots = set(assignments[tid].executors.values())
                    if len(nimbus.worker_beats.topology(tid)) < len(slots):
                        return False
                return True
            while not all_running() and time.monotonic() < t_submit + 900:
                time.sleep(1.0)
            result["submit_to_running_secs"] = round(time.monotonic() - t_submit, 2)
            rounds.clear()
            round_cpu.clear()
            cpu0, w0, t0, c0 = sum(me.cpu_times()[:2]), writes.value, time.monotonic(), zk_counters(zk)
            r0, b0 = calls.value, nimbus.worker_beats.received
            time.sleep(args.steady_secs)
            elapsed = time.monotonic() - t0
            result["zk_writes_per_sec"] = round((zk_counters(zk)["zxid"] - c0["zxid"]) / elapsed, 1)
            result["fake_zk_writes_per_sec"] = round((writes.value - w0) / elapsed, 1)
            result["fake_zk_writes_per_sec_due"] = round(args.supervisors / args.supervisor_secs, 1)
            result["heartbeat_calls_per_sec"] = round((calls.value - r0) / elapsed, 1)
            result["heartbeat_calls_per_sec_due"] = round(args.supervisors / args.beat_secs, 1)
            result["worker_heartbeats_per_sec"] = round((nimbus.worker_beats.received - b0) / elapsed, 1)
            result["worker_heartbeats_per_sec_due"] = round(result["workers"] / args.beat_secs, 1)
            result["nimbus_cpu_per_sec"] = round((sum(me.cpu_times()[:2]) - cpu0) / elapsed, 3)
            result["monitor_round_secs"] = _percentiles(rounds)
            # the round's own CPU time (its thread's): what a round costs on an idle machine, where
            # its wall time is this plus its ZooKeeper reads' round trips
            result["monitor_round_cpu_secs"] = _percentiles(round_cpu)
            mntr = _mntr(zk)
            result["zk_znode_count"] = int(mntr.get("zk_znode_count", 0))
            result["zk_approximate_data_size"] = int(mntr.get("zk_approximate_data_size", 0))
            result["zk_avg_latency_ms"] = mntr.get("zk_avg_latency")
            calls: dict[str, list[float]] = {"get_cluster_info": [], "get_topology_info": []}
            for _ in range(5):
                t = time.perf_counter()
                client.cluster_info()
                calls["get_cluster_info"].append(time.perf_counter() - t)
                t = time.perf_counter()
                client.topology_info("idle-0")
                calls["get_topology_info"].append(time.perf_counter() - t)
            result["rpc_secs"] = {k: _percentiles(v) for k, v in calls.items()}
            victim_tid = tids[0]
            victim = sorted({n for n, _ in records.assignment(victim_tid).executors.values()})[0]  # type: ignore[union-attr]
            cuts[ids.index(victim) % args.processes].put(victim)
            while state.supervisor(victim) is not None:  # timed from when its node is gone
                time.sleep(0.05)
            t_cut = time.monotonic()

            def moved() -> bool:
                return all(victim not in {n for n, _ in a.executors.values()}
                           for a in records.assignments().values())
            while not moved() and time.monotonic() < t_cut + 600:
                time.sleep(0.2)
            result["reschedule_after_cut_secs"] = round(time.monotonic() - t_cut, 2)
            result["reschedule_bound_secs"] = args.supervisor_timeout + 5
            zk_proc = [p for p in psutil.process_iter(["cmdline"])
                       if f"{zk.data_dir}/zoo.cfg" in " ".join(p.info["cmdline"] or [])]
            result["rss_mb"] = {"nimbus_and_sim_driver": round(me.memory_info().rss / 2**20),
                                "zookeeper": round(zk_proc[0].memory_info().rss / 2**20) if zk_proc else None,
                                "fake_processes": [round(psutil.Process(p.pid).memory_info().rss / 2**20)
                                                   for p in procs]}
            result["load_at_end"] = list(psutil.getloadavg())
            client.close()
        finally:
            stop.set()
            for p in procs:
                p.join(30)
                if p.is_alive():
                    p.kill()
            nimbus.stop()
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_sim", description=__doc__.split("\n\n")[0])
    parser.add_argument("--supervisors", type=int, default=100)
    parser.add_argument("--slots", type=int, default=5, help="worker slots per supervisor")
    parser.add_argument("--topologies", type=int, default=50)
    parser.add_argument("--workers", type=int, default=4, help="workers per topology")
    parser.add_argument("--processes", type=int, default=3, help="child processes running the fakes")
    parser.add_argument("--beat-secs", type=float, default=3.0, help="fake workers' heartbeat period")
    parser.add_argument("--supervisor-secs", type=float, default=5.0)
    parser.add_argument("--monitor-secs", type=float, default=2.0)
    parser.add_argument("--supervisor-timeout", type=float, default=15.0)
    parser.add_argument("--steady-secs", type=float, default=30.0)
    print(json.dumps(run(parser.parse_args(argv)), indent=1))


if __name__ == "__main__":
    main()
