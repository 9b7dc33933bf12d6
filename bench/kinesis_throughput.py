"""``python -m bench.kinesis_throughput``: records/s through ``KinesisSpout → counting bolt``
(stormpy local mode, acking on) against a plain boto3 ``get_records`` loop over the same stream
on the same moto server, in the same run (best of N, interleaved).

moto runs as its own process (``moto_server``) on 127.0.0.1; the spout's checkpoints go to a
ZooKeeper started for the run. Needs the ``[kinesis]`` extra, ``moto[server]`` and ZooKeeper.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

TOPOLOGIES = Path(__file__).resolve().parent / "topologies"
if str(TOPOLOGIES) not in sys.path:
    sys.path.insert(0, str(TOPOLOGIES))

from bench_kinesis import CountRecords  # noqa: E402

from stormpy.connectors.kinesis import KinesisSpout, KinesisSpoutConfig  # noqa: E402
from stormpy.testing import LocalCluster  # noqa: E402
from stormpy.testing._zookeeper import ZooKeeperServer  # noqa: E402
from stormpy.topology import TopologyBuilder  # noqa: E402

RESULTS = Path(__file__).parent / "results"
REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_moto() -> tuple[subprocess.Popen[bytes], str]:
    exe = shutil.which("moto_server") or str(Path(sys.executable).parent / "moto_server")
    port = free_port()
    proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"http://127.0.0.1:{port}"
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("moto_server did not start")
        time.sleep(0.05)


def fill_stream(client: Any, shards: int, records: int, size: int) -> str:
    stream = f"bench-{uuid.uuid4().hex[:8]}"
    client.create_stream(StreamName=stream, ShardCount=shards)
    client.get_waiter("stream_exists").wait(StreamName=stream, WaiterConfig={"Delay": 0.2})
    payload = b"x" * size
    for lo in range(0, records, 500):
        client.put_records(StreamName=stream, Records=[
            {"PartitionKey": f"k{i}", "Data": payload} for i in range(lo, min(records, lo + 500))])
    return stream


def plain_loop(client: Any, stream: str, per_get: int) -> tuple[int, float]:
    """Read every shard from TRIM_HORIZON to the end of its data with get_records."""
    t0 = time.perf_counter()
    n = 0
    for shard in client.list_shards(StreamName=stream)["Shards"]:
        it = client.get_shard_iterator(StreamName=stream, ShardId=shard["ShardId"],
                                       ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        while it:
            resp = client.get_records(ShardIterator=it, Limit=per_get)
            n += len(resp["Records"])
            if not resp["Records"] and resp.get("MillisBehindLatest", 0) == 0:
                break
            it = resp.get("NextShardIterator")
    return n, time.perf_counter() - t0


def spout_run(endpoint: str, stream: str, zk: str, per_get: int, records: int,
              empty_sleep_ms: int) -> tuple[int, float]:
    """KinesisSpout (one task) → CountRecords in local mode, until every record is acked."""
    config = KinesisSpoutConfig(name=f"bench-{uuid.uuid4().hex[:8]}", stream=stream,
                                endpoint_url=endpoint, region=REGION, zookeeper_servers=zk,
                                records_per_get=per_get, empty_record_sleep_ms=empty_sleep_ms)
    builder = TopologyBuilder()
    builder.set_spout("kinesis", KinesisSpout.of(config), 1)
    builder.set_bolt("count", CountRecords, 1).shuffle_grouping("kinesis")
    with LocalCluster() as cluster:
        t0 = time.perf_counter()
        worker = cluster.submit_topology("kbench", {"topology.max.spout.pending": 5000},
                                         builder.create_topology())
        while worker.stats()["kinesis"]["acked"] < records:
            if worker.failure is not None:
                raise worker.failure
            time.sleep(0.01)
        elapsed = time.perf_counter() - t0
    return records, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.kinesis_throughput", description=__doc__)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--size", type=int, default=100, help="bytes per record")
    parser.add_argument("--per-get", type=int, default=1000, help="records per GetRecords")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--empty-sleep-ms", type=int, action="append",
                        help="empty_record_sleep_ms of the spout (repeatable; default 500 and 10)")
    parser.add_argument("--output", type=Path, default=RESULTS / "kinesis.json")
    args = parser.parse_args()
    import boto3

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    moto, endpoint = start_moto()
    zookeeper = ZooKeeperServer(heap_mb=256)
    try:
        zookeeper.start()
        client = boto3.client("kinesis", endpoint_url=endpoint, region_name=REGION)
        stream = fill_stream(client, args.shards, args.records, args.size)
        sleeps = args.empty_sleep_ms or [500, 10]
        best = {"plain boto3 get_records loop": 0.0}
        for ms in sleeps:
            best[f"KinesisSpout -> counting bolt (empty sleep {ms} ms)"] = 0.0
        for _ in range(args.repeat):
            n, secs = plain_loop(client, stream, args.per_get)
            assert n == args.records, n
            best["plain boto3 get_records loop"] = max(best["plain boto3 get_records loop"], n / secs)
            for ms in sleeps:
                n, secs = spout_run(endpoint, stream, zookeeper.connect_string, args.per_get,
                                    args.records, ms)
                key = f"KinesisSpout -> counting bolt (empty sleep {ms} ms)"
                best[key] = max(best[key], n / secs)
    finally:
        zookeeper.stop()
        moto.terminate()
        moto.wait(timeout=10)
    base = best["plain boto3 get_records loop"]
    for name, rate in best.items():
        print(f"{name:32} {rate:10,.0f} records/s  ({rate / base:.2f}x the plain loop)")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"records": args.records, "shards": args.shards,
                                       "records_per_sec": best}, indent=2))


if __name__ == "__main__":
    main()
