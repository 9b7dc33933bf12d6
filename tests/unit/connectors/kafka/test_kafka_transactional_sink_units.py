"""KafkaTransactionalSink against a stub transactional producer (no broker): the order of the
client calls per batch, the skip of a txid at or below the last committed marker, abort and
reopen after a failure, retriable commit errors retried, the at-least-once mode, settings. On top
of it: the Trident state (one transaction per commit, what a replay writes and emits), its
factory and updater, and the transactional committer bolt (one sink per task, kept across its
batches; what it emits; the errors naming the tuple's origin)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import confluent_kafka  # the [kafka] extra, installed with the dev extras
import pytest

from stormpy.connectors.kafka import KafkaConfigError
from stormpy.connectors.kafka._transactional_sink import (
    KafkaTransactionalConfig,
    KafkaTransactionalSink,
    transactional_id,
)


class StubProducer:
    """Records the calls; ``fail_commit`` holds errors raised by the next commits."""

    def __init__(self, conf: Mapping[str, Any], log: list[Any]) -> None:
        self.conf = dict(conf)
        self.log = log
        self.fail_commit: list[BaseException] = []
        self.fail_produce_at: int | None = None
        self.produced = 0

    def init_transactions(self, timeout: float) -> None:
        self.log.append("init")

    def begin_transaction(self) -> None:
        self.log.append("begin")

    def produce(self, topic: str, value: Any = None, key: Any = None, **kw: Any) -> None:
        self.produced += 1
        if self.fail_produce_at is not None and self.produced == self.fail_produce_at:
            raise confluent_kafka.KafkaException(confluent_kafka.KafkaError(
                confluent_kafka.KafkaError._MSG_TIMED_OUT))
        self.log.append(("produce", topic, key, value))

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        self.log.append("flush")
        return 0

    def commit_transaction(self, timeout: float) -> None:
        if self.fail_commit:
            raise self.fail_commit.pop(0)
        self.log.append("commit")

    def abort_transaction(self, timeout: float) -> None:
        self.log.append("abort")


def make(exactly_once: bool = True, committed: int | None = None
         ) -> tuple[KafkaTransactionalSink, list[Any], list[StubProducer], list[int]]:
    log: list[Any] = []
    producers: list[StubProducer] = []
    reads: list[int] = []

    def factory(conf: Mapping[str, Any]) -> StubProducer:
        producers.append(StubProducer(conf, log))
        return producers[-1]

    def read_txid(_sink: KafkaTransactionalSink) -> int | None:
        reads.append(1)
        return committed

    cfg = KafkaTransactionalConfig("127.0.0.1:9", topic="out", transactional_id_prefix="p",
                                   exactly_once=exactly_once)
    sink = KafkaTransactionalSink(cfg, transactional_id("p", "wc", "b-1", 0),
                                  producer_factory=factory, read_txid=read_txid)
    return sink, log, producers, reads


def test_a_batch_is_one_transaction_with_its_marker_in_the_commit_log() -> None:
    sink, log, producers, _ = make()
    assert sink.commit_batch(1, [("out", b"k", b"v")])
    assert producers[0].conf["transactional.id"] == "p-wc-b-1-0"
    assert log == ["init", "begin", ("produce", "out", b"k", b"v"),
                   ("produce", "p-commit-log", b"p-wc-b-1-0", b"1"), "commit"]
    assert sink.last_txid == 1


def test_the_committed_txid_is_skipped_and_a_txid_below_it_is_refused() -> None:
    sink, log, _, reads = make(committed=5)
    assert sink.commit_batch(5, [("out", b"k", b"v")]) is False
    assert log == ["init"] and reads == [1]
    with pytest.raises(KafkaConfigError, match="txid 3 is below the last txid committed by "
                                               "'p-wc-b-1-0' .5.*started over"):
        sink.commit_batch(3, [("out", b"k", b"v")])
    assert sink.commit_batch(6, [("out", b"k", b"v")])
    assert sink.counters["skipped_batches"] == 1 and sink.counters["batches"] == 1


def test_a_failed_commit_aborts_and_the_next_commit_reopens_and_rereads_the_marker() -> None:
    sink, log, producers, reads = make()
    sink.commit_batch(1, [("out", b"a", b"1")])
    fatal = confluent_kafka.KafkaException(confluent_kafka.KafkaError(
        confluent_kafka.KafkaError._FENCED))
    producers[-1].fail_commit.append(fatal)
    with pytest.raises(confluent_kafka.KafkaException):
        sink.commit_batch(2, [("out", b"b", b"2")])
    assert log[-1] == "abort" and sink.producer is None and sink.last_txid is None
    assert sink.commit_batch(2, [("out", b"b", b"2")])
    assert len(producers) == 2 and reads == [1, 1]
    assert sink.counters["aborted"] == 1 and sink.counters["opens"] == 2


def test_a_failed_produce_aborts_the_transaction() -> None:
    sink, log, producers, _ = make()
    sink.open()
    producers[0].fail_produce_at = 2
    with pytest.raises(confluent_kafka.KafkaException):
        sink.commit_batch(1, [("out", b"a", b"1"), ("out", b"b", b"2")])
    assert "commit" not in log and log[-1] == "abort"


def test_a_retriable_commit_error_is_retried() -> None:
    sink, log, producers, _ = make()
    sink.open()
    err = confluent_kafka.KafkaError(confluent_kafka.KafkaError._TIMED_OUT, retriable=True)
    producers[0].fail_commit.append(confluent_kafka.KafkaException(err))
    assert sink.commit_batch(1, [("out", b"a", b"1")])
    assert log[-1] == "commit" and sink.last_txid == 1


def test_the_at_least_once_mode_writes_every_attempt_without_a_transaction() -> None:
    sink, log, producers, reads = make(exactly_once=False)
    assert sink.commit_batch(1, [("out", b"a", b"1")])
    assert sink.commit_batch(1, [("out", b"a", b"1")])  # a replay is written again
    assert "transactional.id" not in producers[0].conf
    assert producers[0].conf["enable.idempotence"] is True
    assert log == [("produce", "out", b"a", b"1"), "flush"] * 2 and reads == []


def test_an_empty_batch_writes_nothing() -> None:
    sink, log, _, _ = make()
    assert sink.commit_batch(1, []) is False
    assert log == ["init"]


@pytest.mark.parametrize(("settings", "named"), [
    ({}, "topic"),
    ({"topic": "a", "topic_field": "t"}, "topic"),
    ({"topic": "a", "producer_props": {"transactional.id": "x"}}, "producer_props"),
    ({"topic": "a", "producer_props": {"error_cb": "x"}}, "producer_props"),
    ({"topic": "a", "commit_log_partitions": 0}, "commit_log_partitions"),
    ({"topic": "a", "transactional_id_prefix": ""}, "transactional_id_prefix"),
    ({"topic": "a", "timeout_secs": 0}, "timeout_secs"),
])
def test_bad_settings_name_the_setting(settings: dict[str, Any], named: str) -> None:
    with pytest.raises(KafkaConfigError, match=named):
        KafkaTransactionalConfig("127.0.0.1:9", **settings).validate()


def test_records_map_fields_by_name_and_refuse_what_kafka_cannot_carry() -> None:
    cfg = KafkaTransactionalConfig("h:1", topic_field="t", default_topic="d", key_field="w",
                                   message_field="n")
    assert cfg.record_of({"t": "x", "w": "the", "n": 3}.__getitem__, "here") == ("x", b"the", b"3")
    assert cfg.record_of({"n": 3}.__getitem__, "here") == ("d", None, b"3")
    with pytest.raises(ValueError, match="here: no field 'n'"):
        cfg.record_of({"w": "x"}.__getitem__, "here")
    with pytest.raises(ValueError, match="here"):
        cfg.record_of({"n": object()}.__getitem__, "here")
    assert KafkaTransactionalConfig("h:1", topic_field="t").record_of({"n": 1}.__getitem__, "w") is None


def test_the_trident_factory_travels_in_the_spec_and_is_only_for_partition_persist() -> None:
    from stormpy.connectors.kafka._trident_sink import (
        KafkaTransactionalStateFactory,
        KafkaTransactionalUpdater,
    )
    from stormpy.topology._errors import InvalidTopologyError
    from stormpy.trident import Count, FixedBatchSpout, MapGet, StateFactory, TridentTopology

    factory = KafkaTransactionalStateFactory(bootstrap_servers="h:1", topic="out",
                                             transactional_id_prefix="wc")
    back = StateFactory.from_doc(factory.doc())
    assert isinstance(back, KafkaTransactionalStateFactory) and back.kafka == factory.kafka
    assert back.key == factory.key
    with pytest.raises(KafkaConfigError, match="topic"):
        KafkaTransactionalStateFactory(bootstrap_servers="h:1")
    t = TridentTopology()
    stream = t.new_stream("s", FixedBatchSpout(["key", "message"], 2, [["a", "1"]]))
    written = stream.partition_persist(factory, ["key", "message"], KafkaTransactionalUpdater(),
                                       ["written"])
    with pytest.raises(InvalidTopologyError, match="persistent_aggregate needs a map state"):
        stream.group_by(["key"]).persistent_aggregate(factory, Count(), ["n"])
    with pytest.raises(InvalidTopologyError, match="written, not queried"):
        stream.state_query(written, ["key"], MapGet(), ["v"])


# -- the Trident state, its factory and updater, the transactional committer bolt ----------------

class Context:
    """What a task's context gives the sink: ids, its component and index, metric registration."""

    def __init__(self, topology_id: str = "wc-1-170", component_id: str = "to-kafka",
                 task_index: int = 2) -> None:
        self.topology_id = topology_id
        self.component_id = component_id
        self.task_index = task_index
        self.metrics: dict[str, Any] = {}

    def register_metric(self, name: str, fn: Any) -> None:
        self.metrics[name] = fn


