"""``python -m bench.persistent_window``: a persistent sliding count window over one million
tuples in local mode (not part of ``make test``).

A reliable spout emits 0..n-1; a StatefulWindowedBolt with ``with_persistence()`` and
``with_max_events_in_memory`` keeps a running count and sum of a sliding count window (default
length 200,000, slide 10,000) in its checkpointed state, the window's events in a SQLite state
store (checkpoint every 200 ms, 10,000 pending inputs: inputs are acked at checkpoints, and one
checkpoint's changes stay under the 512 KiB document limit). Samples the process's resident set
size (the whole local cluster runs in this process) and the window's metrics as the stream goes,
checks the last window's sum, and writes bench/results/persistent_window.json. With
``--in-memory`` the same window without persistence, for comparison (every event in memory until
it expires, and the spout's pending inputs raised to cover the window, which holds its inputs
un-acked).

``--provider redis`` keeps the window's events and the state in a Redis server started for the
run (``redis-server`` on a free port) instead of SQLite. ``--kill-at F`` runs the topology in a
child process instead (a durable spout that records acked ids in SQLite and emits only those
never acked, a window bolt that records each window's running count and sum beside the count and
sum of the events the window holds), kills it with SIGKILL once a fraction F of the tuples is
acked (after a random part of a checkpoint interval), starts it again on the same state, and
checks that every tuple was acked, that every window's running count and sum match the events it
holds (window and user state restored together), that no window after the first full one is
short (the window resumed instead of refilling) and that the last window is the last ``length``
tuples of the stream as the window saw it: 0..n-1 in order plus, after the restart, the tuples
whose checkpoint had committed but whose acks the kill cut off (the commit-to-ack gap of
docs/windowing-state.md, "Guarantee"; reported as ``committed_then_replayed``, 0 for an exact
run); the child's RSS is sampled throughout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TOPOLOGIES = Path(__file__).resolve().parent / "topologies"
if str(TOPOLOGIES) not in sys.path:
    sys.path.insert(0, str(TOPOLOGIES))

from bench_persistent_window import _log_db, build, build_killable  # noqa: E402

from stormpy.testing import LocalCluster  # noqa: E402
from stormpy.testing import _registry as registry  # noqa: E402

RESULTS = Path(__file__).parent / "results"


def rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def state_conf(provider: str, store: Path, redis_port: int | None) -> dict[str, Any]:
    if provider == "redis":
        return {"topology.state.provider": "redis",
                "topology.state.provider.config": {"jedisPoolConfig": {"port": redis_port},
                                                   "keyPrefix": f"pwin-{store.name}"}}
    return {"topology.state.provider": "sqlite",
            "topology.state.provider.config": {"path": str(store)}}


def run(n: int, length: int, slide: int, max_events: int, persistent: bool,
        store: Path, pending: int, checkpoint_ms: int, provider: str = "sqlite",
        redis_port: int | None = None) -> dict[str, Any]:
    log: dict[str, Any] = {"acked": 0, "failed": 0, "windows": 0, "last": None}
    key = registry.register(log)
    conf = {**state_conf(provider, store, redis_port),
            "topology.state.checkpoint.interval.ms": checkpoint_ms,
            "topology.max.spout.pending": pending, "topology.message.timeout.secs": 120}
    spec = build(key, n, length, slide, max_events)
    if not persistent:  # the same bolt and window, events in memory
        from stormpy.windowing._stateful import PERSIST
        spec.components["window"].kwargs[PERSIST] = {"persistent": False, "max_events": None}
    samples: list[dict[str, Any]] = []
    try:
        with LocalCluster() as lc:
            base = rss_mib()
            t0 = time.perf_counter()
            worker = lc.submit_topology("pwin", conf, spec)
            next_sample = 0
            # without persistence the last window's tuples stay un-acked (nothing expires them)
            while log["windows"] < n // slide or (persistent and log["acked"] < n):
                if worker.failure is not None:
                    raise worker.failure
                if log["acked"] >= next_sample:
                    metrics = next(iter(lc.get_metrics("pwin").get("window", {}).values()), {})
                    samples.append({"acked": log["acked"], "secs": time.perf_counter() - t0,
                                    "rss_mib": round(rss_mib(), 1),
                                    "held": metrics.get("window-events-held"),
                                    "window": metrics.get("window-events")})
                    next_sample += n // 20
                time.sleep(0.05)
            elapsed = time.perf_counter() - t0
            metrics = next(iter(lc.get_metrics("pwin")["window"].values()))
            final_rss = rss_mib()
    finally:
        registry.unregister(key)
    hi = n - n % slide
    want = (min(length, hi), sum(range(max(0, hi - length), hi)))
    assert tuple(log["last"]) == want, (log["last"], want)
    return {"provider": provider, "persistent": persistent, "tuples": n, "length": length, "slide": slide,
            "max_events_in_memory": max_events if persistent else None,
            "secs": round(elapsed, 1), "tuples_per_sec": round(n / elapsed),
            "rss_before_mib": round(base, 1), "rss_end_mib": round(final_rss, 1),
            "rss_peak_sampled_mib": max(s["rss_mib"] for s in samples),
            "windows": log["windows"], "replayed": log["failed"], "metrics": metrics,
            "samples": samples}


# -- the kill -9 run ---------------------------------------------------------------------------------
def child_run(args: argparse.Namespace) -> None:
    """One run of the killable topology in this process, until every tuple is acked."""
    conf = {**state_conf(args.provider, args.store, args.redis_port),
            "topology.state.checkpoint.interval.ms": args.checkpoint_ms,
            "topology.max.spout.pending": args.pending, "topology.message.timeout.secs": 120}
    spec = build_killable(str(args.log), args.child_run, args.tuples, args.length, args.slide,
                          args.max_events)
    db = _log_db(str(args.log))
    with LocalCluster() as lc:
        worker = lc.submit_topology("pwin-kill", conf, spec)
        while db.execute("SELECT count(*) FROM acked").fetchone()[0] < args.tuples:
            if worker.failure is not None:
                raise worker.failure
            time.sleep(0.1)
    db.close()


def _last_window(n: int, dup: int, length: int, slide: int) -> tuple[int, int]:
    """(count, sum) of the last window of 0..n-1 in order with ``dup`` ids seen twice early on."""
    end = (n + dup) // slide * slide - dup  # one past the last id of the last window
    return length, sum(range(end - length, end))


def run_killed(args: argparse.Namespace, tmp: Path, redis_port: int | None) -> dict[str, Any]:
    """The kill -9 run (see the module doc)."""
    import psutil

    n, length = args.tuples, args.length
    log, store = tmp / "kill-log.sqlite", tmp / "kill-state.sqlite"
    db = _log_db(str(log))

    def acked() -> int:
        return int(db.execute("SELECT count(*) FROM acked").fetchone()[0])

    peaks, secs = [], []
    for run_no in (0, 1):
        cmd = [sys.executable, "-m", "bench.persistent_window", "--child-run", str(run_no),
               "--log", str(log), "--store", str(store), "--provider", args.provider,
               "--tuples", str(n), "--length", str(length), "--slide", str(args.slide),
               "--max-events", str(args.max_events), "--pending", str(args.pending),
               "--checkpoint-ms", str(args.checkpoint_ms)]
        if redis_port is not None:
            cmd += ["--redis-port", str(redis_port)]
        child = subprocess.Popen(cmd)
        proc = psutil.Process(child.pid)
        peak = 0.0
        start = time.perf_counter()
        try:
            while child.poll() is None:
                peak = max(peak, proc.memory_info().rss / 2**20)
                if run_no == 0 and acked() >= args.kill_at * n:
                    # at a moment unrelated to the checkpoint's acks
                    time.sleep(random.uniform(0, args.checkpoint_ms / 1000))
                    os.kill(child.pid, signal.SIGKILL)
                    child.wait()
                    break
                time.sleep(0.2)
        except psutil.NoSuchProcess:
            pass
        finally:
            if child.poll() is None:
                child.kill()
            child.wait()
        if run_no == 0:
            if child.returncode != -signal.SIGKILL:
                raise RuntimeError(f"the run to kill ended by itself ({child.returncode}): "
                                   "lower --kill-at")
            killed_at = acked()
        elif child.returncode != 0:
            raise RuntimeError(f"the restarted run failed ({child.returncode})")
        peaks.append(round(peak, 1))
        secs.append(round(time.perf_counter() - start, 1))
    rows = db.execute("SELECT run, count, sum, held, held_sum FROM windows ORDER BY rowid"
                      ).fetchall()
    replays = int(db.execute("SELECT count(*) FROM failed").fetchone()[0])
    lost = n - acked()
    db.close()
    inconsistent = [r for r in rows if (r[1], r[2]) != (r[3], r[4])]
    first_full = next((i for i, r in enumerate(rows) if r[3] == length), len(rows))
    short_after_full = [r for r in rows[first_full:] if r[3] != length]
    last = (rows[-1][3], rows[-1][4]) if rows else None
    # The restarted spout emits every id not acked, in order: the window sees 0..n-1 in order,
    # plus, right after the restart, the ids whose checkpoint had committed but whose acks the
    # kill cut off (the gap of docs/windowing-state.md, "Guarantee": at most the pending inputs
    # of one commit). With g of them, the last window is the `length` ids before the last
    # slide boundary of n + g events, shifted by g.
    duplicates = next((g for g in range(args.pending + 1)
                       if last == _last_window(n, g, length, args.slide)), None)
    out = {"provider": args.provider, "tuples": n, "length": length, "slide": args.slide,
           "max_events_in_memory": args.max_events, "killed_at_acked": killed_at,
           "secs": sum(secs), "secs_per_run": secs, "peak_rss_mib_per_run": peaks,
           "windows_before_kill": sum(1 for r in rows if r[0] == 0),
           "windows_after_restart": sum(1 for r in rows if r[0] == 1),
           "first_window_after_restart_held": next((r[3] for r in rows if r[0] == 1), None),
           "lost": lost, "replayed_after_fail": replays,
           "inconsistent_windows": len(inconsistent),
           "short_windows_after_full": len(short_after_full), "last_window": last,
           "last_window_without_duplicates": _last_window(n, 0, length, args.slide),
           "committed_then_replayed": duplicates}
    out["exact"] = (lost == 0 and not inconsistent and not short_after_full
                    and duplicates == 0)
    out["exact_but_for_the_commit_ack_gap"] = (lost == 0 and not inconsistent
                                               and not short_after_full
                                               and duplicates is not None)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.persistent_window", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tuples", type=int, default=1_000_000)
    parser.add_argument("--length", type=int, default=200_000)
    parser.add_argument("--slide", type=int, default=10_000)
    parser.add_argument("--max-events", type=int, default=20_000)
    parser.add_argument("--pending", type=int, default=10_000,
                        help="topology.max.spout.pending (inputs are acked at checkpoints)")
    parser.add_argument("--checkpoint-ms", type=int, default=200)
    parser.add_argument("--provider", choices=("sqlite", "redis"), default="sqlite",
                        help="where the window and the state are kept")
    parser.add_argument("--in-memory", action="store_true",
                        help="also run the window without persistence")
    parser.add_argument("--kill-at", type=float,
                        help="run in a child process killed with SIGKILL once this fraction of "
                             "the tuples is acked, then restarted (see above)")
    parser.add_argument("--output", type=Path, default=RESULTS / "persistent_window.json")
    parser.add_argument("--child-run", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--log", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--store", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--redis-port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_run is not None:
        child_run(args)
        return
    with contextlib.ExitStack() as stack:
        redis_port = None
        if args.provider == "redis":
            from stormpy.local._redis_server import RedisServer

            redis_port = stack.enter_context(RedisServer()).port
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        if args.kill_at is not None:
            result = run_killed(args, tmp, redis_port)
            print(json.dumps(result, indent=2))
            args.output.parent.mkdir(parents=True, exist_ok=True)
            args.output.write_text(json.dumps(result, indent=2) + "\n")
            if not result["exact_but_for_the_commit_ack_gap"]:
                raise SystemExit("the windows after the kill are not exact (see above)")
            return
        out = [run(args.tuples, args.length, args.slide, args.max_events, True,
                   tmp / "persistent.sqlite", args.pending, args.checkpoint_ms, args.provider,
                   redis_port)]
        if args.in_memory:
            out.append(run(args.tuples, args.length, args.slide, args.max_events, False,
                           tmp / "memory.sqlite",
                           max(args.pending, args.length + 2 * args.slide), args.checkpoint_ms,
                           args.provider, redis_port))
    for r in out:
        print(f"{'persistent' if r['persistent'] else 'in memory '}: {r['tuples']} tuples, "
              f"window {r['length']}/{r['slide']}, {r['tuples_per_sec']} tuples/s, RSS "
              f"{r['rss_before_mib']} -> peak {r['rss_peak_sampled_mib']} -> end "
              f"{r['rss_end_mib']} MiB, held events peak "
              f"{r['metrics'].get('window-events-cached-peak')}, partition loads "
              f"{r['metrics'].get('window-partition-loads')}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
