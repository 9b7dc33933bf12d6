"""The Kinesis spout's parts without servers: config validation and msgpack round trip, message
ids, schemes, the lazy boto3 import, shard getters (iterator expiry, throttling, end of shard),
shard assignment, and the state manager's checkpointing and resharding order over a fake client
and an in-memory checkpoint store."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

import msgpack
import pytest

from stormpy.config import SettingError
from stormpy.connectors.kinesis import (
    BufferedGetter,
    Checkpoint,
    CheckpointError,
    CheckpointUnavailable,
    KinesisRecord,
    KinesisSpout,
    KinesisSpoutConfig,
    KinesisStreamError,
    KinesisUnavailableError,
    Position,
    ShardGetter,
    ShardInfo,
    message_id,
    parse_message_id,
    require_boto3,
)
from stormpy.connectors.kinesis._scheme import load_scheme
from stormpy.connectors.kinesis._state import StateManager, assign
from stormpy.topology import TopologyBuilder
from stormpy.topology._spec import TopologySpec


def cfg(**kw: Any) -> KinesisSpoutConfig:
    return KinesisSpoutConfig(**{"name": "clicks", "stream": "events", **kw})


# --- config ------------------------------------------------------------------------------------
def test_config_defaults_match_the_documented_ones() -> None:
    c = cfg()
    assert (c.initial_position, c.records_per_get, c.max_retries) == ("TRIM_HORIZON", 1000, 3)
    assert c.zookeeper_connect({"storm.zookeeper.servers": ["zk1", "zk2:2182"],
                                "storm.zookeeper.port": 2181}) == "zk1:2181,zk2:2182"
    assert c.zookeeper_root({}) == "/stormpy"
    assert cfg(zookeeper_servers=["a:1", "b:2"]).zookeeper_connect({}) == "a:1,b:2"


@pytest.mark.parametrize("bad, named", [
    ({"stream": ""}, "stream"), ({"name": "a/b"}, "name"),
    ({"initial_position": "EARLIEST"}, "initial_position"),
    ({"initial_position": "AT_TIMESTAMP"}, "initial_timestamp"),
    ({"records_per_get": 0}, "records_per_get"), ({"records_per_get": 10001}, "records_per_get"),
    ({"max_retries": -1}, "max_retries"), ({"checkpoint_interval_ms": True}, "checkpoint_interval_ms"),
    ({"zookeeper_servers": 5}, "zookeeper_servers"), ({"zookeeper_prefix": "rel"}, "zookeeper_prefix"),
    ({"initial_position": "AT_TIMESTAMP", "initial_timestamp": "noon"}, "initial_timestamp"),
    ({"client_retries": 21}, "client_retries"), ({"region": ""}, "region"),
])
def test_bad_config_values_are_named(bad: dict[str, Any], named: str) -> None:
    with pytest.raises(SettingError) as err:
        cfg(**bad).validate()
    assert err.value.setting == f"KinesisSpoutConfig.{named}"
    assert str(err.value).startswith(f"KinesisSpoutConfig.{named}: ")
    with pytest.raises(SettingError):  # what travels in a topology is validated on both ends
        KinesisSpout.of(cfg(**bad))
    with pytest.raises(SettingError):
        KinesisSpoutConfig.from_doc({"name": "clicks", "stream": "events", **bad})


def test_config_travels_as_msgpack_through_a_topology_spec() -> None:
    c = cfg(initial_position="AT_TIMESTAMP", initial_timestamp=1700000000.5, zookeeper_servers=["h:1"])
    assert KinesisSpoutConfig.from_doc(msgpack.unpackb(msgpack.packb(c.to_doc()))) == c
    builder = TopologyBuilder()
    builder.set_spout("kinesis", KinesisSpout.of(c), 2)
    spec = builder.create_topology()
    doc = msgpack.unpackb(msgpack.packb(spec.to_doc()))
    back = TopologySpec.from_doc(doc)
    assert KinesisSpoutConfig.from_doc(back.components["kinesis"].kwargs["config"]) == c
    assert list(back.stream_fields("kinesis", "default")) == ["partition_key", "sequence_number",
                                                             "data"]
    with pytest.raises(SettingError, match=r"^KinesisSpoutConfig: unknown settings \['colour'\]"):
        KinesisSpoutConfig.from_doc({**c.to_doc(), "colour": 1})
    with pytest.raises(SettingError, match=r"^KinesisSpoutConfig.stream: is required"):
        KinesisSpoutConfig.from_doc({"name": "clicks"})


def test_message_ids_round_trip_and_bad_ones_are_named() -> None:
    assert parse_message_id(message_id("shardId-000000000003", "4959")) == ("shardId-000000000003",
                                                                            "4959")
    for bad in ("nocolon", "shard:", ":12", 12, "shard:12a"):
        with pytest.raises(ValueError, match="message id"):
            parse_message_id(bad)


class UpperScheme:
    fields = ["key", "text"]

    def deserialize(self, record: KinesisRecord) -> list[Any] | None:
        return [record.partition_key, record.data.decode().upper()]


def test_schemes_load_by_path_and_bad_ones_are_named() -> None:
    scheme = load_scheme(f"{__name__}:UpperScheme")
    assert scheme.deserialize(KinesisRecord("s", "1", "k", b"hi")) == ["k", "HI"]
    with pytest.raises(SettingError, match=r"^KinesisSpoutConfig.record_scheme: .*no.such.module"):
        load_scheme("no.such.module:Scheme")
    with pytest.raises(SettingError, match=r"^KinesisSpoutConfig.record_scheme: .*deserialize"):
        load_scheme("stormpy.connectors.kinesis._records:sequence_key")


def test_missing_boto3_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    with pytest.raises(KinesisUnavailableError, match=r"stormpy-runtime\[kinesis\]"):
        require_boto3()


# --- a fake Kinesis service ---------------------------------------------------------------------
class ClientError(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.response = {"Error": {"Code": code}}


class FakeKinesis:
    """Shards with records; iterators are (shard, position) strings; errors can be scripted."""

    def __init__(self, shards: dict[str, list[str]], parents: dict[str, tuple[str, ...]] | None = None,
                 closed: set[str] | None = None) -> None:
        self.records = {s: list(seqs) for s, seqs in shards.items()}
        self.parents = parents or {}
        self.closed = closed or set()
        self.errors: list[str] = []
        self.calls: list[tuple[str, Any]] = []

    def list_shards(self, **kw: Any) -> dict[str, Any]:
        out = []
        for s in sorted(self.records):
            rng: dict[str, str] = {"StartingSequenceNumber": "0"}
            if s in self.closed:
                rng["EndingSequenceNumber"] = "999999"
            parents = self.parents.get(s, ())
            d: dict[str, Any] = {"ShardId": s, "SequenceNumberRange": rng}
            if parents:
                d["ParentShardId"] = parents[0]
            if len(parents) > 1:
                d["AdjacentParentShardId"] = parents[1]
            out.append(d)
        return {"Shards": out}

    def get_shard_iterator(self, StreamName: str, ShardId: str, ShardIteratorType: str,
                           StartingSequenceNumber: str | None = None, **kw: Any) -> dict[str, Any]:
        self.calls.append(("iterator", (ShardId, ShardIteratorType, StartingSequenceNumber)))
        seqs = self.records[ShardId]
        if ShardIteratorType == "AFTER_SEQUENCE_NUMBER":
            pos = sum(1 for s in seqs if int(s) <= int(StartingSequenceNumber or 0))
        elif ShardIteratorType == "LATEST":
            pos = len(seqs)
        else:
            pos = 0
        return {"ShardIterator": f"{ShardId}|{pos}"}

    def get_records(self, ShardIterator: str, Limit: int) -> dict[str, Any]:
        self.calls.append(("get", ShardIterator))
        if self.errors:
            raise ClientError(self.errors.pop(0))
        shard, pos_text = ShardIterator.split("|")
        pos = int(pos_text)
        seqs = self.records[shard][pos:pos + Limit]
        end = pos + len(seqs)
        nxt = None if shard in self.closed and end >= len(self.records[shard]) \
            else f"{shard}|{end}"
        return {"Records": [{"SequenceNumber": s, "PartitionKey": "k", "Data": s.encode()}
                            for s in seqs], "NextShardIterator": nxt, "MillisBehindLatest": 0}


def drain(getter: BufferedGetter, clock: list[float], rounds: int = 50) -> list[str]:
    out = []
    for _ in range(rounds):
        r = getter.next()
        if r is None:
            clock[0] += 10.0
        else:
            out.append(r.sequence_number)
    return out


def buffered(client: FakeKinesis, shard: str, start: Position, clock: list[float],
             per_get: int = 2) -> BufferedGetter:
    return BufferedGetter(ShardGetter(client, cfg(), shard, start), per_get, 0.5, lambda: clock[0])


# --- getters ------------------------------------------------------------------------------------
def test_getter_reads_in_batches_after_a_checkpoint() -> None:
    client = FakeKinesis({"s0": ["5", "9", "10", "11", "100"]})
    clock = [0.0]
    assert drain(buffered(client, "s0", Position.after("9"), clock), clock) == ["10", "11", "100"]
    assert ("iterator", ("s0", "AFTER_SEQUENCE_NUMBER", "9")) in client.calls


def test_expired_iterator_reopens_after_the_last_record_read() -> None:
    client = FakeKinesis({"s0": ["1", "2", "3", "4", "5"]})
    clock = [0.0]
    getter = buffered(client, "s0", Position("TRIM_HORIZON"), clock)
    assert [getter.next(), getter.next()] == [KinesisRecord("s0", s, "k", s.encode()) for s in "12"]
    last_read = getter.getter.last_read  # the prefetch may have read ahead of what was handed out
    assert last_read is not None and int(last_read) >= 2
    client.errors.append("ExpiredIteratorException")
    assert drain(getter, clock) == ["3", "4", "5"]
    assert client.calls.count(("iterator", ("s0", "AFTER_SEQUENCE_NUMBER", last_read))) == 1


def test_throttling_backs_the_shard_off() -> None:
    client = FakeKinesis({"s0": ["1"]})
    clock = [0.0]
    getter = buffered(client, "s0", Position("TRIM_HORIZON"), clock)
    client.errors += ["ProvisionedThroughputExceededException"] * 3
    assert getter.next() is None
    gets = len([c for c in client.calls if c[0] == "get"])
    assert getter.next() is None  # backed off: no call
    assert len([c for c in client.calls if c[0] == "get"]) == gets
    assert drain(getter, clock) == ["1"] and getter.backoffs == 3


def test_other_service_errors_name_the_stream_and_shard_and_back_off() -> None:
    client = FakeKinesis({"s0": ["1"]})
    client.errors.append("ResourceNotFoundException")
    clock = [0.0]
    reported: list[BaseException] = []
    getter = BufferedGetter(ShardGetter(client, cfg(), "s0", Position("TRIM_HORIZON")), 2, 0.5,
                            lambda: clock[0], on_error=reported.append)
    assert getter.next() is None  # reported, not raised on the loop
    assert len(reported) == 1 and isinstance(reported[0], KinesisStreamError)
    assert re.search("'events'.*does not exist", str(reported[0]))
    assert getter.errors == 1 and getter.backoffs == 1
    assert drain(getter, clock) == ["1"]  # read again after the backoff


class DeferredPool:
    """A submit that queues jobs; ``run_one`` runs the oldest job and its on_done (the seam, by
    hand: jobs run later, results come back in the order the test chooses)."""

    def __init__(self) -> None:
        self.jobs: list[tuple[Callable[[], Any], Callable[[Any, BaseException | None], None]]] = []

    def submit(self, fn: Callable[[], Any], on_done: Callable[[Any, BaseException | None], None]
               ) -> None:
        self.jobs.append((fn, on_done))

    def run_one(self) -> None:
        fn, on_done = self.jobs.pop(0)
        try:
            result = fn()
        except Exception as exc:  # noqa: BLE001 - as the seam does
            on_done(None, exc)
            return
        on_done(result, None)


def test_the_next_batch_is_fetched_off_the_loop_one_call_in_flight_in_order() -> None:
    client = FakeKinesis({"s0": [str(i) for i in range(1, 8)]}, closed={"s0"})
    clock = [0.0]
    pool = DeferredPool()
    getter = BufferedGetter(ShardGetter(client, cfg(), "s0", Position("TRIM_HORIZON")), 3, 0.5,
                            lambda: clock[0], submit=pool.submit)
    assert getter.next() is None and len(pool.jobs) == 1 and getter.in_flight
    assert getter.next() is None and len(pool.jobs) == 1  # never two calls of a shard in flight
    assert [c for c in client.calls if c[0] == "get"] == []  # nothing ran on the "loop"
    pool.run_one()
    assert not getter.in_flight and getter.buffered == 3
    out = [getter.next()]  # hands out the first record and requests the next batch meanwhile
    assert len(pool.jobs) == 1 and getter.in_flight
    out += [getter.next(), getter.next(), getter.next()]  # the buffer ran dry: None, no new call
    assert out[3] is None and len(pool.jobs) == 1
    pool.run_one()
    while not getter.finished:
        record = getter.next()
        if record is not None:
            out.append(record)
        elif pool.jobs:
            pool.run_one()
    assert [r.sequence_number for r in out if r is not None] == [str(i) for i in range(1, 8)]


def test_a_closed_getter_drops_a_late_result() -> None:
    client = FakeKinesis({"s0": ["1", "2"]})
    pool = DeferredPool()
    getter = BufferedGetter(ShardGetter(client, cfg(), "s0", Position("TRIM_HORIZON")), 3, 0.5,
                            lambda: 0.0, submit=pool.submit)
    assert getter.next() is None
    getter.close()
    pool.run_one()
    assert getter.buffered == 0 and getter.next() is None and pool.jobs == []


def test_a_closed_shard_finishes_once_read_to_its_end() -> None:
    client = FakeKinesis({"s0": ["1", "2", "3"]}, closed={"s0"})
    clock = [0.0]
    getter = buffered(client, "s0", Position("TRIM_HORIZON"), clock)
    assert drain(getter, clock) == ["1", "2", "3"]
    assert getter.finished


def test_assignment_is_deterministic_by_task_index() -> None:
    shards = [ShardInfo(f"shardId-00000000000{i}") for i in (3, 0, 2, 1, 4)]
    owned = [[s.shard_id[-1] for s in assign(shards, i, 2)] for i in range(2)]
    assert owned == [["0", "2", "4"], ["1", "3"]]
    for task_index, num_tasks in ((2, 2), (-1, 2), (0, 0)):  # the range check Kafka's had
        with pytest.raises(ValueError, match=f"task index {task_index} out of range for "
                                             f"{num_tasks} tasks"):
            assign(shards, task_index, num_tasks)


# --- state manager ------------------------------------------------------------------------------
class MemoryStore:
    """CheckpointStore in memory; ``down`` makes every call raise CheckpointUnavailable."""

    def __init__(self) -> None:
        self.checkpoints: dict[str, Checkpoint] = {}
        self.shard_list: list[ShardInfo] | None = None
        self.down = False
        self.writes: list[tuple[str, Checkpoint]] = []
        self.watcher: Callable[[list[ShardInfo] | None], None] | None = None

    def _check(self) -> None:
        if self.down:
            raise CheckpointUnavailable("down")

    def read(self, shard_id: str) -> Checkpoint | None:
        self._check()
        return self.checkpoints.get(shard_id)

    def write(self, shard_id: str, checkpoint: Checkpoint) -> bool:
        self._check()
        if not checkpoint.ahead_of(self.checkpoints.get(shard_id)):
            return False
        self.checkpoints[shard_id] = checkpoint
        self.writes.append((shard_id, checkpoint))
        return True

    def read_shard_list(self) -> list[ShardInfo] | None:
        return self.shard_list

    def write_shard_list(self, shards: list[ShardInfo]) -> None:
        self._check()
        self.shard_list = shards

    def watch_shard_list(self, callback: Callable[[list[ShardInfo] | None], None]) -> None:
        self.watcher = callback

    def close(self) -> None:
        pass


def manager(client: FakeKinesis, store: MemoryStore, clock: list[float], task: int = 0,
            tasks: int = 1, **kw: Any) -> StateManager:
    m = StateManager(cfg(records_per_get=10, **kw), client, store, task, tasks, lambda: clock[0])
    m.start()
    return m


def emit_all(m: StateManager, clock: list[float], rounds: int = 40) -> list[KinesisRecord]:
    out = []
    for _ in range(rounds):
        m.tick()
        state = m.next_state()
        if state is None or state.getter is None or state.tracker is None:
            clock[0] += 1.0
            continue
        r = state.getter.next()
        if r is None:
            if state.getter.finished:
                m.shard_finished(state)
            clock[0] += 1.0
            continue
        state.tracker.on_emit(r, False)
        out.append(r)
    return out


def test_checkpoints_are_written_on_the_interval_only_when_changed() -> None:
    client = FakeKinesis({"s0": ["1", "2", "3"]})
    store, clock = MemoryStore(), [0.0]
    m = manager(client, store, clock)
    records = emit_all(m, clock, rounds=3)
    assert [r.sequence_number for r in records] == ["1", "2", "3"]
    tracker = m.states["s0"].tracker
    assert tracker is not None
    tracker.on_ack("2")
    m.flush()
    assert store.writes == []  # "1" is still pending: nothing to store
    tracker.on_ack("1")
    clock[0] += 10.0
    m.tick()
    m.tick()
    assert store.writes == [("s0", Checkpoint("2"))]


def test_checkpoints_are_retried_while_the_store_is_down_and_never_move_backwards() -> None:
    client = FakeKinesis({"s0": ["1", "2"]})
    store, clock = MemoryStore(), [0.0]
    m = manager(client, store, clock)
    emit_all(m, clock, rounds=2)
    tracker = m.states["s0"].tracker
    assert tracker is not None
    tracker.on_ack("1")
    store.down = True
    m.flush()
    assert m.checkpoint_failures == 1 and store.writes == []
    store.down = False
    store.checkpoints["s0"] = Checkpoint("2")  # another task got further meanwhile
    m.flush()
    assert store.checkpoints["s0"] == Checkpoint("2") and store.writes == []


def test_a_shard_resumes_after_its_stored_checkpoint() -> None:
    client = FakeKinesis({"s0": ["1", "2", "3"]})
    store, clock = MemoryStore(), [0.0]
    store.checkpoints["s0"] = Checkpoint("2")
    m = manager(client, store, clock)
    assert [r.sequence_number for r in emit_all(m, clock)] == ["3"]


def test_children_start_only_after_their_parent_is_read_and_checkpointed_to_its_end() -> None:
    client = FakeKinesis({"p": ["1", "2"], "c1": ["10"], "c2": ["11"]},
                         parents={"c1": ("p",), "c2": ("p",)}, closed={"p"})
    store, clock = MemoryStore(), [0.0]
    m = manager(client, store, clock)
    got = emit_all(m, clock)
    assert [r.sequence_number for r in got] == ["1", "2"]  # the children wait
    tracker = m.states["p"].tracker
    assert tracker is not None
    tracker.on_ack("1")
    tracker.on_ack("2")
    m.shard_finished(m.states["p"])
    assert store.checkpoints["p"] == Checkpoint("2", shard_end=True)
    later = emit_all(m, clock)
    assert sorted(r.sequence_number for r in later) == ["10", "11"]


def test_children_of_a_listed_parent_start_at_trim_horizon_whatever_the_initial_position() -> None:
    client = FakeKinesis({"p": ["1"], "c": ["10", "11"]}, parents={"c": ("p",)}, closed={"p"})
    store, clock = MemoryStore(), [0.0]
    m = manager(client, store, clock, initial_position="LATEST")
    assert [r.sequence_number for r in emit_all(m, clock)] == ["10", "11"]  # p read from LATEST
    assert ("iterator", ("c", "TRIM_HORIZON", None)) in client.calls
    assert store.checkpoints["p"] == Checkpoint(None, shard_end=True)


def test_a_child_owned_by_another_task_waits_for_the_stored_end_of_its_parent() -> None:
    client = FakeKinesis({"a-parent": ["1"], "b-child": ["5"]}, parents={"b-child": ("a-parent",)},
                         closed={"a-parent"})
    store, clock = MemoryStore(), [0.0]
    m = manager(client, store, clock, task=1, tasks=2)
    assert sorted(m.states) == ["b-child"]
    assert emit_all(m, clock, rounds=5) == []
    store.checkpoints["a-parent"] = Checkpoint("1", shard_end=True)
    clock[0] += 10.0
    assert [r.sequence_number for r in emit_all(m, clock)] == ["5"]


def test_a_corrupt_checkpoint_is_an_error_naming_the_node() -> None:
    with pytest.raises(CheckpointError, match="/stormpy/checkpoints/clicks/events/s0"):
        Checkpoint.decode(b"{oops", "/stormpy/checkpoints/clicks/events/s0")
    with pytest.raises(CheckpointError, match="corrupt"):
        Checkpoint.decode(b'{"sequence_number": "12x"}', "/p")
    assert Checkpoint.decode(Checkpoint("12", True).encode(), "/p") == Checkpoint("12", True)


def test_checkpoint_writes_run_off_the_loop_one_per_shard_never_past_a_pending_record() -> None:
    client = FakeKinesis({"s0": ["1", "2", "3"]})
    store, clock, pool = MemoryStore(), [0.0], DeferredPool()
    m = StateManager(cfg(records_per_get=10), client, store, 0, 1, lambda: clock[0], pool.submit)
    m.begin(m.prepare())
    pool.run_one()  # the checkpoint read that starts the shard
    state = m.states["s0"]
    assert state.getter is not None and state.tracker is not None
    assert state.getter.next() is None
    pool.run_one()  # GetRecords
    records = [state.getter.next() for _ in range(3)]
    tracker = state.tracker
    for r in records:
        assert r is not None
        tracker.on_emit(r, False)
    tracker.on_ack("1")
    queued = len(pool.jobs)
    m.flush()
    m.flush()
    assert len(pool.jobs) == queued + 1 and store.writes == []  # one write in flight, not run yet
    tracker.on_ack("3")  # "2" still pending: the next write may not pass it
    while pool.jobs:
        pool.run_one()
    assert store.writes == [("s0", Checkpoint("1"))] and state.stored == Checkpoint("1")
    m.flush()
    while pool.jobs:
        pool.run_one()
    assert store.writes == [("s0", Checkpoint("1"))]  # nothing new past the pending "2"
    tracker.on_ack("2")
    store.checkpoints["s0"] = Checkpoint("3")  # another task stored it meanwhile
    m.flush()
    while pool.jobs:
        pool.run_one()
    assert store.checkpoints["s0"] == Checkpoint("3") and state.stored == Checkpoint("3")


def test_background_errors_go_to_on_error_and_are_retried() -> None:
    client = FakeKinesis({"s0": ["1"]})
    store, clock = MemoryStore(), [0.0]
    store.checkpoints["s0"] = Checkpoint("0")
    reported: list[BaseException] = []

    def corrupt(shard_id: str) -> Checkpoint | None:
        raise CheckpointError(f"corrupt Kinesis checkpoint at ZooKeeper node /x/{shard_id}")

    original = store.read
    store.read = corrupt  # type: ignore[method-assign]
    m = StateManager(cfg(records_per_get=10), client, store, 0, 1, lambda: clock[0],
                     on_error=reported.append)
    m.start()
    assert [str(e) for e in reported] == ["corrupt Kinesis checkpoint at ZooKeeper node /x/s0"]
    assert m.states["s0"].tracker is None  # not silently restarted
    store.read = original  # type: ignore[method-assign]
    assert [r.sequence_number for r in emit_all(m, clock, rounds=20)] == ["1"]  # retried


def test_connector_checkpoints_sit_apart_from_every_topology_id() -> None:
    from stormpy.cluster.paths import ZkPaths
    from stormpy.topology._spec import TOPOLOGY_NAME_PATTERN

    p = ZkPaths("/stormpy")
    assert p.connector_checkpoints("kinesis", "clicks", "my/stream", "shardId-1") == \
        "/stormpy/checkpoints/kinesis:clicks/my%2Fstream/shardId-1"
    assert p.connector_checkpoints("kinesis", "clicks") not in p.topology_paths("clicks")
    assert not p.connector_checkpoints("kinesis", "clicks").startswith(p.checkpoints("clicks") + "/")
    assert TOPOLOGY_NAME_PATTERN.fullmatch("kinesis:clicks") is None  # no topology id has a ':'
    with pytest.raises(ValueError, match="connector"):
        p.connector_checkpoints("Kin/esis", "clicks")
