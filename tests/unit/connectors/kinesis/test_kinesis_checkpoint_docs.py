"""The Kinesis spout's checkpoints and its client wrapper without servers: which checkpoint is
further along, the stored document and the errors naming a corrupt node, the store's refusal to
move a checkpoint backwards, each failure of the state layer turned into the connector's error
naming the node, the shard list and its watch, and the boto3 client: its bounds, ListShards
paging, and every service error named with the stream and endpoint."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from stormpy.cluster.storage import ZkStorage
from stormpy.connectors.kinesis import (
    Checkpoint,
    CheckpointError,
    CheckpointUnavailable,
    KinesisSpoutConfig,
    KinesisStreamError,
    ShardInfo,
    ZkCheckpointStore,
    require_boto3,
)
from stormpy.connectors.kinesis import _checkpoints as checkpoints
from stormpy.connectors.kinesis._checkpoints import StateCheckpointStore
from stormpy.connectors.kinesis._client import (
    THROTTLING,
    describe,
    error_code,
    list_shards,
    make_client,
    where,
)
from stormpy.state import MemoryBackend, Store
from stormpy.state._redis_store import RedisConfig
from stormpy.state._zookeeper import ZkStore
from stormpy.topology._state import (
    CHECKPOINTS,
    CorruptStateError,
    StateStoreError,
    StateUnavailableError,
    encode_state,
)


def cfg(**kw: Any) -> KinesisSpoutConfig:
    return KinesisSpoutConfig(**{"name": "clicks", "stream": "events", **kw})


# --- checkpoints -------------------------------------------------------------------------------
def test_which_checkpoint_is_further_along() -> None:
    assert not Checkpoint(None).ahead_of(None)
    assert Checkpoint("0").ahead_of(None) and Checkpoint(None, True).ahead_of(None)
    assert Checkpoint("10").ahead_of(Checkpoint("9"))
    assert not Checkpoint("9").ahead_of(Checkpoint("10"))
    assert not Checkpoint("9").ahead_of(Checkpoint("9"))
    assert Checkpoint("9", True).ahead_of(Checkpoint("9"))
    assert not Checkpoint("9", True).ahead_of(Checkpoint("9", True))
    assert not Checkpoint("9").ahead_of(Checkpoint("9", True))
    assert Checkpoint("0").ahead_of(Checkpoint(None))
    assert not Checkpoint(None).ahead_of(Checkpoint("0"))
    assert not Checkpoint(None, True).ahead_of(Checkpoint("0"))
    assert Checkpoint(None, True).ahead_of(Checkpoint(None))
    assert not Checkpoint(None).ahead_of(Checkpoint(None))
    assert not Checkpoint(None, True).ahead_of(Checkpoint(None, True))


def test_a_checkpoint_is_stored_as_a_state_document() -> None:
    assert Checkpoint("12", True).to_doc() == {"sequence_number": "12", "shard_end": True}
    assert Checkpoint(None).to_doc() == {"sequence_number": None, "shard_end": False}
    for cp in (Checkpoint("12", True), Checkpoint(None), Checkpoint("7")):
        assert Checkpoint.decode(cp.encode(), "/p") == cp
    assert Checkpoint.from_doc({"sequence_number": "5"}, "/p") == Checkpoint("5", False)


def test_a_corrupt_checkpoint_names_its_node_and_what_to_do() -> None:
    with pytest.raises(CheckpointError) as err:
        Checkpoint.decode(b"\xc1junk", "/stormpy/checkpoints/kinesis:c/s/shard-0")
    text = str(err.value)
    assert text.startswith("corrupt Kinesis checkpoint at /stormpy/checkpoints/kinesis:c/s/shard-0: "
                           "b'\\xc1junk' (")
    assert text.endswith("); fix or delete the node (deleting it restarts the shard at "
                         "initial_position)")
    assert err.value.__cause__ is None and err.value.__suppress_context__
    tail = "; fix or delete the node (deleting it restarts the shard at initial_position)"
    for doc, why in (({"sequence_number": 5}, "bad field types"),
                     ({"sequence_number": "5", "shard_end": "yes"}, "bad field types"),
                     ({"shard_end": True}, "'sequence_number'"),
                     ({"sequence_number": "x1"}, "sequence number 'x1' is not a decimal number")):
        with pytest.raises(CheckpointError) as err:
            Checkpoint.from_doc(doc, "/n")
        assert str(err.value) == f"corrupt Kinesis checkpoint at /n: {doc} ({why}){tail}"
        assert err.value.__suppress_context__
    long = {"sequence_number": "1" * 100}
    with pytest.raises(CheckpointError) as err:
        Checkpoint.from_doc({**long, "shard_end": 1}, "/n")
    assert str(err.value) == (f"corrupt Kinesis checkpoint at /n: "
                              f"{str({**long, 'shard_end': 1})[:80]} (bad field types){tail}")
    stored = encode_state("checkpoint", {"sequence_number": 5})  # a document, not a checkpoint
    with pytest.raises(CheckpointError) as err:
        Checkpoint.decode(stored, "/stormpy/c/shard-3")
    assert str(err.value) == ("corrupt Kinesis checkpoint at /stormpy/c/shard-3: "
                              f"{ {'sequence_number': 5} } (bad field types){tail}")
    junk = b"\xc1" + b"j" * 100
    with pytest.raises(CheckpointError) as err:
        Checkpoint.decode(junk, "/n")
    assert str(err.value).startswith(f"corrupt Kinesis checkpoint at /n: {junk[:80]!r} (")
    for doc in (["5"], None, "5"):
        with pytest.raises(CheckpointError, match="^corrupt Kinesis checkpoint at /n: "):
            Checkpoint.from_doc(doc, "/n")


class Scripted(Store):
    """A state-layer store over a memory store whose calls can be made to fail."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.location = "scripted"
        self.up = True
        self.error: Exception | None = None
        self.closed = 0
        self.subs: list[tuple[str, ...]] = []

    def sub(self, *segments: str) -> Store:
        self.subs.append(segments)
        return self

    def available(self) -> bool:
        return self.up

    def _fail(self) -> None:
        if self.error is not None:
            raise self.error

    def get(self, key: str, default: Any = None) -> Any:
        self._fail()
        return self.inner.get(key, default)

    def put(self, key: str, value: Any) -> None:
        self._fail()
        self.inner.put(key, value)

    def update(self, key: str, fn: Callable[[Any], Any]) -> bool:
        self._fail()
        return self.inner.update(key, fn)

    def watch(self, key: str, callback: Callable[[Any], None]) -> Callable[[], None]:
        self._fail()
        return self.inner.watch(key, callback)

    def close(self) -> None:
        self.closed += 1