def _state(committed: int | None = None) -> tuple[Any, list[Any], list[StubProducer]]:
    from stormpy.connectors.kafka._trident_sink import KafkaTransactionalState

    sink, log, producers, _reads = make(committed=committed)
    return KafkaTransactionalState(sink), log, producers


def _written(log: list[Any]) -> list[Any]:
    """The records produced to the output topic (the commit log's markers left out)."""
    return [e for e in log if isinstance(e, tuple) and e[1] == "out"]


def _update(state: Any, tuples: list[Any]) -> list[Any]:
    from stormpy.connectors.kafka._trident_sink import KafkaTransactionalUpdater
    from stormpy.trident._operation import TridentCollector

    emitted: list[Any] = []
    KafkaTransactionalUpdater().update_state(state, tuples, TridentCollector(emitted.append))
    return emitted


def test_a_task_sink_is_named_after_topology_component_and_task_and_publishes_its_counters() -> None:
    from stormpy.connectors.kafka._trident_sink import task_sink

    cfg = KafkaTransactionalConfig("h:1", topic="out", transactional_id_prefix="eos")
    context = Context()
    sink = task_sink(cfg, {"topology.name": "wordcount"}, context)  # type: ignore[arg-type]
    assert sink.tid == "eos-wordcount-to-kafka-2" and sink.config == cfg
    assert list(context.metrics) == ["kafkaTransactionalSink"]
    assert context.metrics["kafkaTransactionalSink"]() == sink.metrics()
    unnamed = task_sink(cfg, {}, Context())  # type: ignore[arg-type]
    assert unnamed.tid == "eos-wc-1-170-to-kafka-2"  # no topology.name: the topology id
    assert task_sink(cfg, {"topology.name": ""}, Context()).tid == "eos-wc-1-170-to-kafka-2"  # type: ignore[arg-type]


def test_the_trident_state_commits_what_was_written_in_its_commit_as_one_transaction() -> None:
    state, log, _producers = _state()
    with pytest.raises(RuntimeError) as info:
        state.write([("out", b"k", b"v")])
    assert str(info.value) == ("Kafka transactional state written outside a commit (begin_commit not "
                               "called)")
    state.begin_commit(1)
    state.write([("out", b"a", b"1")])
    state.write([("out", b"b", b"2")])
    state.commit(1)
    assert state.written == 2 and state.sink.last_txid == 1
    assert _written(log) == [("produce", "out", b"a", b"1"), ("produce", "out", b"b", b"2")]
    assert state.txid is None and state.records == []
    with pytest.raises(RuntimeError, match="outside a commit"):  # the commit ended it
        state.write([("out", b"k", b"v")])
    state.begin_commit(2)
    state.write([("out", b"c", b"3")])
    state.begin_commit(2)  # begun again (a new attempt): what the earlier one wrote is dropped
    state.write([("out", b"d", b"4")])
    commit = state.commit_later(2)
    state.begin_commit(3)  # the next batch may begin before the commit ran
    state.write([("out", b"e", b"5")])
    commit()
    assert state.written == 1 and _written(log)[-1] == ("produce", "out", b"d", b"4")
    assert state.records == [("out", b"e", b"5")]


def test_a_committed_txid_writes_nothing_and_counts_as_none_written() -> None:
    state, log, _producers = _state(committed=4)
    state.begin_commit(4)
    assert state.already_committed() is False  # an unopened sink cannot know without Kafka
    state.write([("out", b"k", b"v")])
    state.commit(4)
    assert state.written == 0 and _written(log) == []
    state.begin_commit(4)
    assert state.already_committed() is True  # the open sink read the marker
    state.begin_commit(5)
    assert state.already_committed() is False
    state.txid = None
    assert state.already_committed() is False


def test_an_at_least_once_sink_never_counts_a_txid_as_committed() -> None:
    from stormpy.connectors.kafka._trident_sink import KafkaTransactionalState

    sink, _log, _producers, _reads = make(exactly_once=False)
    state = KafkaTransactionalState(sink)
    state.begin_commit(1)
    state.write([("out", b"k", b"v")])
    state.commit(1)
    state.begin_commit(1)
    assert state.already_committed() is False


def test_closing_the_state_closes_its_sink() -> None:
    state, log, producers = _state()
    state.begin_commit(1)
    state.write([("out", b"k", b"v")])
    state.commit(1)
    state.close()
    assert state.sink.producer is None and log[-1] == "flush"


