"""The Kinesis spout's checkpoints and shard list in Redis (``checkpoint_store: redis``) on a
real Redis and kinesalite: the store's layout, forwards-only writes and polled watch of the
shard list; a topology of two spout tasks counting every record once with its checkpoints in
Redis; a restarted topology resuming after them."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from typing import Any

import pytest
from kinesis_kit import (  # noqa: F401 - fixtures
    KinesisEndpoint,
    aws_env_fixture,
    kinesalite_fixture,
)

from stormpy.connectors.kinesis import (
    Checkpoint,
    CheckpointError,
    KinesisSpout,
    KinesisSpoutConfig,
    ShardInfo,
)
from stormpy.connectors.kinesis._checkpoints import StateCheckpointStore
from stormpy.local._redis_server import RedisServer
from stormpy.state._redis_store import redis_config
from stormpy.testing import Capture, LocalCluster
from stormpy.topology import TopologyBuilder


def provider_config(redis: RedisServer) -> dict[str, object]:
    return redis.provider_config(f"kinesis-{uuid.uuid4().hex[:8]}")


def test_checkpoints_in_redis_move_forwards_and_the_shard_list_is_watched(
        redis_server: RedisServer) -> None:
    config = redis_config(provider_config(redis_server))
    a = StateCheckpointStore.on_redis(config, "clicks", "my/stream")
    b = StateCheckpointStore.on_redis(config, "clicks", "my/stream")
    seen: list[list[ShardInfo] | None] = []
    changed = threading.Event()
    try:
        assert a.read("shardId-0") is None
        assert a.write("shardId-0", Checkpoint("9"))
        assert b.write("shardId-0", Checkpoint("10"))  # integer order: 10 is after 9
        assert not a.write("shardId-0", Checkpoint("9"))
        assert a.write("shardId-0", Checkpoint("10", shard_end=True))
        assert b.read("shardId-0") == Checkpoint("10", shard_end=True)
        assert a.path("shardId-0").endswith("/checkpoints/kinesis:clicks/my/stream/shardId-0")
        shards = [ShardInfo("shardId-0", (), True), ShardInfo("shardId-1", ("shardId-0",))]
        a.write_shard_list(shards)

        def on_change(value: list[ShardInfo] | None) -> None:
            seen.append(value)
            if len(seen) >= 2:
                changed.set()

        b.watch_shard_list(on_change)
        a.write_shard_list(shards[:1])
        assert changed.wait(60)
        assert seen == [shards, shards[:1]]
        a.stream.put("bad", b"\x00garbage")
        with pytest.raises(CheckpointError, match="corrupt Kinesis checkpoint"):
            a.read("bad")
    finally:
        a.close()
        b.close()


def topology(config: KinesisSpoutConfig, capture: Capture) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("kinesis", KinesisSpout.of(config), 2)
    builder.set_bolt("sink", capture).global_grouping("kinesis")
    return builder.create_topology()


def last_per_shard(puts: list[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for shard, seq in puts:
        if shard not in out or int(seq) > int(out[shard]):
            out[shard] = seq
    return out


def test_a_topology_keeps_its_kinesis_checkpoints_in_redis_and_resumes_after_them(
        kinesalite: KinesisEndpoint, redis_server: RedisServer) -> None:
    stream = kinesalite.create_stream(3)
    first = kinesalite.put(stream, [(f"k{i}", b"a%d" % i) for i in range(300)])
    redis = provider_config(redis_server)
    # the Redis named by the topology's state provider (no redis_config of the spout's own)
    conf = {"topology.state.provider": "redis", "topology.state.provider.config": redis}
    config = KinesisSpoutConfig(
        name=f"clicks-{uuid.uuid4().hex[:6]}", stream=stream, endpoint_url=kinesalite.url,
        region=kinesalite.region, checkpoint_store="redis", checkpoint_interval_ms=100,
        shard_list_refresh_ms=200, empty_record_sleep_ms=20, records_per_get=100)
    store = StateCheckpointStore.on_redis(redis_config(redis), config.name, stream)

    def checkpoints() -> dict[str, str | None]:
        out = {}
        for shard in store.stream.children(""):
            checkpoint = store.read(shard)
            out[shard] = checkpoint.sequence_number if checkpoint is not None else None
        return out

    try:
        capture = Capture()
        with LocalCluster() as cluster:
            cluster.submit_topology("kinesis-redis-1", conf, topology(config, capture))
            cluster.wait_for(lambda: checkpoints() == last_per_shard(first), 120,
                             "the checkpoints in Redis to reach the last record of every shard")
            assert [s.shard_id for s in store.read_shard_list() or []] == sorted(last_per_shard(first))
            cluster.kill_topology("kinesis-redis-1")
        counts = Counter((v[0], v[1]) for v in capture.values)
        assert len(counts) == len(first) and set(counts.values()) == {1}

        items = [(f"k{i}", b"b%d" % i) for i in range(120)]
        second = kinesalite.put(stream, items)
        capture2 = Capture()
        with LocalCluster() as cluster:
            cluster.submit_topology("kinesis-redis-2", conf, topology(config, capture2))
            cluster.wait_for(lambda: checkpoints() == last_per_shard(first + second), 120,
                             "the checkpoints to pass the new records")
            cluster.wait_until_quiet("kinesis-redis-2")
        counts2 = Counter((v[0], v[1]) for v in capture2.values)
        assert set(counts2) == {(pk, seq) for (pk, _), (_, seq) in zip(items, second, strict=True)}
        assert set(counts2.values()) == {1}
    finally:
        store.close()