def test_the_store_names_nodes_and_only_moves_checkpoints_forwards() -> None:
    backend = MemoryBackend()
    store = StateCheckpointStore.on_backend(backend, "clicks", "events")
    assert store.path("shardId-1") == "memory:checkpoints/kinesis:clicks/events/shardId-1"
    assert store.stream_path == "memory:checkpoints/kinesis:clicks/events"
    assert store.read("shardId-1") is None and store.read_shard_list() is None
    assert store.write("shardId-1", Checkpoint("5")) is True
    assert store.write("shardId-1", Checkpoint("4")) is False
    assert store.write("shardId-1", Checkpoint("5")) is False
    assert store.read("shardId-1") == Checkpoint("5")
    raw = backend.named_store(CHECKPOINTS, "kinesis", "clicks").sub("events")
    assert raw.get("shardId-1") == {"sequence_number": "5", "shard_end": False}
    raw.put("shardId-2", {"sequence_number": 3})
    with pytest.raises(CheckpointError, match=r"^corrupt Kinesis checkpoint at "
                       r"memory:checkpoints/kinesis:clicks/events/shardId-2: "):
        store.write("shardId-2", Checkpoint("9"))
    assert raw.get("shardId-2") == {"sequence_number": 3}
    with pytest.raises(CheckpointError) as err:
        store.read("shardId-2")
    assert str(err.value) == (
        "corrupt Kinesis checkpoint at memory:checkpoints/kinesis:clicks/events/shardId-2: "
        "{'sequence_number': 3} (bad field types); fix or delete the node (deleting it restarts "
        "the shard at initial_position)")
    store.close()