def test_the_updater_writes_each_tuples_record_and_emits_how_many() -> None:
    from stormpy.trident._operation import TridentTuple

    state, _log, _producers = _state()
    state.sink.config = KafkaTransactionalConfig("h:1", topic_field="t", key_field="w",
                                                 message_field="n").validate()
    state.begin_commit(1)
    tuples = [TridentTuple(v, ["t", "w", "n"]) for v in (["x", "cow", 1], [None, "moo", 2], ["y", None, 3])]
    assert _update(state, tuples) == [[2]]
    assert state.records == [("x", b"cow", b"1"), ("y", None, b"3")]  # no topic: left out


def test_the_updater_maps_nothing_for_a_txid_the_open_sink_committed() -> None:
    from stormpy.trident._operation import TridentTuple

    state, _log, _producers = _state(committed=3)
    state.begin_commit(3)
    state.commit(3)  # opens the sink, which reads the marker: 3 committed
    state.begin_commit(3)
    assert _update(state, [TridentTuple(["k", "v"], ["key", "message"])]) == [[0]]
    assert state.records == []


def test_the_updater_refuses_another_state_naming_it() -> None:
    with pytest.raises(TypeError) as info:
        _update({}, [])
    assert str(info.value) == ("KafkaTransactionalUpdater needs a KafkaTransactionalStateFactory state, "
                               "got dict")


def test_the_state_factory_names_its_state_and_builds_a_state_per_task() -> None:
    from stormpy.connectors.kafka._trident_sink import KafkaTransactionalState, KafkaTransactionalStateFactory

    cfg = KafkaTransactionalConfig("h:1", topic="out", transactional_id_prefix="eos", commit_log_topic="log")
    factory = KafkaTransactionalStateFactory(cfg)
    assert (factory.backend, factory.name) == ("external", "kafka:eos")
    assert factory.kafka == cfg
    assert factory.key == ("kafka", "h:1", "out", None, "eos", "log")
    doc = factory.doc()
    assert doc["factory"] == "stormpy.connectors.kafka._trident_sink:KafkaTransactionalStateFactory"
    assert doc["kafka"] == cfg.to_doc() and doc["backend"] == "external"
    assert KafkaTransactionalStateFactory.from_doc(doc).kafka == cfg
    context = Context()
    state = factory.make_state({"topology.name": "wordcount"}, context)
    assert isinstance(state, KafkaTransactionalState) and state.sink.tid == "eos-wordcount-to-kafka-2"
    assert list(context.metrics) == ["kafkaTransactionalSink"]
    with pytest.raises(TypeError) as info:
        KafkaTransactionalStateFactory(cfg, topic="other")
    assert str(info.value) == "KafkaTransactionalStateFactory: give a config or its settings, not both"
    by_settings = KafkaTransactionalStateFactory(bootstrap_servers="h:1", topic="out",
                                                 transactional_id_prefix="eos", commit_log_topic="log")
    assert by_settings.kafka == cfg and by_settings.key == factory.key


class Batch:
    """A committer bolt's collector for one batch: emits recorded, the background work run at
    once (as the worker runs it off the loop, then its continuation on the loop)."""

    def __init__(self) -> None:
        from stormpy.transactional._api import BatchOutputCollector

        self.emitted: list[list[Any]] = []
        self.collector = BatchOutputCollector(lambda values, _stream: self.emitted.append(values) or [1],
                                              lambda *_: None, lambda _e: None, self._defer)

    @staticmethod
    def _defer(work: Any, then: Any) -> None:
        then(work())


def test_the_committer_bolt_writes_each_batch_of_a_task_through_one_sink() -> None:
    from stormpy.connectors.kafka._trident_sink import KafkaTransactionalCommitterBolt
    from stormpy.topology import Fields, Tuple
    from stormpy.transactional import TransactionAttempt

    log: list[Any] = []
    made: list[StubProducer] = []

    def factory(conf: Mapping[str, Any]) -> StubProducer:
        made.append(StubProducer(conf, log))
        return made[-1]

    doc = KafkaTransactionalConfig("h:1", topic="out", key_field="w", message_field="n",
                                   transactional_id_prefix="eos").to_doc()
    context = Context()
    cls = KafkaTransactionalCommitterBolt
    assert cls.outputs == ["id", "written"]
    cls._sinks.pop(("wc-1-170", "to-kafka", 2), None)
    try:
        emitted: list[list[Any]] = []
        for txid, rows in ((1, [["cow", 1], ["moo", 2]]), (2, [["pig", 3]])):
            bolt = cls(doc)
            batch = Batch()
            attempt = TransactionAttempt(txid, 1)
            bolt.prepare({"topology.name": "wc"}, context, batch.collector, attempt)  # type: ignore[arg-type]
            if txid == 1:
                sink = bolt.sink
                assert sink.tid == "eos-wc-to-kafka-2"
                sink._factory = factory
                sink._read_txid = lambda _sink: None
            assert bolt.sink is sink  # one sink per task, kept across its batches
            for values in rows:
                bolt.execute(Tuple([attempt, *values], "default", 1, "counter",
                                   Fields(["id", "w", "n"])))
            bolt.finish_batch()
            emitted.extend(batch.emitted)
        assert emitted == [[[1, 1], 2], [[2, 1], 1]]
        assert _written(log) == [("produce", "out", b"cow", b"1"), ("produce", "out", b"moo", b"2"),
                                 ("produce", "out", b"pig", b"3")]
        assert len(made) == 1 and sink.last_txid == 2
        cls.cleanup_task({}, context)  # type: ignore[arg-type]
        assert ("wc-1-170", "to-kafka", 2) not in cls._sinks and sink.producer is None
        assert log[-1] == "flush"
        cls.cleanup_task({}, context)  # type: ignore[arg-type]  # nothing left: nothing done
    finally:
        cls._sinks.pop(("wc-1-170", "to-kafka", 2), None)


def test_the_committer_bolt_refuses_tuples_it_cannot_map_naming_where_they_came_from() -> None:
    from stormpy.connectors.kafka._trident_sink import KafkaTransactionalCommitterBolt
    from stormpy.topology import Fields, Tuple
    from stormpy.transactional import TransactionAttempt

    doc = KafkaTransactionalConfig("h:1", topic_field="t", message_field="n").to_doc()
    bolt = KafkaTransactionalCommitterBolt(doc)
    bolt.records = []
    attempt = TransactionAttempt(1, 1)
    with pytest.raises(ValueError) as info:
        bolt.execute(Tuple([attempt, 1], "words", 1, "counter", None))
    assert str(info.value) == ("tuple from counter/words has no declared fields; "
                               "KafkaTransactionalCommitterBolt maps fields by name")
    with pytest.raises(ValueError, match="tuple from counter/words: no field 'n'"):
        bolt.execute(Tuple([attempt, "x"], "words", 1, "counter", Fields(["id", "t"])))
    bolt.execute(Tuple([attempt, None, 5], "words", 1, "counter", Fields(["id", "t", "n"])))
    bolt.execute(Tuple([attempt, "x", 6], "words", 1, "counter", Fields(["id", "t", "n"])))
    assert bolt.records == [("x", None, b"6")]  # no topic: left out


