"""KinesisSpout in local mode against moto (and kinesalite for resharding) and the real ZooKeeper:
every record counted once, failed records replayed, restarts resume after the checkpoint, split and
merge while running keep parent-before-child order, bad input gives an error naming it."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from typing import Any

import pytest
from kazoo.client import KazooClient
from kinesis_kit import (  # noqa: F401 - fixtures
    KinesisEndpoint,
    aws_env_fixture,
    free_port,
    kinesalite_fixture,
    moto_fixture,
)

from stormpy.cluster import paths
from stormpy.connectors.kinesis import KinesisSpout, KinesisSpoutConfig
from stormpy.testing import Capture, LocalCluster
from stormpy.testing import _registry as registry
from stormpy.topology import Bolt, TopologyBuilder, Tuple

pytestmark = pytest.mark.zookeeper


def config_for(endpoint: KinesisEndpoint, stream: str, zookeeper: Any, zk_root: str,
               **overrides: Any) -> KinesisSpoutConfig:
    settings: dict[str, Any] = dict(
        name="clicks", stream=stream, endpoint_url=endpoint.url, region=endpoint.region,
        zookeeper_servers=zookeeper.connect_string, zookeeper_prefix=zk_root,
        checkpoint_interval_ms=100, shard_list_refresh_ms=200, empty_record_sleep_ms=20,
        records_per_get=100)
    settings.update(overrides)
    return KinesisSpoutConfig(**settings)


def topology(config: KinesisSpoutConfig, bolt: Any, spouts: int = 1) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("kinesis", KinesisSpout.of(config), spouts)
    builder.set_bolt("sink", bolt).global_grouping("kinesis")
    return builder.create_topology()


def seen(capture: Capture) -> Counter[tuple[str, str]]:
    """(partition key, sequence number) → times received."""
    return Counter((v[0], v[1]) for v in capture.values)


def stored_checkpoints(zookeeper: Any, config: KinesisSpoutConfig) -> dict[str, str | None]:
    zk = KazooClient(hosts=zookeeper.connect_string)
    zk.start(timeout=10)
    try:
        base = paths.ZkPaths(
            config.zookeeper_prefix or paths.DEFAULT_ROOT).connector_checkpoints(
            "kinesis", config.name, config.stream)
        out = {}
        if zk.exists(base) is None:
            return out
        for child in zk.get_children(base):
            data, _ = zk.get(f"{base}/{child}")
            out[paths.decode_segment(child)] = KinesisCheckpointDoc.parse(data)
        return out
    finally:
        zk.stop()
        zk.close()


class KinesisCheckpointDoc:
    @staticmethod
    def parse(data: bytes) -> str | None:
        from stormpy.topology._state import decode_state

        seq = decode_state("checkpoint", data)["sequence_number"]
        return str(seq) if seq is not None else None


def last_per_shard(puts: list[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for shard, seq in puts:
        if shard not in out or int(seq) > int(out[shard]):
            out[shard] = seq
    return out


class FailFirstBolt(Bolt):
    """Fails the first delivery of every record whose data starts with b"fail"; acks the rest.
    Every delivery is recorded in the shared list registered under ``key``."""

    def __init__(self, key: str) -> None:
        self.key = key

    def prepare(self, conf: Any, context: Any) -> None:
        self.log: list[tuple[str, str, bool]] = registry.lookup(self.key)
        self.failed: set[tuple[str, str]] = set()  # (partition key, sequence number)

    def execute(self, tup: Tuple) -> None:
        pk, seq, data = tup.values
        first = data.startswith(b"fail") and (pk, seq) not in self.failed
        self.log.append((pk, seq, first))
        if first:
            self.failed.add((pk, seq))
            self.fail(tup)
        else:
            self.ack(tup)


# --- moto -------------------------------------------------------------------------------------
def test_four_shards_every_record_counted_once(moto_kinesis: KinesisEndpoint, zookeeper: Any,
                                               zk_root: str) -> None:
    stream = moto_kinesis.create_stream(4)
    puts = moto_kinesis.put(stream, [(f"user-{i % 37}", f"click-{i}".encode()) for i in range(2000)])
    assert len({shard for shard, _ in puts}) == 4
    config = config_for(moto_kinesis, stream, zookeeper, zk_root)
    capture = Capture()
    expected = last_per_shard(puts)
    with LocalCluster() as cluster:
        cluster.submit_topology("kinesis-count", {}, topology(config, capture, spouts=2))
        cluster.wait_for(lambda: len(capture.values) >= len(puts), 120, "every record")
        cluster.wait_for(lambda: stored_checkpoints(zookeeper, config) == expected, 60,
                         "the checkpoints to reach the last record of every shard")
        stats = cluster.get_stats("kinesis-count")
    counts = seen(capture)
    assert len(counts) == len(puts) and set(counts.values()) == {1}
    assert stats["kinesis"]["failed"] == 0


def test_without_zookeeper_the_checkpoints_live_with_the_local_cluster(
        moto_kinesis: KinesisEndpoint) -> None:
    """No ZooKeeper configured anywhere: the spout keeps its shard list and checkpoints in the
    LocalCluster's own state (the state layer's memory), forwards only, and needs nothing else."""
    stream = moto_kinesis.create_stream(2)
    puts = moto_kinesis.put(stream, [(f"k{i}", f"r{i}".encode()) for i in range(40)])
    config = KinesisSpoutConfig(
        name="no-zk", stream=stream, endpoint_url=moto_kinesis.url, region=moto_kinesis.region,
        checkpoint_interval_ms=100, shard_list_refresh_ms=200, empty_record_sleep_ms=20)
    capture = Capture()
    expected = last_per_shard(puts)
    with LocalCluster() as cluster:
        store = cluster.state.named_store("checkpoints", "kinesis", "no-zk")

        def checkpoints() -> dict[str, str | None]:
            shards = store.children(stream)
            return {s: store.get(f"{stream}/{s}")["sequence_number"] for s in shards}
        cluster.submit_topology("kinesis-no-zk", {}, topology(config, capture))
        cluster.wait_for(lambda: checkpoints() == expected, 60, "the checkpoints in memory")
        assert [s["id"] for s in store.get(stream)["shards"]] == sorted(expected)
    assert len(seen(capture)) == len(puts)


def test_failed_records_are_replayed(moto_kinesis: KinesisEndpoint, zookeeper: Any,
                                     zk_root: str) -> None:
    stream = moto_kinesis.create_stream(2)
    items = [(f"k{i % 5}", (b"fail-%d" if i % 7 == 0 else b"ok-%d") % i) for i in range(300)]
    puts = moto_kinesis.put(stream, items)
    config = config_for(moto_kinesis, stream, zookeeper, zk_root)
    deliveries: list[tuple[str, str, bool]] = []
    key = registry.register(deliveries)
    try:
        with LocalCluster() as cluster:
            cluster.submit_topology("kinesis-replay", {}, topology(config, _BoltHandle(key)))
            cluster.wait_for(lambda: stored_checkpoints(zookeeper, config) == last_per_shard(puts),
                             120, "the checkpoints to pass every record")
    finally:
        registry.unregister(key)
    acked = Counter((pk, seq) for pk, seq, first in deliveries if not first)
    failed = Counter((pk, seq) for pk, seq, first in deliveries if first)
    records = [(pk, seq) for (_, seq), (pk, _) in zip(puts, items)]
    assert set(acked) == set(records) and set(acked.values()) == {1}
    should_fail = {(pk, seq) for (_, seq), (pk, data) in zip(puts, items) if data.startswith(b"fail")}
    assert set(failed) == should_fail and set(failed.values()) == {1}


class _BoltHandle:
    def __init__(self, key: str) -> None:
        self.component_class = FailFirstBolt
        self.component_kwargs = {"key": key}


def test_restart_resumes_after_the_checkpoint(moto_kinesis: KinesisEndpoint, zookeeper: Any,
                                              zk_root: str) -> None:
    stream = moto_kinesis.create_stream(2)
    first = moto_kinesis.put(stream, [(f"k{i}", b"a%d" % i) for i in range(200)])
    config = config_for(moto_kinesis, stream, zookeeper, zk_root, checkpoint_interval_ms=60000)
    capture = Capture()
    with LocalCluster() as cluster:
        cluster.submit_topology("kinesis-r1", {}, topology(config, capture))
        cluster.wait_for(lambda: len(capture.values) >= len(first), 60, "the first records")
        cluster.wait_for(lambda: cluster.get_stats("kinesis-r1")["kinesis"]["acked"] >= len(first),
                         60, "every first record acked")
        cluster.kill_topology("kinesis-r1")  # close() stores the checkpoints
    assert stored_checkpoints(zookeeper, config) == last_per_shard(first)
    items = [(f"k{i}", b"b%d" % i) for i in range(150)]
    second = moto_kinesis.put(stream, items)
    capture2 = Capture()
    with LocalCluster() as cluster:
        cluster.submit_topology("kinesis-r2", {}, topology(config, capture2))
        cluster.wait_for(lambda: len(capture2.values) >= len(second), 60, "the new records")
        cluster.wait_until_quiet("kinesis-r2")
    counts = seen(capture2)
    assert set(counts) == {(pk, seq) for (pk, _), (_, seq) in zip(items, second)}
    assert set(counts.values()) == {1}


# --- bad input: reported, retried, never a crash -------------------------------------------------
def _reported_error(config: KinesisSpoutConfig, match: str) -> str:
    """Run the spout on ``config`` until it reports an error containing ``match`` through the
    component error path; the topology keeps running and the spout says it is not ready."""
    capture = Capture()
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("kinesis-bad", {}, topology(config, capture))

        def reported() -> list[str]:
            return [e["error"] for e in list(worker.errors.get("kinesis", ())) if match in e["error"]]

        cluster.wait_for(lambda: bool(reported()), 60, f"an error naming {match!r} to be reported")
        assert worker.failure is None and worker.running  # reported, not raised: no crash loop
        status = cluster.get_metrics("kinesis-bad")["kinesis"]
        (spout_status,) = [m["kinesisSpout"] for m in status.values()]
        assert spout_status["ready"] is False and match in (spout_status["last_error"] or "")
        assert capture.values == []
        return reported()[0]


def test_unknown_stream_is_named(moto_kinesis: KinesisEndpoint, zookeeper: Any, zk_root: str) -> None:
    text = _reported_error(config_for(moto_kinesis, "no-such-stream", zookeeper, zk_root),
                           "'no-such-stream'")
    assert "does not exist" in text and moto_kinesis.url in text


def test_bad_endpoint_is_named(moto_kinesis: KinesisEndpoint, zookeeper: Any, zk_root: str) -> None:
    bad = KinesisEndpoint(f"http://127.0.0.1:{free_port()}")
    text = _reported_error(config_for(bad, "clicks", zookeeper, zk_root, client_retries=0,
                                      connect_timeout_ms=500), bad.url)
    assert "cannot be reached" in text


def test_missing_credentials_are_named(moto_kinesis: KinesisEndpoint, zookeeper: Any, zk_root: str,
                                       monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    stream = moto_kinesis.create_stream(1)
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    text = _reported_error(config_for(moto_kinesis, stream, zookeeper, zk_root), "credentials")
    assert repr(stream) in text and "no AWS credentials" in text


def test_unreachable_zookeeper_is_named(moto_kinesis: KinesisEndpoint, zookeeper: Any,
                                        zk_root: str) -> None:
    stream = moto_kinesis.create_stream(1)
    servers = f"127.0.0.1:{free_port()}"
    text = _reported_error(config_for(moto_kinesis, stream, zookeeper, zk_root,
                                      zookeeper_servers=servers, zookeeper_timeout_ms=1000),
                           servers)
    assert "cannot reach ZooKeeper" in text


def test_corrupt_checkpoint_is_named(moto_kinesis: KinesisEndpoint, zookeeper: Any,
                                     zk_root: str) -> None:
    stream = moto_kinesis.create_stream(1)
    config = config_for(moto_kinesis, stream, zookeeper, zk_root)
    shard = moto_kinesis.client().list_shards(StreamName=stream)["Shards"][0]["ShardId"]
    path = paths.ZkPaths(zk_root).connector_checkpoints("kinesis", config.name, stream, shard)
    zk = KazooClient(hosts=zookeeper.connect_string)
    zk.start(timeout=10)
    try:
        zk.create(path, b"not a checkpoint", makepath=True)
    finally:
        zk.stop()
        zk.close()
    moto_kinesis.put(stream, [("k", b"must not be read")])
    capture = Capture()
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("kinesis-corrupt", {}, topology(config, capture))
        cluster.wait_for(lambda: any(path in e["error"] and "corrupt" in e["error"]
                                     for e in list(worker.errors.get("kinesis", ()))), 60,
                         "the corrupt checkpoint to be reported")
        assert worker.failure is None
        # the shard is not silently restarted from TRIM_HORIZON
        assert capture.values == []


def test_the_spout_reports_a_missing_stream_and_starts_once_it_appears(
        moto_kinesis: KinesisEndpoint, zookeeper: Any, zk_root: str) -> None:
    stream = f"later-{uuid.uuid4().hex[:8]}"
    config = config_for(moto_kinesis, stream, zookeeper, zk_root, setup_retry_max_ms=300)
    capture = Capture()
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("kinesis-later", {}, topology(config, capture))
        cluster.wait_for(lambda: any("does not exist" in e["error"]
                                     for e in list(worker.errors.get("kinesis", ()))), 60,
                         "the missing stream to be reported")
        moto_kinesis.client().create_stream(StreamName=stream, ShardCount=2)
        moto_kinesis.wait_active(stream)
        puts = moto_kinesis.put(stream, [(f"k{i}", b"r%d" % i) for i in range(50)])
        cluster.wait_for(lambda: len(capture.values) >= len(puts), 60, "every record")
        expected = last_per_shard(puts)

        def shard_metrics() -> dict[str, Any]:
            (task,) = cluster.get_metrics("kinesis-later")["kinesis"].values()
            return task

        cluster.wait_for(lambda: {s: m["stored"] for s, m in
                                  shard_metrics()["kinesisShards"].items()} == expected, 60,
                         "the stored checkpoints in the metrics")
        metrics = shard_metrics()
        assert worker.failure is None
    status = metrics["kinesisSpout"]
    assert status["ready"] is True and status["setup_attempts"] >= 2 and status["errors"] >= 1
    assert status["last_error"] is None
    for shard, m in metrics["kinesisShards"].items():
        assert m["checkpoint"] == expected[shard] and m["in_flight"] == 0
        assert m["retries"] == 0 and m["counted_out"] == 0 and m["finished"] is False
        assert m["millis_behind_latest"] == 0
    counts = seen(capture)
    assert len(counts) == len(puts) and set(counts.values()) == {1}


def test_killing_a_topology_named_like_the_config_keeps_the_checkpoints(
        moto_kinesis: KinesisEndpoint, zookeeper: Any, zk_root: str) -> None:
    """Checkpoints sit under checkpoints/kinesis:<name>, apart from checkpoints/<topology-id>,
    which a kill removes: a topology whose id is the config name cannot take them along."""
    from stormpy.cluster import ZkStorage
    from stormpy.state import ZkBackend

    stream = moto_kinesis.create_stream(1)
    puts = moto_kinesis.put(stream, [("k", b"a"), ("k", b"b")])
    config = config_for(moto_kinesis, stream, zookeeper, zk_root)
    capture = Capture()
    with LocalCluster() as cluster:
        cluster.submit_topology("kinesis-clash", {}, topology(config, capture))
        cluster.wait_for(lambda: stored_checkpoints(zookeeper, config) == last_per_shard(puts), 60,
                         "the checkpoints")
    with ZkStorage(zookeeper.connect_string, zk_root, connect_timeout_secs=30).start() as storage:
        backend = ZkBackend(storage)
        backend.store("checkpoints", config.name).put("spout/0", 1)  # a topology with that id
        assert storage.exists(paths.ZkPaths(zk_root).checkpoints(config.name))
        backend.drop(config.name)  # what killing it does (LocalCluster and Nimbus alike)
        for path in paths.ZkPaths(zk_root).topology_paths(config.name):  # Nimbus's kill
            storage.delete(path, recursive=True)
    assert stored_checkpoints(zookeeper, config) == last_per_shard(puts)


# --- kinesalite: resharding while running -----------------------------------------------------
def test_split_and_merge_while_running_keep_every_record_and_key_order(
        kinesalite: KinesisEndpoint, zookeeper: Any, zk_root: str) -> None:
    stream = kinesalite.create_stream(3)
    client = kinesalite.client()
    config = config_for(kinesalite, stream, zookeeper, zk_root)
    capture = Capture()
    keys = [f"key-{i}" for i in range(12)]
    sent: list[tuple[str, int]] = []
    stop = threading.Event()

    def produce() -> None:
        n = 0
        while not stop.is_set() or n < 60:
            for k in keys:
                kinesalite.put_one(stream, k, b"%d" % n)
                sent.append((k, n))
            n += 1

    with LocalCluster() as cluster:
        cluster.submit_topology("kinesis-reshard", {}, topology(config, capture, spouts=2))
        producer = threading.Thread(target=produce, daemon=True)
        producer.start()
        try:
            cluster.wait_for(lambda: len(capture.values) >= 100, 60, "records before resharding")
            # pause the spout so that parents hold a backlog when their children appear: without
            # the parent-before-child rule the children's records would overtake it
            cluster.deactivate("kinesis-reshard")
            mark = len(sent)
            cluster.wait_for(lambda: len(sent) >= mark + 240, 60, "a backlog in the parents")
            shards = {s["ShardId"]: s for s in client.list_shards(StreamName=stream)["Shards"]}
            ids = sorted(shards)
            lo = int(shards[ids[0]]["HashKeyRange"]["StartingHashKey"])
            hi = int(shards[ids[0]]["HashKeyRange"]["EndingHashKey"])
            client.split_shard(StreamName=stream, ShardToSplit=ids[0],
                               NewStartingHashKey=str((lo + hi) // 2))
            kinesalite.wait_active(stream)
            client.merge_shards(StreamName=stream, ShardToMerge=ids[1], AdjacentShardToMerge=ids[2])
            kinesalite.wait_active(stream)
            mark = len(sent)
            cluster.wait_for(lambda: len(sent) >= mark + 240, 60, "records in the children")
            cluster.activate("kinesis-reshard")
            after = len(capture.values)
            cluster.wait_for(lambda: len(capture.values) >= after + 200, 60,
                             "records after resharding")
        finally:
            stop.set()
            producer.join(timeout=60)
        cluster.wait_for(lambda: len({(v[0], v[2]) for v in capture.values}) >= len(sent), 120,
                         "every record")
        cluster.wait_until_quiet("kinesis-reshard")
    listed = client.list_shards(StreamName=stream)["Shards"]
    assert len(listed) == 6  # 3 + 2 children of the split + 1 of the merge
    got = [(v[0], int(v[2])) for v in capture.values]
    assert Counter(got) == Counter(sent)  # every record exactly once (nothing failed)
    for k in keys:
        order = [n for key, n in got if key == k]
        assert order == sorted(order), f"records of {k} out of order"


# --- the example topology ---------------------------------------------------------------------
def test_example_click_topology_counts_every_click(moto_kinesis: KinesisEndpoint, zookeeper: Any,
                                                   zk_root: str) -> None:
    import json

    import kinesis_clicks

    stream = moto_kinesis.create_stream(4)
    clicks = [(f"u{i % 50}", json.dumps({"user": f"u{i % 50}", "page": kinesis_clicks.PAGES[i % 7]})
               .encode()) for i in range(700)]
    puts = moto_kinesis.put(stream, [*clicks, ("u0", b"not json")])
    config = kinesis_clicks.spout_config(
        stream=stream, endpoint_url=moto_kinesis.url, region=moto_kinesis.region,
        zookeeper_servers=zookeeper.connect_string, zookeeper_prefix=zk_root,
        checkpoint_interval_ms=100, empty_record_sleep_ms=20)
    builder = kinesis_clicks.build(config)
    capture = Capture()
    builder.set_bolt("seen", capture).shuffle_grouping("count")
    with LocalCluster() as cluster:
        cluster.submit_topology("kinesis-example", kinesis_clicks.config, builder.create_topology())

        def counted() -> int:
            latest: dict[str, int] = {}
            for page, n in capture.values:
                latest[page] = max(n, latest.get(page, 0))
            return sum(latest.values())

        cluster.wait_for(lambda: counted() == len(clicks), 60, "every click counted")
        cluster.wait_for(lambda: stored_checkpoints(zookeeper, config) == last_per_shard(puts), 60,
                         "checkpoints past every record, the skipped malformed one included")