def test_the_shard_list_is_stored_watched_and_a_corrupt_one_named(
        caplog: pytest.LogCaptureFixture) -> None:
    backend = MemoryBackend()
    store = StateCheckpointStore.on_backend(backend, "clicks", "events")
    seen: list[Any] = []
    store.watch_shard_list(seen.append)
    shards = [ShardInfo("s0", (), True), ShardInfo("s1", ("s0", "sx"))]
    store.write_shard_list(shards)
    raw = backend.named_store(CHECKPOINTS, "kinesis", "clicks").sub("events")
    assert raw.get("") == {"shards": [{"id": "s0", "parents": [], "closed": True},
                                      {"id": "s1", "parents": ["s0", "sx"], "closed": False}]}
    assert store.read_shard_list() == shards and seen == [None, shards]
    caplog.set_level(logging.ERROR, logger="stormpy.connectors.kinesis._checkpoints")
    raw.put("", {"shards": [{"parents": []}]})
    assert seen == [None, shards]  # the corrupt list is skipped, logged
    assert [r.getMessage() for r in caplog.records] == [
        "corrupt Kinesis shard list at memory:checkpoints/kinesis:clicks/events: "
        "{'shards': [{'parents': []}]} ('id')"]
    with pytest.raises(CheckpointError) as err:
        store.read_shard_list()
    assert str(err.value) == ("corrupt Kinesis shard list at memory:checkpoints/kinesis:clicks/"
                              "events: {'shards': [{'parents': []}]} ('id')")
    many = {"shards": [{"id": f"shardId-{i:012d}"} for i in range(5)] + [{"parents": []}]}
    raw.put("", many)
    with pytest.raises(CheckpointError) as err:
        store.read_shard_list()
    assert str(err.value) == ("corrupt Kinesis shard list at memory:checkpoints/kinesis:clicks/"
                              f"events: {str(many)[:80]} ('id')")
    raw.put("", {"other": 1})
    with pytest.raises(CheckpointError, match="corrupt Kinesis shard list"):
        store.read_shard_list()
    store.close()
    raw.put("", {"shards": []})
    assert len(seen) == 2  # the watch ended with the store
    assert store._watches == []


def test_each_failure_of_the_state_layer_becomes_the_connectors_error_naming_the_node() -> None:
    scripted = Scripted(MemoryBackend().named_store(CHECKPOINTS, "kinesis", "clicks"))
    store = StateCheckpointStore(scripted, "events")
    assert scripted.subs == [("events",)] and store.client is None
    scripted.up = False
    for call in (lambda: store.read("s0"), lambda: store.write("s0", Checkpoint("1")),
                 store.read_shard_list, lambda: store.write_shard_list([]),
                 lambda: store.watch_shard_list(print)):
        with pytest.raises(CheckpointUnavailable, match="the store is not connected"):
            call()
    with pytest.raises(CheckpointUnavailable) as down:
        store.read("s0")
    assert str(down.value) == "scripted/s0: the store is not connected"
    with pytest.raises(CheckpointUnavailable) as down:
        store.read_shard_list()
    assert str(down.value) == "scripted (shard list): the store is not connected"
    with pytest.raises(CheckpointUnavailable) as down:
        store.watch_shard_list(print)
    assert str(down.value) == "scripted (shard list): the store is not connected"
    scripted.up = True
    scripted.error = StateUnavailableError("zk:/n", "no answer within 10s")
    with pytest.raises(CheckpointUnavailable) as gone:
        store.read("s0")
    assert str(gone.value) == "state zk:/n: no answer within 10s"
    assert gone.value.__cause__ is scripted.error
    scripted.error = CorruptStateError("zk:/n", "not msgpack")
    with pytest.raises(CheckpointError) as corrupt:
        store.write("s0", Checkpoint("1"))
    assert str(corrupt.value) == ("corrupt Kinesis checkpoint data at scripted/s0: not msgpack; fix "
                                  "or delete the node (deleting a shard's checkpoint restarts the "
                                  "shard at initial_position)")
    assert corrupt.value.__suppress_context__
    scripted.error = StateStoreError("zk:/n", "no permission")
    with pytest.raises(CheckpointError) as failed:
        store.write_shard_list([ShardInfo("s0")])
    assert str(failed.value) == ("Kinesis checkpoint store failed at scripted (shard list): "
                                 "state zk:/n: no permission")
    assert failed.value.__cause__ is scripted.error
    scripted.error = None
    assert store.write("s0", Checkpoint("1")) and store.read("s0") == Checkpoint("1")
    store.close()
    assert scripted.closed == 1


def test_only_a_state_layer_backend_holds_checkpoints() -> None:
    class Foreign:
        description = "foreign-kv"

        def named_store(self, *parts: str) -> object:
            assert parts == (CHECKPOINTS, "kinesis", "clicks")
            return object()

    with pytest.raises(CheckpointError) as err:
        StateCheckpointStore.on_backend(Foreign(), "clicks", "events")  # type: ignore[arg-type]
    assert str(err.value) == "the state backend foreign-kv is not one of the state layer's"


