"""``python -m bench.state_redis``: state larger than memory on the Redis provider, against a plain
redis-py pipeline doing the same writes in the same run (not part of ``make test``).

1. N distinct keys (``--keys``, 10 million for the large run) through a ``StatefulBolt`` (one
   task, ``topology.state.provider: redis``, ``topology.state.cache.max.keys`` bounding the task's
   cache) in a LocalCluster of its own process: keys/s from submit until every input is acked
   (acks come only with the commit that holds the key, so this is committed keys/s), the
   process's peak RSS against the bound ``--rss-bound-mib`` and its RSS at every tenth of the
   run, and CPU seconds (the process's and the Redis server's). Run at N/5 (unless
   ``--no-small``) and N to show that the RSS does not grow with the state.
2. The same N keys written by a plain redis-py pipeline (hiredis) as ``HSET``s into one hash, the
   values encoded as the state layer encodes them, in batches of 10,000: the ceiling.
3. One checkpoint that changed one million keys (``--commit-keys``): ``prepare_commit`` and
   ``commit`` times of a KeyValueState on Redis and on SQLite.

Why the two sides of 1 and 2 do the same work: both end with the same N rows in one Redis hash,
each field the state layer's row name of ``key-<i>`` (base64url of its msgpack) and each value
its state document (``{"v": 1, "value": i}`` packed), written from a Python loop that makes
``key-<i>`` from a counter (the spout's ``next_tuple``, the pipeline's loop), over one connection
with hiredis, in round trips of 10,000 keys. The pipeline writes nothing else, so it is the
floor of what any client pays for those rows; the stateful side pays that plus what makes it a
state: every key also goes through the topology as a tuple (spout, bolt, held ack, acker), and
every checkpoint writes its changes twice (PREPARE: ``p.<txid>`` chunks of packed entries in one
``MULTI``; COMMIT: ``meta``, then the same rows, as multi-field ``HSET``s of 500 fields, then
``p.<txid>`` dropped). Its ratio to the pipeline is therefore the whole framework's cost on top
of the writes. On a busy machine the wall-clock ratio follows the machine's load, so keys per
CPU-second (the benched process plus the Redis server over the same interval) are given too.

Each part runs in a child process (a clean RSS); one Redis server (``redis-server``, started on a
free port) serves all. Writes bench/results/state_redis.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psutil

from stormpy.state import KeyValueState, StatefulBolt
from stormpy.testing import LocalCluster
from stormpy.testing import _registry as registry
from stormpy.topology import Spout, TopologyBuilder, TopologyContext, Tuple

RESULTS = Path(__file__).parent / "results"


# -- the stateful side (child process) ------------------------------------------------------------
class _Progress:
    def __init__(self) -> None:
        self.acked = 0


class KeySpout(Spout):
    """Emits ``key-<i>`` for i < ``keys`` (each once, replayed when failed)."""

    outputs = ["key", "value"]

    def __init__(self, keys: int, progress: str) -> None:
        self.keys, self.progress_key = keys, progress

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.progress = registry.lookup(self.progress_key)
        self.next = 0
        self.todo: list[int] = []

    def next_tuple(self) -> None:
        if self.todo:
            i = self.todo.pop()
        elif self.next < self.keys:
            i, self.next = self.next, self.next + 1
        else:
            return
        self.emit([f"key-{i:09d}", i], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        self.progress.acked += 1

    def fail(self, msg_id: Any) -> None:
        self.todo.append(msg_id)


class PutBolt(StatefulBolt):
    """Puts every key into its state."""

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, tup: Tuple) -> None:
        self.state.put(tup.values[0], tup.values[1])
        self.ack(tup)


class _Cpu:
    """CPU seconds (user + system) of this process and of the Redis server since creation."""

    def __init__(self, redis_pid: int) -> None:
        self.redis = psutil.Process(redis_pid)
        self.start = self._now()

    def _now(self) -> tuple[float, float]:
        own = resource.getrusage(resource.RUSAGE_SELF)
        server = self.redis.cpu_times()
        return own.ru_utime + own.ru_stime, server.user + server.system

    def spent(self) -> dict[str, float]:
        own, server = self._now()
        return {"cpu_secs": round(own - self.start[0], 2),
                "redis_cpu_secs": round(server - self.start[1], 2)}


def _rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _rates(keys: int, secs: float, cpu: dict[str, float]) -> dict[str, Any]:
    total = cpu["cpu_secs"] + cpu["redis_cpu_secs"]
    return {"keys": keys, "secs": round(secs, 2), "keys_per_sec": round(keys / secs),
            **cpu, "keys_per_cpu_sec": round(keys / total)}


def child_stateful(port: int, redis_pid: int, keys: int, cache: int, pending: int,
                   interval_ms: int) -> dict[str, Any]:
    progress = _Progress()
    token = registry.register(progress)
    b = TopologyBuilder()
    b.set_spout("keys", KeySpout, kwargs={"keys": keys, "progress": token})
    b.set_bolt("state", PutBolt).shuffle_grouping("keys")
    conf = {"topology.state.provider": "redis",
            "topology.state.provider.config": {"jedisPoolConfig": {"port": port},
                                               "keyPrefix": f"bench-{keys}"},
            "topology.state.cache.max.keys": cache, "topology.max.spout.pending": pending,
            "topology.state.checkpoint.interval.ms": interval_ms,
            "topology.message.timeout.secs": 300}
    try:
        with LocalCluster() as lc:
            cpu = _Cpu(redis_pid)
            t0 = time.perf_counter()
            lc.submit_topology("state-bench", conf, b.create_topology())
            rss: list[list[float]] = []  # [committed keys, RSS MiB] at every tenth of the run
            while progress.acked < keys:
                if progress.acked >= len(rss) * keys / 10:
                    rss.append([progress.acked, _rss_mib()])
                time.sleep(0.05)
            secs = time.perf_counter() - t0
            spent = cpu.spent()
    finally:
        registry.unregister(token)
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {**_rates(keys, secs, spent), "peak_rss_mib": round(rss_kb / 1024, 1),
            "rss_mib_by_progress": rss, "cache_max_keys": cache, "max_spout_pending": pending,
            "checkpoint_interval_ms": interval_ms}


# -- the plain pipeline (child process) -----------------------------------------------------------
def child_pipeline(port: int, redis_pid: int, keys: int) -> dict[str, Any]:
    import redis

    from stormpy.state._kv import _enc
    from stormpy.topology._state import encode_state

    client = redis.Redis(port=port, socket_timeout=600)  # a starved Redis on a busy machine
    hash_key = f"plain-{keys}"
    cpu = _Cpu(redis_pid)
    t0 = time.perf_counter()
    pipe = client.pipeline(transaction=False)
    for i in range(keys):
        pipe.hset(hash_key, _enc(f"key-{i:09d}"), encode_state(hash_key, i))
        if (i + 1) % 10_000 == 0:
            pipe.execute()
    pipe.execute()
    secs = time.perf_counter() - t0
    spent = cpu.spent()
    assert client.hlen(hash_key) == keys
    client.delete(hash_key)
    client.close()
    return _rates(keys, secs, spent)


# -- one large checkpoint (child process) ---------------------------------------------------------
def child_commit(port: int, redis_pid: int, keys: int) -> dict[str, Any]:
    from stormpy.state import KeyValueState, SqliteStore
    from stormpy.state._redis_store import RedisConfig, RedisStore

    out: dict[str, Any] = {"keys": keys}
    with tempfile.TemporaryDirectory() as tmp:
        stores = {"redis": RedisStore(RedisConfig(port=port, prefix=f"commit-{keys}"), ("task",)),
                  "sqlite": SqliteStore(Path(tmp) / "commit.sqlite")}
        for name, store in stores.items():
            state = KeyValueState(store)
            for i in range(keys):
                state.put(f"key-{i:09d}", i)
            cpu = _Cpu(redis_pid)
            t0 = time.perf_counter()
            state.prepare_commit(1)
            t1 = time.perf_counter()
            prepared = cpu.spent()
            assert state.commit(1)
            t2 = time.perf_counter()
            committed = cpu.spent()
            assert store.count() == keys + 1
            out[name] = {"prepare_secs": round(t1 - t0, 2), "commit_secs": round(t2 - t1, 2),
                         "prepare_cpu_secs": prepared["cpu_secs"],
                         "commit_cpu_secs": round(committed["cpu_secs"] - prepared["cpu_secs"], 2)}
            if name == "redis":
                out[name]["commit_redis_cpu_secs"] = round(
                    committed["redis_cpu_secs"] - prepared["redis_cpu_secs"], 2)
            store.close()
    out["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


# -- the driver -------------------------------------------------------------------------------------
def _child(part: str, port: int, *args: int) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.state_redis", "--child", part, "--port", str(port),
           *(str(a) for a in args)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{part} failed:\n{done.stderr[-4000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.state_redis", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=1_000_000,
                        help="distinct keys through the stateful bolt (10000000: the large run)")
    parser.add_argument("--cache", type=int, default=100_000,
                        help="topology.state.cache.max.keys")
    parser.add_argument("--pending", type=int, default=20_000,
                        help="topology.max.spout.pending (inputs are acked at commits)")
    parser.add_argument("--interval-ms", type=int, default=200,
                        help="topology.state.checkpoint.interval.ms")
    parser.add_argument("--rss-bound-mib", type=float, default=160.0,
                        help="the stateful process's peak RSS this run must stay under")
    parser.add_argument("--commit-keys", type=int, default=1_000_000,
                        help="changed keys of the one large checkpoint (0: skip)")
    parser.add_argument("--no-small", action="store_true", help="skip the N/5 stateful run")
    parser.add_argument("--no-pipeline", action="store_true",
                        help="skip the plain pipeline (its figure from another run)")
    parser.add_argument("--output", type=Path, default=RESULTS / "state_redis.json")
    parser.add_argument("--child", choices=("stateful", "pipeline", "commit"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("values", nargs="*", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    children = {"stateful": child_stateful, "pipeline": child_pipeline, "commit": child_commit}
    if args.child:
        print(json.dumps(children[args.child](args.port, *args.values)))
        return

    from redis.utils import HIREDIS_AVAILABLE

    from stormpy.local._redis_server import RedisServer

    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                               "hiredis": HIREDIS_AVAILABLE,
                               "keys": args.keys, "cache_max_keys": args.cache,
                               "rss_bound_mib": args.rss_bound_mib,
                               "load_average_at_start": os.getloadavg()}
    with RedisServer() as server:
        pid = server.pid
        assert pid is not None
        stateful = (server.port, pid)
        if not args.no_small:
            small = max(1, args.keys // 5)
            results["stateful_small"] = _child("stateful", *stateful, small, args.cache,
                                               args.pending, args.interval_ms)
            print("stateful bolt", small, "keys:", results["stateful_small"], flush=True)
        if not args.no_pipeline:
            results["pipeline"] = _child("pipeline", server.port, pid, args.keys)
            print("plain redis-py pipeline:", results["pipeline"], flush=True)
        results["stateful"] = _child("stateful", *stateful, args.keys, args.cache, args.pending,
                                     args.interval_ms)
        print("stateful bolt", args.keys, "keys:", results["stateful"], flush=True)
        if not args.no_pipeline:
            results["ratio_wall"] = round(results["stateful"]["keys_per_sec"]
                                          / results["pipeline"]["keys_per_sec"], 3)
            results["ratio_cpu"] = round(results["stateful"]["keys_per_cpu_sec"]
                                         / results["pipeline"]["keys_per_cpu_sec"], 3)
        results["rss_within_bound"] = results["stateful"]["peak_rss_mib"] <= args.rss_bound_mib
        if args.commit_keys:
            results["commit"] = _child("commit", server.port, pid, args.commit_keys)
            print("one checkpoint of", args.commit_keys, "keys:", results["commit"], flush=True)
    results["load_average_at_end"] = os.getloadavg()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
