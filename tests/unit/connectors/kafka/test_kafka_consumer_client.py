"""KafkaConsumerClient, the spout's adapter over confluent-kafka, against a stand-in
``confluent_kafka`` module: what each call hands the librdkafka consumer, what it makes of the
answers (records, rows, positions, committed offsets, topics, watermarks), which errors reach the
spout and with what text, and the clear error when confluent-kafka is not installed."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from stormpy.connectors.kafka import KafkaRecord, OffsetAndMetadata, TopicPartition
from stormpy.connectors.kafka._client import (
    KafkaConsumerClient,
    KafkaUnavailableError,
    require_confluent_kafka,
)

EOF_CODE = -191


class FakeTP:
    """confluent_kafka.TopicPartition: offset -1001 (OFFSET_INVALID) and no metadata by default."""

    def __init__(self, topic: str, partition: int = -1, offset: int = -1001, metadata: str | None = None,
                 error: Any = None) -> None:
        self.topic, self.partition, self.offset, self.metadata = topic, partition, offset, metadata
        self.error = error

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FakeTP) and self._key() == other._key()

    def _key(self) -> tuple[Any, ...]:
        return (self.topic, self.partition, self.offset, self.metadata, self.error)

    def __repr__(self) -> str:
        return f"FakeTP{self._key()}"


class FakeError:
    def __init__(self, code: int, text: str) -> None:
        self._code, self._text = code, text

    def code(self) -> int:
        return self._code

    def __str__(self) -> str:
        return self._text


class FakeMessage:
    def __init__(self, topic: str, partition: int, offset: int, key: bytes | None = None,
                 value: bytes | None = None, timestamp: tuple[int, int] = (0, -1),
                 headers: Any = None, error: FakeError | None = None) -> None:
        self._t, self._p, self._o, self._k, self._v = topic, partition, offset, key, value
        self._ts, self._h, self._e = timestamp, headers, error

    def error(self) -> FakeError | None:
        return self._e

    def topic(self) -> str:
        return self._t

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def key(self) -> bytes | None:
        return self._k

    def value(self) -> bytes | None:
        return self._v

    def timestamp(self) -> tuple[int, int]:
        return self._ts

    def headers(self) -> Any:
        return self._h


class FakeConsumer:
    """Records every call; answers with what the test put in ``answers``."""

    def __init__(self, conf: dict[str, Any]) -> None:
        self.conf = conf
        self.calls: list[tuple[Any, ...]] = []
        self.answers: dict[str, Any] = {}
        FAKES.append(self)

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((name, args, kwargs))
        answer = self.answers.get(name)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def consume(self, num_messages: int, timeout: float) -> Any:
        return self._call("consume", num_messages, timeout) or []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self._call(name, *args, **kwargs)


FAKES: list[FakeConsumer] = []


@pytest.fixture
def ck(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType("confluent_kafka")
    module.Consumer = FakeConsumer  # type: ignore[attr-defined]
    module.TopicPartition = FakeTP  # type: ignore[attr-defined]
    module.KafkaError = types.SimpleNamespace(_PARTITION_EOF=EOF_CODE)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "confluent_kafka", module)
    FAKES.clear()
    return module


def client() -> tuple[KafkaConsumerClient, FakeConsumer, list[str], list[str]]:
    errors: list[str] = []
    commit_errors: list[str] = []
    c = KafkaConsumerClient({"group.id": "g", "bootstrap.servers": "b:9092"}, errors.append,
                            commit_errors.append)
    return c, FAKES[-1], errors, commit_errors


def test_without_confluent_kafka_the_error_names_the_extra_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)
    with pytest.raises(KafkaUnavailableError) as info:
        require_confluent_kafka()
    text = str(info.value)
    assert text.startswith("the Kafka connector needs confluent-kafka, which is not installed (")
    assert text.endswith("); install the extra: pip install 'stormpy-runtime[kafka]'")
    assert "confluent_kafka" in text[len("the Kafka connector needs confluent-kafka"):]
    assert isinstance(info.value, ImportError) and info.value.__cause__ is None
    assert info.value.__suppress_context__
    with pytest.raises(KafkaUnavailableError):
        KafkaConsumerClient({}, print, print)


def test_the_module_is_returned_when_installed(ck: types.ModuleType) -> None:
    assert require_confluent_kafka() is ck


def test_the_consumer_gets_the_settings_and_reports_client_and_async_commit_errors(ck: Any) -> None:
    _, fake, errors, commit_errors = client()
    conf = dict(fake.conf)
    error_cb, on_commit = conf.pop("error_cb"), conf.pop("on_commit")
    assert conf == {"group.id": "g", "bootstrap.servers": "b:9092"}
    error_cb(FakeError(-195, "all brokers down"))
    assert errors == ["Kafka client error: all brokers down"] and commit_errors == []
    on_commit(None, [FakeTP("t", 0, 5), FakeTP("t", 1, 3, error=FakeError(25, "UNKNOWN_MEMBER_ID"))])
    on_commit(FakeError(-185, "timed out"), None)
    assert commit_errors == ["asynchronous offset commit of t-1 failed: UNKNOWN_MEMBER_ID",
                             "asynchronous offset commit failed: timed out"]
    assert errors == ["Kafka client error: all brokers down"]


def test_consume_returns_records_and_fetch_errors_and_skips_partition_ends(ck: Any) -> None:
    c, fake, _, _ = client()
    fake.answers["consume"] = [
        FakeMessage("t", 0, 7, b"k", b"v", timestamp=(1, 1700), headers=[("h", b"x")]),
        FakeMessage("t", 0, 8, None, b"w", timestamp=(0, -1)),
        FakeMessage("t", 1, -1, error=FakeError(EOF_CODE, "end of partition")),
        FakeMessage("t", 2, -1, error=FakeError(3, "UNKNOWN_TOPIC_OR_PART")),
        FakeMessage("u", 0, 2, b"", None, timestamp=(2, 99))]
    records, errors = c.consume(500, 0.001)
    assert fake.calls == [("consume", (500, 0.001), {})]
    assert records == [("t", 0, 7, b"k", b"v", 1700, [("h", b"x")]), ("t", 0, 8, None, b"w", None, None),
                       ("u", 0, 2, b"", None, 99, None)]
    assert all(type(r) is KafkaRecord for r in records)
    assert records[0].timestamp == 1700 and records[0].headers == [("h", b"x")]
    assert errors == ["fetch error on t-2: UNKNOWN_TOPIC_OR_PART"]


def test_consume_rows_returns_the_default_translators_values(ck: Any) -> None:
    c, fake, _, _ = client()
    fake.answers["consume"] = [
        FakeMessage("t", 0, 7, b"k", b"v", timestamp=(1, 1700)),
        FakeMessage("t", 1, -1, error=FakeError(EOF_CODE, "end of partition")),
        FakeMessage("t", 2, -1, error=FakeError(3, "UNKNOWN_TOPIC_OR_PART")),
        FakeMessage("t", 0, 8, None, None)]
    rows, errors = c.consume_rows(100, 0.5)
    assert fake.calls == [("consume", (100, 0.5), {})]
    assert rows == [["t", 0, 7, b"k", b"v"], ["t", 0, 8, None, None]]
    assert errors == ["fetch error on t-2: UNKNOWN_TOPIC_OR_PART"]


def test_assignment_pause_resume_and_seek_name_the_partitions(ck: Any) -> None:
    c, fake, _, _ = client()
    c.assign({TopicPartition("t", 0): 5, TopicPartition("t", 1): -2})
    c.assign({})
    c.unassign([TopicPartition("t", 1)])
    c.unassign([])
    c.pause([TopicPartition("t", 0)])
    c.pause([])
    c.resume([TopicPartition("t", 0)])
    c.resume([])
    c.seek(TopicPartition("t", 0), 42)
    c.close()
    assert fake.calls == [
        ("incremental_assign", ([FakeTP("t", 0, 5), FakeTP("t", 1, -2)],), {}),
        ("incremental_unassign", ([FakeTP("t", 1)],), {}),
        ("pause", ([FakeTP("t", 0)],), {}),
        ("resume", ([FakeTP("t", 0)],), {}),
        ("seek", (FakeTP("t", 0, 42),), {}),
        ("close", (), {})]


def test_position_keeps_only_known_positions(ck: Any) -> None:
    c, fake, _, _ = client()
    assert c.position([]) == {} and fake.calls == []
    fake.answers["position"] = [FakeTP("t", 0, 12), FakeTP("t", 1, -1001), FakeTP("t", 2, 0)]
    assert c.position([TopicPartition("t", p) for p in range(3)]) == {
        TopicPartition("t", 0): 12, TopicPartition("t", 2): 0}
    assert fake.calls == [("position", ([FakeTP("t", 0), FakeTP("t", 1), FakeTP("t", 2)],), {})]


def test_commit_sync_hands_offsets_and_metadata_and_returns_the_refused_partitions(ck: Any) -> None:
    c, fake, _, _ = client()
    fake.answers["commit"] = [FakeTP("t", 0, 5, "m"),
                              FakeTP("t", 1, 3, "m", error=FakeError(6, "NOT_LEADER"))]
    failed = c.commit_sync({TopicPartition("t", 0): OffsetAndMetadata(5, "m"),
                            TopicPartition("t", 1): OffsetAndMetadata(3, None)})
    assert failed == {TopicPartition("t", 1): "NOT_LEADER"}
    assert fake.calls == [("commit", (), {"offsets": [FakeTP("t", 0, 5, "m"), FakeTP("t", 1, 3)],
                                          "asynchronous": False})]
    fake.answers["commit"] = None
    assert c.commit_sync({TopicPartition("t", 0): OffsetAndMetadata(6, "m")}) == {}
    fake.answers["commit"] = RuntimeError("KafkaException: all brokers down")
    with pytest.raises(RuntimeError, match="all brokers down"):
        c.commit_sync({TopicPartition("t", 0): OffsetAndMetadata(6, "m")})


def test_commit_async_does_not_wait_and_skips_an_empty_commit(ck: Any) -> None:
    c, fake, _, _ = client()
    c.commit_async({})
    c.commit_async({TopicPartition("t", 0): OffsetAndMetadata(9, "meta")})
    assert fake.calls == [("commit", (), {"offsets": [FakeTP("t", 0, 9, "meta")], "asynchronous": True})]


def test_committed_offsets_with_metadata_and_none_where_nothing_is_committed(ck: Any) -> None:
    c, fake, _, _ = client()
    assert c.committed([], 10.0) == {} and fake.calls == []
    fake.answers["committed"] = [FakeTP("t", 0, 4, "meta"), FakeTP("t", 1, -1001), FakeTP("t", 2, 0)]
    assert c.committed([TopicPartition("t", p) for p in range(3)], 10.0) == {
        TopicPartition("t", 0): OffsetAndMetadata(4, "meta"), TopicPartition("t", 1): None,
        TopicPartition("t", 2): OffsetAndMetadata(0, None)}
    assert fake.calls == [("committed", ([FakeTP("t", 0), FakeTP("t", 1), FakeTP("t", 2)],),
                           {"timeout": 10.0})]


def test_topics_leaves_out_topics_in_error_or_without_partitions(ck: Any) -> None:
    c, fake, _, _ = client()
    meta = types.SimpleNamespace(topics={
        "t": types.SimpleNamespace(error=None, partitions={0: 0, 1: 1}),
        "gone": types.SimpleNamespace(error=FakeError(3, "UNKNOWN_TOPIC"), partitions={0: 0}),
        "empty": types.SimpleNamespace(error=None, partitions={})})
    fake.answers["list_topics"] = meta
    assert c.topics(2.0) == {"t": 2}
    assert fake.calls == [("list_topics", (), {"timeout": 2.0})]


def test_watermarks_are_the_cached_ones_or_none(ck: Any) -> None:
    c, fake, _, _ = client()
    fake.answers["get_watermark_offsets"] = (3, 10)
    assert c.watermarks(TopicPartition("t", 0)) == (3, 10)
    assert fake.calls == [("get_watermark_offsets", (FakeTP("t", 0),), {"cached": True})]
    fake.answers["get_watermark_offsets"] = (-1001, -1001)
    assert c.watermarks(TopicPartition("t", 0)) is None
    fake.answers["get_watermark_offsets"] = (0, 0)
    assert c.watermarks(TopicPartition("t", 0)) == (0, 0)
    fake.answers["get_watermark_offsets"] = RuntimeError("no such partition")
    assert c.watermarks(TopicPartition("t", 0)) is None