def test_a_redis_store_sits_under_the_connectors_own_name() -> None:
    store = StateCheckpointStore.on_redis(RedisConfig("redis.example", 6390, prefix="kin"),
                                          "clicks", "events")  # connects on first use only
    try:
        assert store.path("s0").endswith("checkpoints/kinesis:clicks/events/s0")
        assert store.client is None
    finally:
        store.close()


def test_an_own_zookeeper_is_opened_with_bounded_timeouts_and_failures_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, ...]] = []
    inner = MemoryBackend().named_store(CHECKPOINTS, "kinesis", "clicks")

    def opened(connect: str, root: str, location: str, *, connect_timeout_secs: float,
               session_timeout_secs: float) -> Store:
        calls.append((connect, root, location, connect_timeout_secs, session_timeout_secs))
        return inner

    monkeypatch.setattr(checkpoints, "open_zk_store", opened)
    store = ZkCheckpointStore.connect("zk1:2181", "/kin", "clicks", "events", 1.5)
    assert isinstance(store, ZkCheckpointStore) and store.store is inner
    ZkCheckpointStore.connect("zk1:2181", "/kin", "clicks", "events", 6.0)
    assert calls == [("zk1:2181", "/kin", "/kin/checkpoints/kinesis:clicks", 1.5, 4.0),
                     ("zk1:2181", "/kin", "/kin/checkpoints/kinesis:clicks", 6.0, 6.0)]

    def unreachable(*args: Any, **kw: Any) -> Store:
        raise StateUnavailableError("zk1:2181", "no answer within 1.5s")

    monkeypatch.setattr(checkpoints, "open_zk_store", unreachable)
    with pytest.raises(CheckpointError) as err:
        ZkCheckpointStore.connect("zk1:2181", "/kin", "clicks", "events", 1.5)
    assert str(err.value) == ("the Kinesis spout cannot reach ZooKeeper at 'zk1:2181' within 1.5s "
                              "(no answer within 1.5s); set KinesisSpoutConfig.zookeeper_servers "
                              "or the topology's storm.zookeeper.servers")
    assert isinstance(err.value.__cause__, StateUnavailableError)


# --- the client ----------------------------------------------------------------------------------
def test_the_client_is_bounded_and_aimed_at_the_configured_endpoint() -> None:
    assert require_boto3().__name__ == "boto3"
    client = make_client(cfg(endpoint_url="http://127.0.0.1:4567", region="eu-west-1",
                             connect_timeout_ms=1500, read_timeout_ms=2500, client_retries=4))
    assert client.meta.endpoint_url == "http://127.0.0.1:4567"
    assert client.meta.region_name == "eu-west-1"
    assert client.meta.service_model.service_name == "kinesis"
    bounds = client.meta.config
    assert (bounds.connect_timeout, bounds.read_timeout) == (1.5, 2.5)
    assert bounds.retries == {"total_max_attempts": 5, "mode": "standard"}  # 4 retries
    with pytest.raises(KinesisStreamError) as err:
        make_client(cfg(endpoint_url="not a url", region="eu-west-1"))
    assert str(err.value).startswith("cannot create a Kinesis client for stream 'events' at "
                                     "not a url: ")
    assert err.value.__cause__ is not None


def test_errors_name_the_stream_and_the_endpoint() -> None:
    assert where(cfg(endpoint_url="http://k:1")) == "stream 'events' at http://k:1"
    assert where(cfg(region="us-east-2")) == \
        "stream 'events' at the AWS endpoint of region us-east-2"
    assert where(cfg()) == "stream 'events' at the AWS endpoint of region (default)"


class ClientError(Exception):
    def __init__(self, code: str | None, text: str = "boom") -> None:
        super().__init__(text)
        self.response = {"Error": {"Code": code}} if code is not None else {"Error": {}}


def named(name: str) -> type[Exception]:
    return type(name, (Exception,), {})


def test_service_error_codes() -> None:
    assert error_code(ClientError("ResourceNotFoundException")) == "ResourceNotFoundException"
    assert error_code(ClientError(None)) is None
    assert error_code(ClientError("")) is None
    err = ValueError("x")
    err.response = "not a dict"  # type: ignore[attr-defined]
    assert error_code(err) is None
    err.response = {}  # type: ignore[attr-defined]
    assert error_code(err) is None
    assert error_code(ValueError("x")) is None
    assert {"ProvisionedThroughputExceededException", "LimitExceededException",
                          "ThrottlingException", "KMSThrottlingException"} == THROTTLING


