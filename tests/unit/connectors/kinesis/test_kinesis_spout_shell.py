"""The KinesisSpout itself, driven as the executor drives it, against a fake Kinesis client and
the state layer's memory store (background jobs run inline or when the test says, on a clock
the test moves): nothing is contacted before the first ``next_tuple``, setting up is retried
with a doubling pause and every failure reported naming stream and endpoint, records become
exactly the scheme's values with ``"<shard>:<seq>"`` ids, round-robin over the task's shards,
failed records come back first, checkpoints are written only for acked records, a shard read
to its end is checkpointed as ended, and ``close`` stores the last checkpoints."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

from stormpy.config import SettingError
from stormpy.connectors.kinesis import (
    Checkpoint,
    CheckpointUnavailable,
    KinesisRecord,
    KinesisSpout,
    KinesisSpoutConfig,
    KinesisUnavailableError,
)
from stormpy.connectors.kinesis import _spout as spout_module
from stormpy.connectors.kinesis._checkpoints import StateCheckpointStore
from stormpy.state import MemoryBackend
from stormpy.topology._state import CHECKPOINTS

ENDPOINT = "http://kinesis.test:4567"


class ClientError(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.response = {"Error": {"Code": code}}


class FakeKinesis:
    """Shards with records (sequence numbers); closed shards end after their last record."""

    def __init__(self, shards: dict[str, list[str]], closed: set[str] | None = None) -> None:
        self.records = shards
        self.closed = closed or set()
        self.missing = False
        self.list_error: Exception | None = None
        self.get_errors: list[Exception] = []
        self.calls: list[str] = []

    def describe_stream_summary(self, StreamName: str) -> dict[str, Any]:
        self.calls.append(f"describe {StreamName}")
        if self.missing:
            raise ClientError("ResourceNotFoundException")
        return {}

    def list_shards(self, **kw: Any) -> dict[str, Any]:
        self.calls.append("list")
        if self.list_error is not None:
            raise self.list_error
        return {"Shards": [{"ShardId": s, "SequenceNumberRange": (
            {"EndingSequenceNumber": "9999"} if s in self.closed else {})} for s in self.records]}

    def get_shard_iterator(self, StreamName: str, ShardId: str, ShardIteratorType: str,
                           StartingSequenceNumber: str | None = None, **kw: Any) -> dict[str, Any]:
        seqs = self.records[ShardId]
        pos = 0 if StartingSequenceNumber is None else \
            sum(1 for s in seqs if int(s) <= int(StartingSequenceNumber))
        return {"ShardIterator": f"{ShardId}|{pos}"}

    def get_records(self, ShardIterator: str, Limit: int) -> dict[str, Any]:
        if self.get_errors:
            raise self.get_errors.pop(0)
        shard, pos_text = ShardIterator.split("|")
        pos = int(pos_text)
        seqs = self.records[shard][pos:pos + Limit]
        end = pos + len(seqs)
        nxt = None if shard in self.closed and end >= len(self.records[shard]) else f"{shard}|{end}"
        return {"Records": [{"SequenceNumber": s, "PartitionKey": f"k{s}", "Data": f"d{s}".encode()}
                            for s in seqs], "NextShardIterator": nxt, "MillisBehindLatest": 7}


class Context:
    def __init__(self, backend: MemoryBackend | None, index: int = 0,
                 tasks: tuple[int, ...] = (3,)) -> None:
        self._backend = backend
        self.task_index = index
        self.component_tasks = list(tasks)
        self.metrics: dict[str, Callable[[], Any]] = {}

    @property
    def state_backend(self) -> MemoryBackend:
        if self._backend is None:
            raise RuntimeError("no runtime")
        return self._backend

    def register_metric(self, name: str, fn: Callable[[], Any]) -> None:
        self.metrics[name] = fn


class Harness:
    def __init__(self, client: FakeKinesis, monkeypatch: pytest.MonkeyPatch, *, inline: bool = True,
                 backend: MemoryBackend | None = None, index: int = 0,
                 tasks: tuple[int, ...] = (3,), **settings: Any) -> None:
        self.client = client
        self.now = 100.0
        self.backend = backend if backend is not None else MemoryBackend()
        self.config = KinesisSpoutConfig(**{"name": "clicks", "stream": "events",
                                            "endpoint_url": ENDPOINT, "region": "eu-west-1",
                                            "empty_record_sleep_ms": 1000,
                                            "shard_list_refresh_ms": 10**9, **settings})
        self.clients: list[KinesisSpoutConfig] = []
        monkeypatch.setattr(spout_module, "make_client", self._make_client)
        self.spout = KinesisSpout(self.config.to_doc())
        self.spout.clock = lambda: self.now
        self.emits: list[tuple[list[Any], Any]] = []
        self.reports: list[str] = []
        self.jobs: list[tuple[Callable[[], Any], Callable[[Any, BaseException | None], None]]] = []
        self.inline = inline
        self.spout.emit = self._emit  # type: ignore[method-assign]
        self.spout.report_error = self.reports.append  # type: ignore[method-assign]
        self.spout.run_in_background = self._background  # type: ignore[method-assign]
        self.context = Context(self.backend, index, tasks)

    def _make_client(self, config: KinesisSpoutConfig) -> FakeKinesis:
        self.clients.append(config)
        return self.client

    def _emit(self, values: list[Any], msg_id: Any = None) -> list[int]:
        self.emits.append((values, msg_id))
        return [1]

    def _background(self, fn: Callable[[], Any],
                    done: Callable[[Any, BaseException | None], None]) -> None:
        self.jobs.append((fn, done))
        if self.inline:
            self.run_jobs()

    def run_jobs(self) -> None:
        while self.jobs:
            fn, done = self.jobs.pop(0)
            try:
                result = fn()
            except Exception as exc:
                done(None, exc)
            else:
                done(result, None)

    def open(self, conf: dict[str, Any] | None = None) -> Harness:
        self.spout.open(conf or {}, self.context)  # type: ignore[arg-type]
        return self

    def ids(self, rounds: int) -> list[Any]:
        start = len(self.emits)
        for _ in range(rounds):
            self.spout.next_tuple()
        return [msg_id for _, msg_id in self.emits[start:]]

    def stored(self, shard: str) -> Any:
        return self.backend.named_store(CHECKPOINTS, "kinesis", "clicks").sub("events").get(shard)


def test_the_handle_and_the_declared_stream_follow_the_config() -> None:
    config = KinesisSpoutConfig(name="clicks", stream="events",
                                record_scheme=f"{__name__}:KeyOnlyScheme")
    handle = KinesisSpout.of(config)
    assert handle.component_class is KinesisSpout
    assert handle.component_kwargs == {"config": config.to_doc()}
    outputs = KinesisSpout.declare_outputs({"config": config.to_doc()})
    assert list(outputs) == ["default"]
    assert list(outputs["default"].fields) == ["key"] and outputs["default"].name == "default"
    spout = KinesisSpout(config.to_doc())
    assert spout.config == config and spout.manager is None and spout.scheme is None


class KeyOnlyScheme:
    fields = ["key"]

    def deserialize(self, record: KinesisRecord) -> list[Any] | None:
        return None if record.sequence_number == "2" else [record.partition_key]


def test_open_contacts_nothing_and_refuses_a_missing_boto3_or_a_bad_scheme(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(FakeKinesis({"s0": ["1"]}), monkeypatch).open()
    assert h.clients == [] and h.client.calls == [] and h.jobs == []
    assert sorted(h.context.metrics) == ["kinesisShards", "kinesisSpout"]
    assert h.context.metrics["kinesisShards"]() == {}
    assert h.context.metrics["kinesisSpout"]() == {
        "stream": "events", "ready": False, "setup_attempts": 0, "last_error": None, "errors": 0,
        "checkpoint_failures": 0}
    bad = Harness(FakeKinesis({}), monkeypatch, record_scheme=f"{__name__}:Context")
    with pytest.raises(SettingError, match="^KinesisSpoutConfig.record_scheme: "):
        bad.open()
    monkeypatch.setitem(sys.modules, "boto3", None)
    with pytest.raises(KinesisUnavailableError, match=r"stormpy-runtime\[kinesis\]"):
        Harness(FakeKinesis({}), monkeypatch).open()


def test_records_become_the_schemes_values_round_robin_with_shard_and_sequence_ids(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(FakeKinesis({"s0": ["1", "2", "3"], "s1": ["10", "11"]}), monkeypatch).open()
    assert h.ids(1) == []  # the first call sets up, off the loop
    assert h.clients == [h.config]
    assert h.client.calls == ["describe events", "list"]
    assert h.ids(1) == ["s1:10"]
    assert h.emits[0] == (["k10", "10", b"d10"], "s1:10")
    assert h.ids(6) == ["s0:1", "s1:11", "s0:2", "s0:3"]
    assert h.ids(3) == []
    status = h.spout.status()
    assert status == {"stream": "events", "ready": True, "setup_attempts": 1, "last_error": None,
                      "errors": 0, "checkpoint_failures": 0}
    metrics = h.spout.metrics()
    assert sorted(metrics) == ["s0", "s1"]
    assert metrics["s0"]["in_flight"] == 3 and metrics["s0"]["millis_behind_latest"] == 7


def test_checkpoints_are_written_only_for_acked_records_and_failed_ones_come_back_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(FakeKinesis({"s0": ["1", "2", "3", "4"]}), monkeypatch,
                checkpoint_interval_ms=1000).open()
    h.ids(1)
    assert h.ids(3) == ["s0:1", "s0:2", "s0:3"]
    h.spout.ack("s0:2")
    assert h.spout.metrics()["s0"]["retries"] == 0
    h.spout.fail("s0:3")
    h.now += 2
    assert h.ids(1) == ["s0:3"]  # the failed record first, before s0:4
    assert h.emits[-1] == (["k3", "3", b"d3"], "s0:3")
    assert h.spout.metrics()["s0"]["retries"] == 1
    assert h.stored("s0") is None  # s0:1 is not acked: nothing is done yet
    assert h.ids(1) == ["s0:4"]  # re-emitted once, then the next record
    assert h.spout.metrics()["s0"]["retries"] == 1
    assert h.spout.metrics()["s0"]["in_flight"] == 3
    h.spout.ack("s0:1")
    h.spout.ack("s0:3")
    h.now += 2
    assert h.ids(1) == []
    assert h.stored("s0") == {"sequence_number": "3", "shard_end": False}
    h.spout.ack("other-shard:5")  # a shard this task does not read: ignored
    h.spout.fail("other-shard:6")
    with pytest.raises(ValueError, match="message id"):
        h.spout.ack("no-id")
    h.spout.ack("s0:4")
    h.spout.deactivate()  # deactivating stores what is done at once
    assert h.stored("s0") == {"sequence_number": "4", "shard_end": False}


def test_checkpoint_writes_that_fail_are_counted_in_the_status(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(FakeKinesis({"s0": ["1", "2"]}), monkeypatch).open()
    h.ids(1)
    h.ids(1)
    h.spout.ack("s0:1")

    def down(self: StateCheckpointStore, shard_id: str, checkpoint: Checkpoint) -> bool:
        raise CheckpointUnavailable(f"{shard_id}: the store is not connected")

    monkeypatch.setattr(StateCheckpointStore, "write", down)
    h.spout.deactivate()
    assert h.spout.status()["checkpoint_failures"] == 1
    assert h.spout.status()["errors"] == 0 and h.stored("s0") is None


def test_each_call_emits_while_any_shard_has_a_record(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(FakeKinesis({"s0": [], "s1": ["1", "3", "4"], "s2": ["2"]}), monkeypatch,
                record_scheme=f"{__name__}:KeyOnlyScheme").open()
    h.ids(1)
    # s0 has nothing and s2's record is skipped by the scheme: each call goes on to the next shard
    assert [h.ids(1) for _ in range(3)] == [["s1:1"], ["s1:3"], ["s1:4"]]
    assert h.ids(3) == []


def test_a_spout_keeps_its_own_clock_unless_given_one(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(FakeKinesis({"s0": ["1"]}), monkeypatch, inline=False)
    h.spout = KinesisSpout(h.config.to_doc())
    h.spout.run_in_background = h._background  # type: ignore[method-assign]
    h.spout.report_error = h.reports.append  # type: ignore[method-assign]
    h.open()
    h.spout.next_tuple()  # on the monotonic clock: due at once
    assert h.spout.setup_attempts == 1 and len(h.jobs) == 1


def test_a_skipped_record_counts_as_done(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(FakeKinesis({"s0": ["1", "2", "3"]}), monkeypatch,
                record_scheme=f"{__name__}:KeyOnlyScheme").open()
    h.ids(1)
    assert h.ids(3) == ["s0:1", "s0:3"]  # "2" is skipped by the scheme, not emitted
    assert [v for v, _ in h.emits] == [["k1"], ["k3"]]
    h.spout.ack("s0:1")
    h.spout.deactivate()
    assert h.stored("s0") == {"sequence_number": "2", "shard_end": False}


def test_a_shard_read_to_its_end_is_checkpointed_as_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(FakeKinesis({"s0": ["1", "2"]}, closed={"s0"}), monkeypatch).open()
    h.ids(1)
    assert h.ids(4) == ["s0:1", "s0:2"]
    h.spout.ack("s0:1")
    assert h.stored("s0") is None
    h.spout.ack("s0:2")  # the last record of an ended shard: its end is stored at once
    assert h.stored("s0") == {"sequence_number": "2", "shard_end": True}
    assert h.spout.metrics()["s0"]["finished"] is True


def test_an_ended_shard_whose_records_were_acked_before_its_end_was_seen(
        monkeypatch: pytest.MonkeyPatch) -> None:
    client = FakeKinesis({"s0": ["1"]})
    h = Harness(client, monkeypatch, checkpoint_interval_ms=10**9).open()  # no periodic write
    h.ids(1)
    assert h.ids(1) == ["s0:1"]
    h.spout.ack("s0:1")
    assert h.stored("s0") is None
    client.closed.add("s0")  # resharded: the next read finds the shard's end
    for _ in range(5):
        h.now += 2
        h.ids(1)
    assert h.stored("s0") == {"sequence_number": "1", "shard_end": True}


def test_close_stores_the_last_checkpoints_and_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(FakeKinesis({"s0": ["1", "2"]}), monkeypatch).open()
    h.ids(1)
    h.ids(2)
    h.spout.ack("s0:1")
    store = h.spout._store
    assert isinstance(store, StateCheckpointStore)
    h.spout.close()
    assert h.stored("s0") == {"sequence_number": "1", "shard_end": False}
    assert h.spout.manager is None and h.spout._store is None
    h.now += 100
    assert h.ids(3) == [] and h.spout.setup_attempts == 1  # closed: never set up again
    h.spout.ack("s0:2")  # late acks after close are ignored
    h.spout.close()


def test_setup_failures_are_reported_and_retried_with_a_doubling_pause(
        monkeypatch: pytest.MonkeyPatch) -> None:
    client = FakeKinesis({"s0": ["1"]})
    client.missing = True
    h = Harness(client, monkeypatch, setup_retry_max_ms=1500).open()
    h.ids(1)
    why = (f"DescribeStreamSummary failed for stream 'events' at {ENDPOINT}: the stream does not "
           "exist")
    assert h.reports == [f"KinesisSpout 'clicks': cannot start reading ({why}); retrying in 0.5s"]
    assert h.spout.status() == {
        "stream": "events", "ready": False, "setup_attempts": 1, "errors": 1,
        "last_error": f"KinesisSpout 'clicks': cannot start reading ({why}); retrying in 0.5s",
        "checkpoint_failures": 0}
    h.now += 0.4
    h.ids(3)
    assert h.spout.setup_attempts == 1
    h.now += 0.1
    h.ids(1)
    assert h.spout.setup_attempts == 2
    assert h.reports[-1].endswith("; retrying in 1s")
    h.now += 1.0
    h.ids(1)
    assert h.reports[-1].endswith("; retrying in 1.5s")  # capped at setup_retry_max_ms
    client.missing = False
    h.now += 1.5
    assert h.ids(2) == ["s0:1"]
    assert h.spout.status()["ready"] is True and h.spout.status()["last_error"] is None
    assert h.spout.errors == 3
    assert h.spout._setup_backoff.last_delay == 0.0


def test_a_short_retry_cap_is_the_first_pause_too(monkeypatch: pytest.MonkeyPatch) -> None:
    client = FakeKinesis({"s0": ["1"]})
    client.missing = True
    h = Harness(client, monkeypatch, setup_retry_max_ms=200).open()
    h.ids(1)
    assert h.reports[-1].endswith("; retrying in 0.2s")


def test_one_setup_at_a_time_and_a_spout_closed_meanwhile_keeps_nothing_open(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(FakeKinesis({"s0": ["1"]}), monkeypatch, inline=False).open()
    h.ids(3)
    assert len(h.jobs) == 1 and h.spout.setup_attempts == 1
    closed: list[Any] = []
    real = StateCheckpointStore.close
    monkeypatch.setattr(StateCheckpointStore, "close", lambda self: closed.append(self) or real(self))
    h.spout.close()
    h.run_jobs()
    assert len(closed) == 1 and h.spout.manager is None
    assert h.reports == ["KinesisSpout 'clicks': cannot start reading (the spout was closed while "
                         "setting up); retrying in 0.5s"]


def test_a_failed_shard_listing_closes_the_store_it_opened(monkeypatch: pytest.MonkeyPatch) -> None:
    client = FakeKinesis({"s0": ["1"]})
    client.list_error = ClientError("AccessDeniedException")
    h = Harness(client, monkeypatch).open()
    closed: list[Any] = []
    real = StateCheckpointStore.close
    monkeypatch.setattr(StateCheckpointStore, "close", lambda self: closed.append(self) or real(self))
    h.ids(1)
    assert len(closed) == 1
    assert h.reports == [f"KinesisSpout 'clicks': cannot start reading (ListShards failed for stream "
                         f"'events' at {ENDPOINT}: AccessDeniedException: AccessDeniedException); "
                         "retrying in 0.5s"]


def test_errors_while_reading_are_reported_naming_the_shard(monkeypatch: pytest.MonkeyPatch) -> None:
    client = FakeKinesis({"s0": ["1"]})
    h = Harness(client, monkeypatch).open()
    client.get_errors.append(ClientError("AccessDeniedException"))
    h.ids(2)
    assert h.reports == [f"KinesisSpout 'clicks': KinesisStreamError: GetRecords on shard s0 failed "
                         f"for stream 'events' at {ENDPOINT}: AccessDeniedException: "
                         "AccessDeniedException"]
    assert h.spout.errors == 1


def test_each_task_reads_its_own_share_of_the_shards(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = MemoryBackend()
    shards = {"s0": ["1"], "s1": ["2"], "s2": ["3"]}
    first = Harness(FakeKinesis(shards), monkeypatch, backend=backend, index=0, tasks=(5, 6)).open()
    second = Harness(FakeKinesis(shards), monkeypatch, backend=backend, index=1, tasks=(5, 6)).open()
    first.ids(1)
    second.ids(1)
    assert sorted(first.ids(4)) == ["s0:1", "s2:3"]
    assert second.ids(3) == ["s1:2"]


@pytest.mark.parametrize("settings", [{"zookeeper_servers": "zk9:2181"},
                                      {"zookeeper_prefix": "/kin"}, {}])
def test_the_checkpoints_live_in_the_topologys_state_unless_the_config_names_a_zookeeper(
        monkeypatch: pytest.MonkeyPatch, settings: dict[str, Any]) -> None:
    calls: list[tuple[Any, ...]] = []
    backend = MemoryBackend()

    def connect(connect: str, root: str, name: str, stream: str,
                timeout_s: float) -> StateCheckpointStore:
        calls.append((connect, root, name, stream, timeout_s))
        return StateCheckpointStore.on_backend(backend, name, stream)

    monkeypatch.setattr(spout_module.ZkCheckpointStore, "connect", connect)
    h = Harness(FakeKinesis({"s0": ["1"]}), monkeypatch, zookeeper_timeout_ms=2500, **settings)
    if not settings:
        h.context._backend = None  # a context made by hand: no state of the topology
    h.open({"storm.zookeeper.servers": ["zk1"], "storm.zookeeper.port": 2182})
    h.ids(2)
    expected = ("zk9:2181" if "zookeeper_servers" in settings else "zk1:2182",
                settings.get("zookeeper_prefix", "/stormpy"), "clicks", "events", 2.5)
    assert calls == [expected]
    assert h.emits == [(["k1", "1", b"d1"], "s0:1")]


def test_the_topologys_state_holds_the_checkpoints_by_default(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spout_module.ZkCheckpointStore, "connect", None)
    h = Harness(FakeKinesis({"s0": ["1"]}), monkeypatch).open()
    h.ids(2)
    h.spout.ack("s0:1")
    h.spout.close()
    assert h.stored("s0") == {"sequence_number": "1", "shard_end": False}
    assert Checkpoint.from_doc(h.stored("s0"), "x") == Checkpoint("1")


def test_a_redis_checkpoint_store_is_opened_from_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, ...]] = []
    backend = MemoryBackend()

    def on_redis(config: Any, name: str, stream: str) -> StateCheckpointStore:
        calls.append((config, name, stream))
        return StateCheckpointStore.on_backend(backend, name, stream)

    monkeypatch.setattr(spout_module.StateCheckpointStore, "on_redis", on_redis)
    pool = {"jedisPoolConfig": {"host": "redis.example", "port": 6380}, "keyPrefix": "kin"}
    h = Harness(FakeKinesis({"s0": ["1"]}), monkeypatch, checkpoint_store="redis",
                redis_config=pool).open()
    h.ids(2)
    shared = Harness(FakeKinesis({"s0": ["1"]}), monkeypatch, checkpoint_store="redis")
    shared.open({"topology.state.provider": "redis",
                 "topology.state.provider.config": {**pool, "keyPrefix": "topo"}})
    shared.ids(1)  # without a Redis of its own: the topology's state provider config
    assert [(c.host, c.port, c.prefix, n, s) for c, n, s in calls] == \
        [("redis.example", 6380, "kin", "clicks", "events"),
         ("redis.example", 6380, "topo", "clicks", "events")]
    assert h.emits == [(["k1", "1", b"d1"], "s0:1")]