def test_the_updater_refuses_a_tuple_without_the_message_field_naming_itself() -> None:
    from stormpy.trident._operation import TridentTuple

    state, _log, _producers = _state()
    assert state.written == 0  # nothing committed yet
    state.begin_commit(1)
    with pytest.raises(ValueError) as info:
        _update(state, [TridentTuple(["k"], ["key"])])
    assert str(info.value) == ("KafkaTransactionalUpdater: no field 'message' "
                               "(KafkaTransactionalConfig.message_field)")


def test_the_committer_bolt_emits_none_written_for_a_replay_of_a_committed_txid() -> None:
    from stormpy.connectors.kafka._trident_sink import KafkaTransactionalCommitterBolt
    from stormpy.topology import Fields, Tuple
    from stormpy.transactional import TransactionAttempt

    sink, log, _producers, _reads = make(committed=5)
    context = Context(topology_id="replayed")
    key = ("replayed", "to-kafka", 2)
    cls = KafkaTransactionalCommitterBolt
    cls._sinks[key] = sink
    try:
        bolt = cls(KafkaTransactionalConfig("h:1", topic="out").to_doc())
        batch = Batch()
        attempt = TransactionAttempt(5, 2)
        bolt.prepare({}, context, batch.collector, attempt)  # type: ignore[arg-type]
        bolt.execute(Tuple([attempt, "k", "v"], "default", 1, "counter", Fields(["id", "key", "message"])))
        bolt.finish_batch()
        assert batch.emitted == [[[5, 2], 0]] and _written(log) == []
    finally:
        cls._sinks.pop(key, None)


# -- every refusal of the sink's settings, whole ---------------------------------------------------

SINK: dict[str, Any] = {"bootstrap_servers": "h:1", "topic": "t"}
ONE_TOPIC = "set exactly one of topic and topic_field; got "
OWNED = "is set by the sink and cannot be given here"
TEXT = "must be a non-empty string, got ''"

SINK_REFUSALS: list[tuple[dict[str, Any], str, str]] = [
    ({"bootstrap_servers": ""}, "bootstrap_servers", "must be 'host:port[,host:port...]', got ''"),
    ({"topic": None}, "topic", ONE_TOPIC + "topic=None, topic_field=None"),
    ({"topic_field": "f"}, "topic", ONE_TOPIC + "topic='t', topic_field='f'"),
    ({"topic": ""}, "topic", TEXT),
    ({"topic": None, "topic_field": ""}, "topic_field", TEXT),
    ({"topic": None, "topic_field": "f", "default_topic": ""}, "default_topic", TEXT),
    ({"commit_log_topic": ""}, "commit_log_topic", TEXT),
    ({"key_field": ""}, "key_field", TEXT),
    ({"message_field": ""}, "message_field", TEXT),
    ({"transactional_id_prefix": ""}, "transactional_id_prefix", TEXT),
    ({"commit_log_partitions": 0}, "commit_log_partitions", "must be an integer >= 1, got 0"),
    ({"producer_props": []}, "producer_props", "must be a mapping of librdkafka properties, got []"),
    ({"producer_props": {"transactional.id": "x"}}, "producer_props", f"'transactional.id' {OWNED}"),
    ({"producer_props": {"enable.idempotence": True}}, "producer_props", f"'enable.idempotence' {OWNED}"),
    ({"producer_props": {"isolation.level": "x"}}, "producer_props", f"'isolation.level' {OWNED}"),
    ({"producer_props": {"bootstrap.servers": "x"}}, "producer_props", f"'bootstrap.servers' {OWNED}"),
    ({"producer_props": {"oauth_cb": 1}}, "producer_props", f"'oauth_cb' {OWNED}"),
    ({"exactly_once": 1}, "exactly_once", "must be True or False, got 1"),
    ({"timeout_secs": 0.0009}, "timeout_secs", "must be a number >= 0.001, got 0.0009"),
]


@pytest.mark.parametrize(("change", "setting", "problem"), SINK_REFUSALS)
def test_sink_setting_refused_naming_setting_and_value(change: dict[str, Any], setting: str,
                                                        problem: str) -> None:
    with pytest.raises(KafkaConfigError) as info:
        KafkaTransactionalConfig(**{**SINK, **change}).validate()
    assert type(info.value) is KafkaConfigError
    assert info.value.setting == f"KafkaTransactionalConfig.{setting}"
    assert str(info.value) == f"KafkaTransactionalConfig.{setting}: {problem}"


def test_sink_accepts_the_lowest_values_and_reads_its_spec_document() -> None:
    low = KafkaTransactionalConfig("h:1", topic_field="f", default_topic="d", commit_log_partitions=1,
                                   timeout_secs=0.001, commit_log_topic="log",
                                   producer_props={"linger.ms": 5})
    assert low.validate() is low
    assert KafkaTransactionalConfig.from_doc(low.to_doc()) == low
    assert KafkaTransactionalConfig.from_doc(low) is low
    with pytest.raises(KafkaConfigError) as info:
        KafkaTransactionalConfig.from_doc({**SINK, "nope": 1})
    assert type(info.value) is KafkaConfigError and "unknown settings ['nope']" in str(info.value)


def test_a_topic_field_holding_no_string_is_refused_naming_the_field() -> None:
    cfg = KafkaTransactionalConfig("h:1", topic_field="t")
    with pytest.raises(ValueError) as info:
        cfg.record_of({"t": 5, "message": "m"}.__getitem__, "here")
    assert str(info.value) == "here: field 't' holds 5, not a topic name"


# -- the sink's client calls, exactly ----------------------------------------------------------------

class CallProducer(StubProducer):
    """The stub producer logging every call with its arguments; ``reports`` are delivery errors
    handed to the next records' ``on_delivery`` (at-least-once mode), ``left`` what flush leaves."""

    def __init__(self, conf: Mapping[str, Any], log: list[Any]) -> None:
        super().__init__(conf, log)
        self.calls: list[tuple[Any, ...]] = []
        self.reports: list[Any] = []
        self.left = 0

    def init_transactions(self, timeout: float) -> None:
        self.calls.append(("init_transactions", timeout))

    def produce(self, topic: str, value: Any = None, key: Any = None, **kw: Any) -> None:
        self.calls.append(("produce", topic, key, value, sorted(kw)))
        if "partition" in kw:
            self.calls.append(("partition", kw["partition"]))
        if "on_delivery" in kw and self.reports:
            kw["on_delivery"](self.reports.pop(0), None)

    def flush(self, timeout: float) -> int:
        self.calls.append(("flush", timeout))
        return self.left

    def commit_transaction(self, timeout: float) -> None:
        self.calls.append(("commit_transaction", timeout))
        if self.fail_commit:
            raise self.fail_commit.pop(0)

    def abort_transaction(self, timeout: float) -> None:
        self.calls.append(("abort_transaction", timeout))


def _call_sink(exactly_once: bool = True, committed: int | None = None,
               **settings: Any) -> tuple[KafkaTransactionalSink, list[CallProducer]]:
    made: list[CallProducer] = []

    def factory(conf: Mapping[str, Any]) -> CallProducer:
        made.append(CallProducer(conf, []))
        return made[-1]

    cfg = KafkaTransactionalConfig("127.0.0.1:9", topic="out", transactional_id_prefix="p",
                                   exactly_once=exactly_once, **settings)
    return KafkaTransactionalSink(cfg, "p-wc-b-1-0", producer_factory=factory,
                                  read_txid=lambda _sink: committed), made