@pytest.mark.parametrize(("exc", "why"), [
    (ClientError("ResourceNotFoundException"), "the stream does not exist"),
    *[(named(n)("down"), "the endpoint cannot be reached (down)")
      for n in ("EndpointConnectionError", "ConnectTimeoutError", "ConnectionClosedError",
                "ReadTimeoutError")],
    *[(named(n)("none"), "no AWS credentials were found (none); configure boto3's credential chain")
      for n in ("NoCredentialsError", "PartialCredentialsError")],
    (named("NoRegionError")("x"),
     "no region is configured; set KinesisSpoutConfig.region or AWS_DEFAULT_REGION"),
    (ClientError("AccessDeniedException", "not allowed"), "AccessDeniedException: not allowed"),
    (ValueError("odd"), "ValueError: odd"),
])
def test_each_service_error_is_described_naming_the_stream(exc: Exception, why: str) -> None:
    error = describe(exc, cfg(endpoint_url="http://k:1"), "GetRecords")
    assert isinstance(error, KinesisStreamError)
    assert str(error) == f"GetRecords failed for stream 'events' at http://k:1: {why}"


class Pages:
    def __init__(self, pages: list[dict[str, Any]], fail: Exception | None = None) -> None:
        self.pages = pages
        self.fail = fail
        self.calls: list[dict[str, Any]] = []

    def list_shards(self, **kw: Any) -> dict[str, Any]:
        self.calls.append(kw)
        if self.fail is not None:
            raise self.fail
        return self.pages.pop(0)


def test_list_shards_follows_every_page_and_sorts_by_id() -> None:
    client = Pages([
        {"Shards": [{"ShardId": "s2", "ParentShardId": "s0", "AdjacentParentShardId": "s1",
                     "SequenceNumberRange": {"StartingSequenceNumber": "5"}}],
         "NextToken": "t1"},
        {"Shards": [{"ShardId": "s0", "SequenceNumberRange": {"StartingSequenceNumber": "0",
                                                                "EndingSequenceNumber": "4"}},
                    {"ShardId": "s1", "ParentShardId": "", "AdjacentParentShardId": None}],
         "NextToken": ""},
    ])
    assert list_shards(client, cfg()) == [ShardInfo("s0", (), True), ShardInfo("s1", (), False),
                                          ShardInfo("s2", ("s0", "s1"), False)]
    assert client.calls == [{"StreamName": "events"}, {"NextToken": "t1"}]
    assert list_shards(Pages([{}]), cfg()) == []
    failing = Pages([], fail=ClientError("ResourceNotFoundException"))
    with pytest.raises(KinesisStreamError) as err:
        list_shards(failing, cfg(endpoint_url="http://k:1"))
    assert str(err.value) == "ListShards failed for stream 'events' at http://k:1: the stream does " \
                             "not exist"
    assert err.value.__cause__ is failing.fail


def test_a_shard_travels_as_a_plain_document() -> None:
    info = ShardInfo("s1", ("s0",), True)
    assert info.to_doc() == {"id": "s1", "parents": ["s0"], "closed": True}
    assert ShardInfo.from_doc(info.to_doc()) == info
    assert ShardInfo.from_doc({"id": 7}) == ShardInfo("7", (), False)
    assert ShardInfo.from_doc({"id": "a", "parents": [1], "closed": 1}) == ShardInfo("a", ("1",), True)


def test_a_store_in_zookeeper_shows_its_connection_and_is_unavailable_until_connected() -> None:
    storage = ZkStorage("127.0.0.1:1", "/stormpy")  # never started: nothing is contacted
    store = StateCheckpointStore(ZkStore(storage, "/stormpy/checkpoints/kinesis:clicks"),
                                 "my/stream")
    try:
        assert store.client is storage
        assert store.path("shardId-1") == "/stormpy/checkpoints/kinesis:clicks/my%2Fstream/shardId-1"
        with pytest.raises(CheckpointUnavailable) as err:
            store.read("shardId-1")
        assert str(err.value) == ("/stormpy/checkpoints/kinesis:clicks/my%2Fstream/shardId-1: the "
                                  "store is not connected")
    finally:
        store.close()
