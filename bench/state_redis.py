"""``python -m bench.state_redis``: state larger than memory on the Redis provider, against a plain
redis-py pipeline doing the same writes in the same run (not part of ``make test``).

1. N distinct keys through a ``StatefulBolt`` (one task, ``topology.state.provider: redis``,
   ``topology.state.cache.max.keys`` bounding the task's cache) in a LocalCluster of its own
   process: keys/s from submit until every input is acked (acks come only with the commit that
   holds the key, so this is committed keys/s), and the process's peak RSS. Run at N/5 and N to
   show that the RSS does not grow with the state.
2. The same N keys written by a plain redis-py pipeline (hiredis) as ``HSET``s into one hash, the
   values encoded as the state layer encodes them, in batches of 10,000: the ceiling.
3. One checkpoint that changed one million keys (``--commit-keys``): ``prepare_commit`` and
   ``commit`` times of a KeyValueState on Redis and on SQLite.

Each part runs in a child process (a clean RSS); one Redis server (``redis-server``, started on a
free port) serves all. Writes bench/results/state_redis.json.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stormpy.state import KeyValueState, StatefulBolt
from stormpy.testing import LocalCluster, registry
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


def child_stateful(port: int, keys: int, cache: int) -> dict[str, Any]:
    progress = _Progress()
    token = registry.register(progress)
    b = TopologyBuilder()
    b.set_spout("keys", KeySpout, kwargs={"keys": keys, "progress": token})
    b.set_bolt("state", PutBolt).shuffle_grouping("keys")
    conf = {"topology.state.provider": "redis",
            "topology.state.provider.config": {"jedisPoolConfig": {"port": port},
                                               "keyPrefix": f"bench-{keys}"},
            "topology.state.cache.max.keys": cache, "topology.max.spout.pending": 20_000,
            "topology.state.checkpoint.interval.ms": 200, "topology.message.timeout.secs": 120}
    try:
        with LocalCluster() as lc:
            t0 = time.perf_counter()
            lc.submit_topology("state-bench", conf, b.create_topology())
            while progress.acked < keys:
                time.sleep(0.05)
            secs = time.perf_counter() - t0
    finally:
        registry.unregister(token)
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"keys": keys, "secs": secs, "keys_per_sec": keys / secs, "peak_rss_mib": rss_kb / 1024,
            "cache_max_keys": cache}


# -- the plain pipeline (child process) -----------------------------------------------------------
def child_pipeline(port: int, keys: int) -> dict[str, Any]:
    import redis

    from stormpy.state.kv import _enc
    from stormpy.topology.state import encode_state

    client = redis.Redis(port=port)
    hash_key = f"plain-{keys}"
    t0 = time.perf_counter()
    pipe = client.pipeline(transaction=False)
    for i in range(keys):
        pipe.hset(hash_key, _enc(f"key-{i:09d}"), encode_state(hash_key, i))
        if (i + 1) % 10_000 == 0:
            pipe.execute()
    pipe.execute()
    secs = time.perf_counter() - t0
    assert client.hlen(hash_key) == keys
    client.close()
    return {"keys": keys, "secs": secs, "keys_per_sec": keys / secs}


# -- one large checkpoint (child process) ---------------------------------------------------------
def child_commit(port: int, keys: int) -> dict[str, Any]:
    from stormpy.state import KeyValueState, SqliteStore
    from stormpy.state.redis_store import RedisConfig, RedisStore

    out: dict[str, Any] = {"keys": keys}
    with tempfile.TemporaryDirectory() as tmp:
        stores = {"redis": RedisStore(RedisConfig(port=port, prefix=f"commit-{keys}"), ("task",)),
                  "sqlite": SqliteStore(Path(tmp) / "commit.sqlite")}
        for name, store in stores.items():
            state = KeyValueState(store)
            for i in range(keys):
                state.put(f"key-{i:09d}", i)
            t0 = time.perf_counter()
            state.prepare_commit(1)
            t1 = time.perf_counter()
            assert state.commit(1)
            t2 = time.perf_counter()
            assert store.count() == keys + 1
            out[name] = {"prepare_secs": t1 - t0, "commit_secs": t2 - t1}
            store.close()
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
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
    parser = argparse.ArgumentParser(prog="python -m bench.state_redis")
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--cache", type=int, default=100_000)
    parser.add_argument("--commit-keys", type=int, default=1_000_000)
    parser.add_argument("--child", choices=("stateful", "pipeline", "commit"))
    parser.add_argument("--port", type=int)
    parser.add_argument("values", nargs="*", type=int)
    args = parser.parse_args(argv)
    if args.child == "stateful":
        print(json.dumps(child_stateful(args.port, *args.values)))
        return
    if args.child == "pipeline":
        print(json.dumps(child_pipeline(args.port, *args.values)))
        return
    if args.child == "commit":
        print(json.dumps(child_commit(args.port, *args.values)))
        return

    from stormpy.local.redis_server import RedisServer

    results: dict[str, Any] = {"keys": args.keys, "cache_max_keys": args.cache}
    with RedisServer() as server:
        small = max(1, args.keys // 5)
        results["stateful_small"] = _child("stateful", server.port, small, args.cache)
        print("stateful bolt", small, "keys:", results["stateful_small"], flush=True)
        results["stateful"] = _child("stateful", server.port, args.keys, args.cache)
        print("stateful bolt", args.keys, "keys:", results["stateful"], flush=True)
        results["pipeline"] = _child("pipeline", server.port, args.keys)
        print("plain redis-py pipeline:", results["pipeline"], flush=True)
        results["ratio"] = (results["stateful"]["keys_per_sec"]
                            / results["pipeline"]["keys_per_sec"])
        results["commit"] = _child("commit", server.port, args.commit_keys)
        print("one checkpoint of", args.commit_keys, "keys:", results["commit"], flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "state_redis.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