def test_the_producer_is_configured_for_the_mode_and_the_task() -> None:
    sink, made = _call_sink(producer_props={"linger.ms": 5})
    sink.commit_batch(1, [("out", b"k", b"v")])
    conf = dict(made[0].conf)
    assert callable(conf.pop("error_cb"))
    assert conf == {"bootstrap.servers": "127.0.0.1:9", "client.id": "p-wc-b-1-0", "linger.ms": 5,
                    "logger": logging.getLogger("stormpy.connectors.kafka.librdkafka"),
                    "transactional.id": "p-wc-b-1-0"}
    plain, made = _call_sink(exactly_once=False)
    plain.commit_batch(1, [("out", b"k", b"v")])
    conf = dict(made[0].conf)
    conf.pop("error_cb")
    assert conf == {"bootstrap.servers": "127.0.0.1:9", "client.id": "p-wc-b-1-0",
                    "logger": logging.getLogger("stormpy.connectors.kafka.librdkafka"),
                    "enable.idempotence": True}


def test_a_transaction_writes_the_records_then_the_marker_with_every_wait_bounded() -> None:
    sink, made = _call_sink(timeout_secs=7.5)
    assert sink.commit_batch(12, [("out", b"k", b"v"), ("other", None, b"w")]) is True
    assert made[0].calls == [("init_transactions", 7.5), ("produce", "out", b"k", b"v", []),
                             ("produce", "other", None, b"w", []),
                             ("produce", "p-commit-log", b"p-wc-b-1-0", b"12", ["partition"]),
                             ("partition", 0), ("commit_transaction", 7.5)]
    assert sink.metrics() == {"batches": 1, "records": 2, "skipped_batches": 0, "aborted": 0, "opens": 1,
                              "last_txid": 12}
    assert sink.commit_batch(13, [("out", b"k2", b"v2")]) is True
    m = sink.metrics()
    assert (m["batches"], m["records"], m["opens"], m["last_txid"]) == (2, 3, 1, 13)


def test_failed_commits_are_aborted_within_the_timeout_and_counted_each_and_each_reopens() -> None:
    sink, made = _call_sink(timeout_secs=3.0)
    for txid in (1, 2):
        sink.open()  # the first opening, then the reopening after the failed commit
        sink.producer.fail_commit.append(RuntimeError("fenced"))
        with pytest.raises(RuntimeError, match="fenced"):
            sink.commit_batch(txid, [("out", b"k", b"v")])
        assert made[-1].calls[-1] == ("abort_transaction", 3.0)
    m = sink.metrics()
    assert (m["aborted"], m["opens"], m["batches"], m["last_txid"]) == (2, 2, 0, None)


def test_a_txid_below_the_committed_one_is_refused_naming_the_setting_and_the_way_out() -> None:
    sink, _made = _call_sink(committed=9)
    with pytest.raises(KafkaConfigError) as info:
        sink.commit_batch(4, [("out", b"k", b"v")])
    assert info.value.setting == "KafkaTransactionalConfig.transactional_id_prefix"
    assert str(info.value) == (
        "KafkaTransactionalConfig.transactional_id_prefix: txid 4 is below the last txid committed by "
        "'p-wc-b-1-0' (9, in 'p-commit-log'): the topology's transaction ids started over (a new "
        "transactional state or txid name) while the commit log keeps this prefix's markers; use a new "
        "transactional_id_prefix or commit_log_topic")
    assert sink.commit_batch(9, [("out", b"k", b"v")]) is False
    assert sink.commit_batch(9, [("out", b"k", b"v")]) is False
    assert sink.metrics()["skipped_batches"] == 2


def test_at_least_once_every_record_must_be_delivered_within_the_timeout() -> None:
    sink, made = _call_sink(exactly_once=False, timeout_secs=4.0)
    assert sink.commit_batch(1, [("out", b"k", b"v")]) is True
    assert made[0].calls == [("produce", "out", b"k", b"v", ["on_delivery"]), ("flush", 4.0)]
    made[0].reports = [None, "Broker: Not enough in-sync replicas", "Local: Message timed out"]
    with pytest.raises(RuntimeError) as info:
        sink.commit_batch(2, [("out", b"a", b"1"), ("out", b"b", b"2"), ("out", b"c", b"3")])
    assert str(info.value) == ("Kafka sink p-wc-b-1-0: 2 records not delivered "
                               "(Broker: Not enough in-sync replicas)")
    sink.open()
    made[-1].left = 2
    with pytest.raises(RuntimeError) as info:
        sink.commit_batch(3, [("out", b"a", b"1")])
    assert str(info.value) == "Kafka sink p-wc-b-1-0: 2 records undelivered after 4 s"
    sink.open()
    assert sink.commit_batch(3, [("out", b"a", b"1")]) is True  # the failures were not kept
    m = sink.metrics()
    assert (m["batches"], m["records"], m["opens"]) == (2, 2, 3)


def test_at_least_once_client_errors_are_logged_with_the_next_batch(caplog: pytest.LogCaptureFixture) -> None:
    sink, made = _call_sink(exactly_once=False)
    sink.open()
    made[0].conf["error_cb"]("Local: Broker transport failure")
    with caplog.at_level(logging.WARNING, logger="stormpy.connectors.kafka.transactional"):
        sink.commit_batch(1, [("out", b"k", b"v")])
        sink.commit_batch(2, [("out", b"k", b"v")])
    assert [r.getMessage() for r in caplog.records] == [
        "Kafka sink p-wc-b-1-0: client errors: Local: Broker transport failure"]


def test_which_client_errors_allow_calling_again() -> None:
    from stormpy.connectors.kafka._transactional_sink import _retriable

    def error(retriable: bool, fatal: bool) -> BaseException:
        return confluent_kafka.KafkaException(confluent_kafka.KafkaError(
            confluent_kafka.KafkaError._TIMED_OUT, "x", retriable=retriable, fatal=fatal))

    assert _retriable(error(True, False)) is True
    assert _retriable(error(True, True)) is False
    assert _retriable(error(False, False)) is False
    assert _retriable(confluent_kafka.KafkaException()) is False
    assert _retriable(RuntimeError("not a client error")) is False


def test_a_commit_error_that_is_no_client_error_is_raised_as_it_is() -> None:
    sink, made = _call_sink()
    sink.open()
    made[0].fail_commit.append(confluent_kafka.KafkaException("broken"))
    with pytest.raises(confluent_kafka.KafkaException) as info:
        sink.commit_batch(1, [("out", b"k", b"v")])
    assert info.value.args == ("broken",)


def test_closing_flushes_within_five_seconds_and_survives_a_failing_flush() -> None:
    sink, made = _call_sink()
    sink.open()
    sink.close()
    assert made[0].calls[-1] == ("flush", 5.0) and sink.producer is None
    sink.close()  # closed: nothing to do
    sink.open()

    def broken(timeout: float) -> int:
        raise RuntimeError("flush broke")

    made[1].flush = broken  # type: ignore[method-assign]
    sink.close()
    assert sink.producer is None


