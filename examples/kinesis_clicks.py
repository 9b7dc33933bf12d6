"""Click counting from an Amazon Kinesis stream: KinesisSpout → per-page counts, reliable end to end.

Try it against a local Kinesis (moto's server or kinesalite)::

    moto_server -p 4567 &                                     # or kinesalite --port 4567
    export AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=x AWS_DEFAULT_REGION=us-east-1
    export KINESIS_ENDPOINT=http://127.0.0.1:4567
    python examples/kinesis_clicks.py put 5000                # create the stream, put clicks
    stormpy local examples kinesis_clicks:topology --idle-stop 2

In local mode the shard checkpoints live with the LocalCluster and end with it; to keep them
across runs, start ``stormpy dev-zookeeper`` and add ``-c storm.zookeeper.servers=[127.0.0.1]``.

On a cluster: ``stormpy jar examples kinesis_clicks:topology --name clicks`` (the workers need
boto3 — ``pip install 'stormpy-runtime[kinesis]'`` — and reach Kinesis and ZooKeeper). Settings come
from the environment: ``KINESIS_STREAM`` (default ``clicks``), ``KINESIS_ENDPOINT`` (default: AWS),
``AWS_DEFAULT_REGION``.
"""

from __future__ import annotations

import json
import os
import random
import sys
from collections import Counter
from collections.abc import Mapping
from typing import Any

from stormpy import Bolt, TopologyBuilder, TopologyContext, Tuple
from stormpy.connectors.kinesis import KinesisRecord, KinesisSpout, KinesisSpoutConfig

PAGES = ["/", "/search", "/cart", "/checkout", "/help", "/product/1", "/product/2"]


class ClickScheme:
    """A click record is JSON ``{"user": ..., "page": ...}``; malformed records are skipped."""

    fields = ["user", "page"]

    def deserialize(self, record: KinesisRecord) -> list[Any] | None:
        try:
            doc = json.loads(record.data)
            return [str(doc["user"]), str(doc["page"])]
        except (ValueError, KeyError, TypeError):
            return None


class PageCount(Bolt):
    """Counts clicks per page (fields grouping sends each page to one task)."""

    outputs = ["page", "clicks"]

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.counts: Counter[str] = Counter()
        self.task = context.task_id

    def execute(self, tup: Tuple) -> None:
        page = tup.values[1]
        self.counts[page] += 1
        self.emit([page, self.counts[page]], anchors=tup)
        self.ack(tup)

    def cleanup(self) -> None:
        top = ", ".join(f"{p}={c}" for p, c in self.counts.most_common(3))
        print(f"page-count task {self.task}: {sum(self.counts.values())} clicks; top: {top}")


def spout_config(**overrides: Any) -> KinesisSpoutConfig:
    settings: dict[str, Any] = {
        "name": "kinesis-clicks", "stream": os.environ.get("KINESIS_STREAM", "clicks"),
        "endpoint_url": os.environ.get("KINESIS_ENDPOINT") or None,
        "region": os.environ.get("AWS_DEFAULT_REGION") or None,
        "record_scheme": "kinesis_clicks:ClickScheme"}
    settings.update(overrides)
    return KinesisSpoutConfig(**settings)


def build(config: KinesisSpoutConfig, spouts: int = 2) -> TopologyBuilder:
    builder = TopologyBuilder()
    builder.set_spout("clicks", KinesisSpout.of(config), spouts)
    builder.set_bolt("count", PageCount, 2).fields_grouping("clicks", ["page"])
    return builder


def topology() -> Any:
    return build(spout_config()).create_topology()


config = {"topology.max.spout.pending": 2000}


def put_clicks(n: int, shards: int = 4) -> None:
    """Create the stream when missing and put ``n`` random clicks."""
    import boto3

    cfg = spout_config()
    client = boto3.client("kinesis", endpoint_url=cfg.endpoint_url, region_name=cfg.region)
    if cfg.stream not in client.list_streams().get("StreamNames", []):
        client.create_stream(StreamName=cfg.stream, ShardCount=shards)
        client.get_waiter("stream_exists").wait(StreamName=cfg.stream,
                                                WaiterConfig={"Delay": 1, "MaxAttempts": 60})
    rng = random.Random(1)
    clicks = [{"user": f"user-{rng.randrange(500)}", "page": rng.choice(PAGES)} for _ in range(n)]
    for lo in range(0, n, 500):
        client.put_records(StreamName=cfg.stream, Records=[
            {"PartitionKey": c["user"], "Data": json.dumps(c).encode()} for c in clicks[lo:lo + 500]])
    print(f"put {n} clicks into {cfg.stream}")


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "put":
        put_clicks(int(sys.argv[2]) if len(sys.argv) > 2 else 1000)
    else:
        print(__doc__)