def test_a_new_sink_reports_nothing_committed_yet() -> None:
    sink, _made = _call_sink()
    assert sink.metrics() == {"batches": 0, "records": 0, "skipped_batches": 0, "aborted": 0, "opens": 0,
                              "last_txid": None}


def test_a_failed_marker_read_keeps_the_initialised_producer_and_only_reads_again() -> None:
    sink, made = _call_sink()
    reads: list[int] = []

    def read_txid(_sink: KafkaTransactionalSink) -> int | None:
        reads.append(1)
        if len(reads) == 1:
            raise TimeoutError("reading the commit log")
        return 3

    sink._read_txid = read_txid
    with pytest.raises(TimeoutError):
        sink.commit_batch(4, [("out", b"k", b"v")])
    assert sink.producer is None and sink.metrics()["opens"] == 0
    assert sink.commit_batch(4, [("out", b"k", b"v")]) is True
    assert len(made) == 1 and [c[0] for c in made[0].calls].count("init_transactions") == 1
    assert len(reads) == 2 and sink.last_txid == 4


def test_a_full_local_queue_is_waited_out_serving_the_clients_reports() -> None:
    sink, made = _call_sink()
    sink.open()
    producer = made[0]
    polls: list[float] = []
    full = [2]
    produce = producer.produce

    def busy_produce(topic: str, value: Any = None, key: Any = None, **kw: Any) -> None:
        if full[0]:
            full[0] -= 1
            raise BufferError("Local: Queue full")
        produce(topic, value=value, key=key, **kw)

    def poll(timeout: float) -> int:
        polls.append(timeout)
        return 0

    producer.produce = busy_produce  # type: ignore[method-assign]
    producer.poll = poll  # type: ignore[method-assign]
    assert sink.commit_batch(1, [("out", b"k", b"v")]) is True
    assert polls == [0.05, 0.05, 0] and ("produce", "out", b"k", b"v", []) in producer.calls


def test_a_key_or_value_kafka_cannot_carry_is_refused_naming_which_it_is() -> None:
    cfg = KafkaTransactionalConfig("h:1", topic="out")
    with pytest.raises(ValueError) as info:
        cfg.record_of({"key": {"a": 1}, "message": "m"}.__getitem__, "here")
    assert str(info.value) == ("here: the key is a dict ({'a': 1}); map it to str, bytes, a number or "
                               "None (KafkaTransactionalConfig.key_field)")
    with pytest.raises(ValueError) as info:
        cfg.record_of({"message": [1]}.__getitem__, "here")
    assert str(info.value) == ("here: the message is a list ([1]); map it to str, bytes, a number or "
                               "None (KafkaTransactionalConfig.message_field)")


def test_a_commit_error_without_arguments_is_raised_as_it_is() -> None:
    sink, made = _call_sink()
    sink.open()
    made[0].fail_commit.append(confluent_kafka.KafkaException())
    with pytest.raises(confluent_kafka.KafkaException) as info:
        sink.commit_batch(1, [("out", b"k", b"v")])
    assert info.value.args == ()


# -- the commit log against stand-ins of confluent-kafka's Consumer and AdminClient ---------------

class _Clock:
    """``time`` as the sink module sees it: each ``monotonic()`` one second later, ``sleep``
    recorded (no real wait)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        self.now += 1.0
        return self.now

    def sleep(self, secs: float) -> None:
        self.sleeps.append(secs)


class _Meta:
    def __init__(self, partitions: int, error: Any = None) -> None:
        self.partitions = {p: object() for p in range(partitions)}
        self.error = error


class _Listing:
    def __init__(self, topics: dict[str, _Meta]) -> None:
        self.topics = topics


class _Msg:
    def __init__(self, offset: int, key: bytes | None = None, value: bytes | None = None,
                 error: Any = None) -> None:
        self._offset, self._key, self._value, self._error = offset, key, value, error

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def error(self) -> Any:
        return self._error


class _Consumer:
    """A read_committed consumer over one scripted partition: ``batches`` served one per
    ``consume``; ``position`` reports ``positions`` in turn (then OFFSET_INVALID)."""

    made: list[_Consumer] = []

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.conf = dict(conf)
        self.calls: list[Any] = []
        self.topics: dict[str, _Meta] = {"log": _Meta(3)}
        self.watermarks = (0, 0)
        self.batches: list[list[_Msg]] = []
        self.positions: list[int] = []
        self.positioned: list[tuple[str, int]] = []
        self.closed = False
        _Consumer.made.append(self)
        _Consumer.setup(self)

    setup: Any = staticmethod(lambda consumer: None)

    def list_topics(self, topic: str, timeout: float) -> _Listing:
        self.calls.append(("list_topics", topic, timeout))
        return _Listing(self.topics)

    def get_watermark_offsets(self, tp: Any, timeout: float, cached: bool) -> tuple[int, int]:
        self.calls.append(("watermarks", tp.topic, tp.partition, timeout, cached))
        return self.watermarks

    def assign(self, tps: list[Any]) -> None:
        self.calls.append(("assign", [(tp.topic, tp.partition, tp.offset) for tp in tps]))

    def consume(self, num: int, timeout: float) -> list[_Msg]:
        self.calls.append(("consume", num, timeout))
        return self.batches.pop(0) if self.batches else []

    def position(self, tps: list[Any]) -> list[Any]:
        self.positioned += [(tp.topic, tp.partition) for tp in tps]
        offset = self.positions.pop(0) if self.positions else confluent_kafka.OFFSET_INVALID
        return [confluent_kafka.TopicPartition(tps[0].topic, tps[0].partition, offset)]

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def consumer_standin(monkeypatch: pytest.MonkeyPatch) -> type[_Consumer]:
    from stormpy.connectors.kafka import _transactional_sink as module
    _Consumer.made = []
    _Consumer.setup = staticmethod(lambda consumer: None)
    monkeypatch.setattr(confluent_kafka, "Consumer", _Consumer)
    monkeypatch.setattr(module, "time", _Clock())
    return _Consumer


def _partition_of(tid: str, partitions: int) -> int:
    import zlib
    return zlib.crc32(tid.encode()) % partitions


def _marker_reading(consumer: _Consumer, watermarks: tuple[int, int],
                    batches: list[list[_Msg]], positions: list[int] = ()) -> None:  # type: ignore[assignment]
    consumer.watermarks = watermarks
    consumer.batches = [list(b) for b in batches]
    consumer.positions = list(positions)


def test_the_committed_txid_is_the_last_marker_of_the_task_read_from_its_partition(
        consumer_standin: type[_Consumer]) -> None:
    from stormpy.connectors.kafka._transactional_sink import client_log, read_committed_txid
    tid = "p-wc-b-1-0"
    consumer_standin.setup = staticmethod(lambda c: _marker_reading(c, (4, 8), [
        [_Msg(4, tid.encode(), b"7"), _Msg(5, b"p-wc-b-1-1", b"9")],
        [_Msg(6, tid.encode(), b"12")],
        [_Msg(7, b"other", b"40")]]))
    assert read_committed_txid("h:1", "log", tid, 30.0) == 12
    consumer = consumer_standin.made[0]
    assert consumer.conf == {"bootstrap.servers": "h:1", "group.id": f"{tid}-reader",
                             "isolation.level": "read_committed", "enable.auto.commit": False,
                             "enable.partition.eof": True, "logger": client_log}
    part = _partition_of(tid, 3)
    assert consumer.calls == [("list_topics", "log", 30.0),
                              ("watermarks", "log", part, 30.0, False),
                              ("assign", [("log", part, 4)]),
                              ("consume", 500, 0.5), ("consume", 500, 0.5), ("consume", 500, 0.5)]
    assert consumer.positioned == [("log", part)] * 3 and consumer.closed


def test_each_marker_read_moves_the_reader_one_offset_on(consumer_standin: type[_Consumer]) -> None:
    from stormpy.connectors.kafka._transactional_sink import read_committed_txid
    consumer_standin.setup = staticmethod(lambda c: _marker_reading(c, (0, 2), [
        [_Msg(0, b"t", b"1")], [_Msg(1, b"t", b"2")]]))
    assert read_committed_txid("h:1", "log", "t") == 2
    assert consumer_standin.made[0].calls[0] == ("list_topics", "log", 60.0)  # 60 s by default


def test_a_commit_log_partition_without_the_tasks_marker_has_no_committed_txid(
        consumer_standin: type[_Consumer]) -> None:
    from stormpy.connectors.kafka._transactional_sink import read_committed_txid
    consumer_standin.setup = staticmethod(lambda c: _marker_reading(c, (0, 2), [
        [_Msg(0, b"t-1", b"1"), _Msg(1, b"t-2", b"2")]]))
    assert read_committed_txid("h:1", "log", "t") is None


def test_an_empty_commit_log_partition_has_no_committed_txid(consumer_standin: type[_Consumer]) -> None:
    from stormpy.connectors.kafka._transactional_sink import read_committed_txid
    consumer_standin.setup = staticmethod(lambda c: _marker_reading(c, (5, 5), []))
    assert read_committed_txid("h:1", "log", "t") is None
    consumer = consumer_standin.made[0]
    assert [c[0] for c in consumer.calls] == ["list_topics", "watermarks"] and consumer.closed


def test_the_partition_end_and_the_consumer_position_end_the_read(
        consumer_standin: type[_Consumer]) -> None:
    from stormpy.connectors.kafka._transactional_sink import read_committed_txid
    eof = confluent_kafka.KafkaError(confluent_kafka.KafkaError._PARTITION_EOF)
    # a marker at 0, then the end reported at 3 (1-2: a transaction's control records)
    consumer_standin.setup = staticmethod(lambda c: _marker_reading(c, (0, 3), [
        [_Msg(0, b"t", b"6")], [_Msg(3, error=eof)]]))
    assert read_committed_txid("h:1", "log", "t") == 6
    assert [c[0] for c in consumer_standin.made[0].calls].count("consume") == 2
    # the position past the control records, without an end reported
    consumer_standin.setup = staticmethod(lambda c: _marker_reading(c, (0, 3), [
        [_Msg(0, b"t", b"8")]], positions=[3]))
    assert read_committed_txid("h:1", "log", "t") == 8
    assert [c[0] for c in consumer_standin.made[1].calls].count("consume") == 1
    # a position behind what was read does not move the read back
    consumer_standin.setup = staticmethod(lambda c: _marker_reading(c, (0, 2), [
        [_Msg(0, b"t", b"1"), _Msg(1, b"t", b"2")]], positions=[0]))
    assert read_committed_txid("h:1", "log", "t") == 2
    assert [c[0] for c in consumer_standin.made[2].calls].count("consume") == 1
    # an end reported before a transaction below the high watermark commits: read on
    consumer_standin.setup = staticmethod(lambda c: _marker_reading(c, (0, 2), [
        [_Msg(0, b"t", b"1"), _Msg(1, error=eof), _Msg(1, b"t", b"2")]]))
    assert read_committed_txid("h:1", "log", "t") == 2


def test_a_read_error_of_the_commit_log_is_raised_and_the_reader_closed(
        consumer_standin: type[_Consumer]) -> None:
    from stormpy.connectors.kafka._transactional_sink import read_committed_txid
    err = confluent_kafka.KafkaError(confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED)
    consumer_standin.setup = staticmethod(lambda c: _marker_reading(c, (0, 2), [
        [_Msg(0, b"t", b"1"), _Msg(1, error=err)]]))
    with pytest.raises(confluent_kafka.KafkaException) as info:
        read_committed_txid("h:1", "log", "t")
    assert info.value.args[0] is err and consumer_standin.made[0].closed
    part = _partition_of("t", 3)
    assert info.value.__notes__ == [f"reading the commit log 'log' (partition {part}) of 't' at "
                                    "offset 1"]


def test_a_transaction_left_open_below_the_high_watermark_times_the_read_out(
        consumer_standin: type[_Consumer]) -> None:
    from stormpy.connectors.kafka._transactional_sink import read_committed_txid
    consumer_standin.setup = staticmethod(lambda c: _marker_reading(c, (2, 9), [
        [_Msg(2, b"t", b"1")]]))
    with pytest.raises(TimeoutError) as info:
        read_committed_txid("h:1", "log", "t", 4.0)
    assert str(info.value) == ("reading the commit log 'log' of 't': at offset 3 of 9 after 4 s "
                               "(a transaction stays open below it)")
    # the clock advances 1 s a reading: within 4 s it read 3 times, at the deadline once more
    assert [c[0] for c in consumer_standin.made[0].calls].count("consume") == 4
    assert consumer_standin.made[0].closed


@pytest.mark.parametrize("meta, shown", [(None, "None"), (_Meta(0), "None"),
                                         (_Meta(2, error="UNKNOWN_TOPIC"), "UNKNOWN_TOPIC")])
def test_a_commit_log_topic_that_is_not_available_is_refused_naming_it(
        consumer_standin: type[_Consumer], meta: _Meta | None, shown: str) -> None:
    from stormpy.connectors.kafka._transactional_sink import read_committed_txid

    def setup(c: _Consumer) -> None:
        c.topics = {} if meta is None else {"log": meta}
    consumer_standin.setup = staticmethod(setup)
    with pytest.raises(KafkaConfigError) as info:
        read_committed_txid("h:1", "log", "t")
    assert str(info.value) == ("KafkaTransactionalConfig.commit_log_topic: commit log topic 'log' "
                               f"is not available: {shown}")
    assert consumer_standin.made[0].closed


class _Future:
    def __init__(self, error: BaseException | None) -> None:
        self.error = error
        self.waits: list[float] = []

    def result(self, timeout: float) -> None:
        self.waits.append(timeout)
        if self.error is not None:
            raise self.error


class _Admin:
    """An AdminClient whose ``list_topics`` answers ``listings`` in turn (the last one again)."""

    made: list[_Admin] = []
    listings: list[dict[str, _Meta]] = []
    create_error: BaseException | None = None

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.conf = dict(conf)
        self.calls: list[Any] = []
        self.futures: dict[str, _Future] = {}
        self.answers = list(_Admin.listings)
        _Admin.made.append(self)

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> _Listing:
        self.calls.append(("list_topics", topic, timeout))
        return _Listing(self.answers.pop(0) if len(self.answers) > 1 else self.answers[0])

    def create_topics(self, topics: list[Any]) -> dict[str, _Future]:
        self.calls.append(("create_topics", topics))
        self.futures = {t.args[0]: _Future(_Admin.create_error) for t in topics}
        return self.futures


class _NewTopic:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _NewTopic) and (self.args, self.kwargs) == (other.args, other.kwargs)


@pytest.fixture
def admin_standin(monkeypatch: pytest.MonkeyPatch, consumer_standin: type[_Consumer]
                  ) -> type[_Admin]:
    import confluent_kafka.admin
    _Admin.made, _Admin.listings, _Admin.create_error = [], [], None
    monkeypatch.setattr(confluent_kafka.admin, "AdminClient", _Admin)
    monkeypatch.setattr(confluent_kafka.admin, "NewTopic", _NewTopic)
    return _Admin


def _broker_sink(partitions: int = 1, timeout: float = 30.0
                 ) -> tuple[KafkaTransactionalSink, list[StubProducer], list[Any]]:
    log: list[Any] = []
    producers: list[StubProducer] = []

    def factory(conf: Mapping[str, Any]) -> StubProducer:
        producers.append(StubProducer(conf, log))
        return producers[-1]

    cfg = KafkaTransactionalConfig("h:1", topic="out", commit_log_topic="log",
                                   commit_log_partitions=partitions, timeout_secs=timeout)
    return KafkaTransactionalSink(cfg, "p-wc-b-1-0", producer_factory=factory), producers, log


def test_opening_reads_the_committed_txid_and_marks_its_partition_of_the_commit_log(
        admin_standin: type[_Admin], consumer_standin: type[_Consumer]) -> None:
    from stormpy.connectors.kafka._transactional_sink import client_log
    tid = "p-wc-b-1-0"
    admin_standin.listings = [{"log": _Meta(3)}]
    consumer_standin.setup = staticmethod(lambda c: _marker_reading(c, (0, 1), [
        [_Msg(0, tid.encode(), b"4")]]))
    sink, producers, log = _broker_sink(partitions=1)
    assert sink.commit_batch(4, [("out", b"k", b"v")]) is False  # committed before
    assert sink.commit_batch(5, [("out", b"k", b"v")]) is True
    admin = admin_standin.made[0]
    assert admin.conf == {"bootstrap.servers": "h:1", "logger": client_log}
    assert admin.calls == [("list_topics", None, 30.0)]  # there: not created
    assert consumer_standin.made[0].conf["group.id"] == f"{tid}-reader"
    assert consumer_standin.made[0].conf["bootstrap.servers"] == "h:1"
    assert consumer_standin.made[0].calls[:2] == [
        ("list_topics", "log", 30.0), ("watermarks", "log", _partition_of(tid, 3), 30.0, False)]
    assert log == ["init", "begin", ("produce", "out", b"k", b"v"),
                   ("produce", "log", tid.encode(), b"5"), "commit"]
    assert _partition_of(tid, 3) != 0
    assert sink._marker_partition == _partition_of(tid, 3)


def test_a_missing_commit_log_is_created_compacted_once_and_waited_for(
        admin_standin: type[_Admin], consumer_standin: type[_Consumer]) -> None:
    from stormpy.connectors.kafka import _transactional_sink as module
    admin_standin.listings = [{}, {"log": _Meta(0)}, {"log": _Meta(3, error="LEADER_NOT_AVAILABLE")},
                              {"other": _Meta(1)}, {"log": _Meta(3)}]
    sink, _producers, log = _broker_sink(partitions=3)
    sink.open()
    admin = admin_standin.made[0]
    assert admin.calls == [
        ("list_topics", None, 30.0),
        ("create_topics", [_NewTopic("log", num_partitions=3, replication_factor=-1, config={
            "cleanup.policy": "compact", "segment.ms": "600000",
            "min.cleanable.dirty.ratio": "0.1"})]),
        ("list_topics", "log", 30.0), ("list_topics", "log", 30.0), ("list_topics", "log", 30.0),
        ("list_topics", "log", 30.0)]
    assert admin.futures["log"].waits == [30.0]
    assert module.time.sleeps == [0.2, 0.2, 0.2]
    assert sink._marker_partition == _partition_of("p-wc-b-1-0", 3) and log == ["init"]
    assert sink.last_txid is None and sink.metrics()["opens"] == 1


def test_a_commit_log_created_meanwhile_by_another_task_is_used(
        admin_standin: type[_Admin], consumer_standin: type[_Consumer]) -> None:
    admin_standin.listings = [{"log": _Meta(0)}, {"log": _Meta(2)}]
    admin_standin.create_error = confluent_kafka.KafkaException(confluent_kafka.KafkaError(
        confluent_kafka.KafkaError.TOPIC_ALREADY_EXISTS))
    sink, _producers, _log = _broker_sink()
    sink.open()
    assert sink._marker_partition == _partition_of("p-wc-b-1-0", 2)


def test_a_commit_log_that_cannot_be_created_fails_the_opening(
        admin_standin: type[_Admin], consumer_standin: type[_Consumer]) -> None:
    admin_standin.listings = [{}]
    refused = confluent_kafka.KafkaException(confluent_kafka.KafkaError(
        confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED))
    admin_standin.create_error = refused
    sink, producers, _log = _broker_sink()
    with pytest.raises(confluent_kafka.KafkaException) as info:
        sink.open()
    assert info.value is refused and producers == [] and sink.producer is None


def test_a_commit_log_that_does_not_appear_times_the_opening_out(
        admin_standin: type[_Admin], consumer_standin: type[_Consumer]) -> None:
    from stormpy.connectors.kafka import _transactional_sink as module
    admin_standin.listings = [{}]
    sink, producers, _log = _broker_sink(timeout=3.0)
    with pytest.raises(TimeoutError) as info:
        sink.open()
    assert str(info.value) == "the commit log topic 'log' did not appear"
    assert producers == [] and module.time.sleeps == [0.2, 0.2, 0.2]


def test_without_a_factory_the_sink_builds_confluent_kafkas_producer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[Any] = []
    built: list[StubProducer] = []

    def producer(conf: Mapping[str, Any]) -> StubProducer:
        built.append(StubProducer(conf, log))
        return built[-1]
    monkeypatch.setattr(confluent_kafka, "Producer", producer)
    cfg = KafkaTransactionalConfig("h:1", topic="out", exactly_once=False)
    sink = KafkaTransactionalSink(cfg, "p-wc-b-1-0")
    assert sink.commit_batch(1, [("out", b"k", b"v")]) is True
    assert len(built) == 1 and built[0].conf["bootstrap.servers"] == "h:1"
    assert built[0].conf["enable.idempotence"] is True and log == [("produce", "out", b"k", b"v"),
                                                                   "flush"]


def test_the_read_txid_seam_is_given_the_sink_it_opens() -> None:
    seen: list[Any] = []

    def read_txid(sink: KafkaTransactionalSink) -> int | None:
        seen.append(sink)
        return None
    cfg = KafkaTransactionalConfig("h:1", topic="out")
    sink = KafkaTransactionalSink(cfg, "p-wc-b-1-0", read_txid=read_txid,
                                  producer_factory=lambda conf: StubProducer(conf, []))
    sink.open()
    assert seen == [sink]
