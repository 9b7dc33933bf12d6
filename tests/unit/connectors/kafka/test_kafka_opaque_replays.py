"""KafkaOpaqueSpout's replays under opaque state: a transaction replayed after its first attempt's
values were committed (a crash between the committers' commit and the coordinator's commit
record) emits the same batch again, from the same emitter task or from a restarted one, so every
record is counted exactly once over that transaction and the next. A replay whose records cannot
be read in time fails instead of going out smaller. The emitter on its own (a simulated clock
and a consumer of a fixed log): its settings and their refusals, the consumer it builds per
partition, batches from where the last one ended up to ``max_batch_records``, the wait budget,
replays taking exactly the earlier attempt's offsets (asking each fetch for what is still
lacking), the error of a short replay, and close."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, cast

import pytest
from tx_memory import NamedMemoryStore

from stormpy.connectors.kafka import KafkaOpaqueSpout, KafkaRecord
from stormpy.connectors.kafka import _opaque as opaque
from stormpy.topology._context import TopologyContext
from stormpy.topology._errors import FailedException
from stormpy.transactional import TransactionAttempt
from stormpy.transactional._api import BatchOutputCollector
from stormpy.transactional._emitter import EmitterExecutor, make_executor

TOPIC = "words"
WORDS = ["cow", "jumped", "over", "the", "moon", "cow", "man", "dog", "cow", "moon"]
LOG = [KafkaRecord(TOPIC, 0, i, None, w.encode()) for i, w in enumerate(WORDS)]


class ChunkedConsumer:
    """A consumer of partition 0 whose calls of ``consume`` return at most ``chunks[i]`` records
    (0: none, a fetch still under way), then whatever is ready: what a real fetch looks like
    after a (re)assignment on a busy broker. ``stalled``: nothing comes after the chunks (each
    call waits its timeout, as a poll does)."""

    def __init__(self, chunks: list[int], stalled: bool = False) -> None:
        self.chunks = list(chunks)
        self.stalled = stalled
        self.assigned = False
        self.position = 0

    def assign(self, starts: dict[Any, int]) -> None:
        if self.assigned:  # as librdkafka's incremental_assign refuses it
            raise RuntimeError("partition 0 is already part of the current assignment")
        self.assigned = True
        (at,) = starts.values()
        self.position = max(at, 0)
        self.chunks_left = list(self.chunks)

    def unassign(self, _partitions: Any) -> None:
        self.assigned = False
        self.position = 0

    def consume(self, max_records: int, timeout: float) -> tuple[list[KafkaRecord], list[str]]:
        if not self.chunks_left and self.stalled:
            time.sleep(timeout)
            return [], []
        limit = self.chunks_left.pop(0) if self.chunks_left else len(LOG)
        out = LOG[self.position:self.position + min(limit, max_records)]
        self.position += len(out)
        return out, []

    def close(self) -> None:
        pass


class Task:
    """One emitter task of the spout (all partitions: one) over the transactional store."""

    def __init__(self, store: NamedMemoryStore, chunks: list[int], stalled: bool = False) -> None:
        spout = KafkaOpaqueSpout("127.0.0.1:9", TOPIC, max_batch_records=100)
        context = cast(TopologyContext, SimpleNamespace(task_index=0, component_tasks=[1]))
        self.executor: EmitterExecutor = make_executor(spout, {}, context, lambda: store)
        emitter = self.executor.emitter
        emitter._partitions = 1
        self.consumer = ChunkedConsumer(chunks, stalled)

        def consumer(partition: int) -> ChunkedConsumer:
            emitter.positions.setdefault(partition, None)
            emitter.consumers[partition] = self.consumer
            return self.consumer
        emitter._consumer = consumer

    def emit(self, attempt: TransactionAttempt) -> list[str]:
        words: list[str] = []

        def emit(values: list[Any], _stream: str) -> list[int]:
            words.append(values[4])
            return [2]
        self.executor.emit_batch(attempt, None, BatchOutputCollector(emit, lambda *_: None,
                                                                     lambda _: None))
        return words


class OpaqueCounts:
    """Opaque map state of a word count: per word (txid, current, previous)."""

    def __init__(self) -> None:
        self.values: dict[str, tuple[int, int, int]] = {}

    def commit(self, txid: int, words: list[str]) -> None:
        for word, n in Counter(words).items():
            stored, curr, prev = self.values.get(word, (0, 0, 0))
            base = prev if stored == txid else curr  # a replayed txid starts from ``prev``
            self.values[word] = (txid, base + n, base)

    def counts(self) -> dict[str, int]:
        return {w: v[1] for w, v in self.values.items()}


@pytest.fixture
def store() -> Iterator[NamedMemoryStore]:
    name = "kafka-opaque-replays"
    NamedMemoryStore.forget(name)
    yield NamedMemoryStore(name)
    NamedMemoryStore.forget(name)


@pytest.mark.parametrize("emitter_committed", [False, True])
@pytest.mark.parametrize("restarted", [False, True])
def test_a_replay_after_a_commit_of_its_values_counts_every_record_once(
        store: NamedMemoryStore, restarted: bool, emitter_committed: bool) -> None:
    task = Task(store, [6, 0])  # the first attempt takes the six records ready
    first = TransactionAttempt(1, 1)
    words = task.emit(first)
    assert words == WORDS[:6]
    state = OpaqueCounts()
    state.commit(1, words)  # the committers committed; the coordinator's record was lost
    if emitter_committed:
        task.executor.commit(first)
    # the replay's fetch comes in pieces: it must not stop at the first two records
    if restarted:
        task = Task(store, [2, 0, 100])
    else:
        task.consumer.chunks = [2, 0, 100]
        task.executor.emitter._unplace(0)  # moved: read again from the batch's start
    replay = TransactionAttempt(1, 2)
    again = task.emit(replay)
    assert again == words, "the replay emits the first attempt's batch again"
    state.commit(1, again)
    task.executor.commit(replay)
    following = task.emit(TransactionAttempt(2, 1))
    assert following == WORDS[6:], "the next transaction starts where the replay ended"
    state.commit(2, following)
    assert state.counts() == dict(Counter(WORDS))


def test_a_replay_whose_records_do_not_come_fails_rather_than_shrinking(
        store: NamedMemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opaque, "REPLAY_WAIT_SECS", 0.05)
    task = Task(store, [6, 0])
    assert len(task.emit(TransactionAttempt(1, 1))) == 6
    restarted = Task(store, [2], stalled=True)  # the rest does not arrive within the budget
    with pytest.raises(FailedException, match="partition 0.*up to 6"):
        restarted.emit(TransactionAttempt(1, 2))
    restarted.consumer.stalled = False  # the broker caught up: the next attempt gets the batch
    assert restarted.emit(TransactionAttempt(1, 3)) == WORDS[:6]


def test_a_replay_after_the_previous_batch_changed_takes_a_new_batch(
        store: NamedMemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opaque, "REPLAY_WAIT_SECS", 0.05)
    task = Task(store, [], stalled=True)
    assert task.emit(TransactionAttempt(1, 1)) == []  # nothing ready for txid 1
    task.consumer.stalled = False
    task.consumer.chunks = [3, 0]
    task.consumer.chunks_left = [3, 0]
    assert task.emit(TransactionAttempt(2, 1)) == WORDS[:3]
    # txid 1 failed before any commit; its replay finds records, so txid 2 starts later and
    # takes what is ready then (nothing of txid 2 can have been committed before txid 1)
    task.consumer.chunks = [4, 0, 2, 0]
    task.executor.emitter._unplace(0)
    assert task.emit(TransactionAttempt(1, 2)) == WORDS[:4]
    assert task.emit(TransactionAttempt(2, 2)) == WORDS[4:6]


# -- the emitter on its own: settings, the consumer it builds, batches and their metadata ----------

class LogConsumer:
    """A consumer of one partition's ``log`` on a simulated clock: ``consume`` returns up to
    ``max_records`` from the position (``ready`` bounds what has arrived), or waits its whole
    timeout when nothing is ready. Logs its calls."""

    def __init__(self, clock: list[float], log: list[KafkaRecord], ready: int | None = None) -> None:
        self.clock = clock
        self.log = log
        self.ready = len(log) if ready is None else ready
        self.position = 0
        self.calls: list[tuple[Any, ...]] = []
        #: at most this many records from each of the next calls of ``consume`` (a fetch in pieces)
        self.chunks: list[int] = []

    def assign(self, starts: dict[Any, int]) -> None:
        ((tp, at),) = starts.items()
        self.calls.append(("assign", tp.topic, tp.partition, at))
        self.position = 0 if at == opaque.OFFSET_BEGINNING else at

    def unassign(self, partitions: list[Any]) -> None:
        self.calls.append(("unassign", [(tp.topic, tp.partition) for tp in partitions]))

    def consume(self, max_records: int, timeout: float) -> tuple[list[KafkaRecord], list[str]]:
        self.calls.append(("consume", max_records))
        if max_records < 1:  # as confluent-kafka's consume refuses it
            raise ValueError("num_messages must be between 1 and 1000000 (1M)")
        n = min(max_records, self.chunks.pop(0)) if self.chunks else max_records
        out = self.log[self.position:min(self.ready, self.position + n)]
        if not out:
            self.clock[0] += timeout
        self.position += len(out)
        return out, []

    def topics(self, timeout: float) -> dict[str, int]:
        self.calls.append(("topics", timeout))
        return {TOPIC: 3, "other": 1}

    def close(self) -> None:
        self.calls.append(("close",))


class Emitted:
    """A collector recording what the emitter emits."""

    def __init__(self) -> None:
        self.tuples: list[list[Any]] = []

    def emit(self, values: list[Any]) -> None:
        self.tuples.append(values)


def _emitter(monkeypatch: pytest.MonkeyPatch, log: list[KafkaRecord], ready: int | None = None,
             **settings: Any) -> tuple[opaque.KafkaOpaqueEmitter, LogConsumer, list[float]]:
    clock = [100.0]
    monkeypatch.setattr(opaque, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    consumer = LogConsumer(clock, log, ready)
    made: list[tuple[Any, ...]] = []

    def client(conf: dict[str, Any], on_error: Any, on_commit_error: Any) -> LogConsumer:
        made.append((conf, on_error, on_commit_error))
        return consumer

    monkeypatch.setattr(opaque, "KafkaConsumerClient", client)
    spout = KafkaOpaqueSpout("127.0.0.1:9", TOPIC, **settings)
    emitter = spout.get_emitter({}, cast(TopologyContext, SimpleNamespace()))
    consumer.made = made  # type: ignore[attr-defined]
    return emitter, consumer, clock


def test_the_spout_refuses_bad_settings_naming_them() -> None:
    for bad in (0, -1, 1.5, "10"):
        with pytest.raises(ValueError) as info:
            KafkaOpaqueSpout("h:1", TOPIC, max_batch_records=bad)  # type: ignore[arg-type]
        assert str(info.value) == f"max_batch_records must be an integer >= 1, got {bad!r}"
    for servers, topic in (("", TOPIC), ("h:1", "")):
        with pytest.raises(ValueError) as info:
            KafkaOpaqueSpout(servers, topic)
        assert str(info.value) == "KafkaOpaqueSpout needs bootstrap_servers and a topic"
    KafkaOpaqueSpout("h:1", TOPIC, max_batch_records=1)  # the lowest allowed
    defaults = KafkaOpaqueSpout("h:1", TOPIC).component_kwargs
    assert (defaults["max_batch_records"], defaults["poll_timeout_secs"], defaults["consumer_config"]) == \
        (1000, 0.2, {})


def test_the_spout_travels_with_every_setting_and_declares_its_fields() -> None:
    spout = KafkaOpaqueSpout("h:1", TOPIC, 7, poll_timeout_secs=2, encoding=None,
                             consumer_config={"fetch.min.bytes": 1})
    assert spout.component_class is KafkaOpaqueSpout
    assert spout.component_kwargs == {"bootstrap_servers": "h:1", "topic": TOPIC, "max_batch_records": 7,
                                      "poll_timeout_secs": 2.0, "encoding": None,
                                      "consumer_config": {"fetch.min.bytes": 1}}
    again = KafkaOpaqueSpout(**spout.component_kwargs)
    assert again.component_kwargs == spout.component_kwargs
    assert KafkaOpaqueSpout("h:1", TOPIC).component_kwargs["encoding"] == "utf-8"
    (name, stream), = KafkaOpaqueSpout.declare_outputs(spout.component_kwargs).items()
    assert name == "default" and list(stream.fields) == ["tx", "partition", "offset", "key", "value"]


def test_each_partition_gets_one_consumer_of_its_own_configured_for_manual_offsets(
        monkeypatch: pytest.MonkeyPatch) -> None:
    emitter, consumer, _clock = _emitter(monkeypatch, LOG, consumer_config={"fetch.min.bytes": 5,
                                                                            "auto.offset.reset": "latest"})
    assert emitter._consumer(0) is consumer and emitter._consumer(0) is consumer
    assert emitter.positions == {0: None}
    emitter._consumer(2)
    made = consumer.made  # type: ignore[attr-defined]
    assert len(made) == 2 and emitter.positions == {0: None, 2: None}
    conf, on_error, on_commit_error = made[0]
    group = conf.pop("group.id")
    assert conf == {"bootstrap.servers": "127.0.0.1:9", "enable.auto.commit": False,
                    "auto.offset.reset": "latest", "enable.partition.eof": False, "fetch.min.bytes": 5}
    assert group.startswith("stormpy-opaque-") and len(group) == len("stormpy-opaque-") + 12
    assert made[1][0]["group.id"] != group  # nothing shared through a consumer group
    on_error("Kafka client error: down")
    on_commit_error("commit failed")
    assert emitter.errors == ["Kafka client error: down", "commit failed"]
    assert emitter._conf()["auto.offset.reset"] == "latest"
    assert KafkaOpaqueSpout("h:1", TOPIC).get_emitter({}, cast(TopologyContext, None))._conf()[
        "auto.offset.reset"] == "earliest"


def test_the_partition_count_is_asked_once_and_a_missing_topic_is_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    emitter, consumer, _clock = _emitter(monkeypatch, LOG)
    assert emitter.num_partitions() == 3 and emitter.num_partitions() == 3
    assert consumer.calls == [("topics", 10.0)]
    # asked through partition 0's consumer, which then reads partition 0: no consumer of its own
    assert list(emitter.consumers) == [0] and emitter.positions == {0: None}
    assert emitter._consumer(0) is consumer and len(consumer.made) == 1  # type: ignore[attr-defined]
    missing, _consumer, _clock = _emitter(monkeypatch, LOG)
    missing.spout.topic = "nowhere"
    with pytest.raises(RuntimeError) as info:
        missing.num_partitions()
    assert str(info.value) == "Kafka topic 'nowhere' not found on 127.0.0.1:9"


def test_batches_take_up_to_max_batch_records_from_where_the_last_one_ended(
        monkeypatch: pytest.MonkeyPatch) -> None:
    log = [KafkaRecord(TOPIC, 1, i, f"k{i}".encode() if i % 2 else None, w.encode())
           for i, w in enumerate(WORDS)]
    emitter, consumer, _clock = _emitter(monkeypatch, log, max_batch_records=4)
    out = Emitted()
    first = TransactionAttempt(1, 1)
    meta = emitter.emit_partition_batch(first, cast(BatchOutputCollector, out), 1, None)
    assert meta == {"offset": 0, "next": 4}
    assert out.tuples == [[first, 1, 0, None, "cow"], [first, 1, 1, "k1", "jumped"],
                          [first, 1, 2, None, "over"], [first, 1, 3, "k3", "the"]]
    assert consumer.calls == [("assign", TOPIC, 1, opaque.OFFSET_BEGINNING), ("consume", 4)]
    out.tuples.clear()
    consumer.calls.clear()
    second = TransactionAttempt(2, 1)
    assert emitter.emit_partition_batch(second, cast(BatchOutputCollector, out), 1, meta) == \
        {"offset": 4, "next": 8}
    assert [t[2] for t in out.tuples] == [4, 5, 6, 7] and out.tuples[0][0] is second
    assert all(c[0] == "consume" for c in consumer.calls)  # where it is already: not assigned again
    assert emitter.positions[1] == 8


def test_a_batch_takes_what_is_ready_and_an_empty_one_keeps_the_last_metadata(
        monkeypatch: pytest.MonkeyPatch) -> None:
    emitter, consumer, clock = _emitter(monkeypatch, LOG, ready=3, max_batch_records=100)
    out = Emitted()
    start = clock[0]
    meta = emitter.emit_partition_batch(TransactionAttempt(1, 1), cast(BatchOutputCollector, out), 0, None)
    assert meta == {"offset": 0, "next": 3} and len(out.tuples) == 3
    assert clock[0] - start == pytest.approx(0.1)  # one short wait shows nothing more is ready
    assert [c for c in consumer.calls if c[0] == "consume"] == [("consume", 100), ("consume", 97)]
    out.tuples.clear()
    start = clock[0]
    assert emitter.emit_partition_batch(TransactionAttempt(2, 1), cast(BatchOutputCollector, out), 0,
                                        meta) is meta
    assert out.tuples == []
    assert clock[0] - start == pytest.approx(0.2)  # poll_timeout_secs in waits of at most 0.1 s
    fresh, _consumer, clock = _emitter(monkeypatch, LOG, ready=0)
    start = clock[0]
    assert fresh.emit_partition_batch(TransactionAttempt(1, 1), cast(BatchOutputCollector, out), 0,
                                      None) is None
    assert clock[0] - start == pytest.approx(opaque.REPLAY_WAIT_SECS)  # a first batch waits longer


def test_without_an_encoding_keys_and_values_stay_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    log = [KafkaRecord(TOPIC, 0, 0, b"k", b"v"), KafkaRecord(TOPIC, 0, 1, None, None)]
    emitter, _consumer, _clock = _emitter(monkeypatch, log, encoding=None)
    out = Emitted()
    attempt = TransactionAttempt(1, 1)
    emitter.emit_partition_batch(attempt, cast(BatchOutputCollector, out), 0, None)
    assert out.tuples == [[attempt, 0, 0, b"k", b"v"], [attempt, 0, 1, None, None]]
    latin, _consumer, _clock = _emitter(monkeypatch, [KafkaRecord(TOPIC, 0, 0, "é".encode("latin-1"),
                                                                  None)], encoding="latin-1")
    out.tuples.clear()
    latin.emit_partition_batch(attempt, cast(BatchOutputCollector, out), 0, None)
    assert out.tuples == [[attempt, 0, 0, "é", None]]


def test_a_replay_takes_exactly_the_earlier_attempts_offsets_from_its_start(
        monkeypatch: pytest.MonkeyPatch) -> None:
    emitter, consumer, _clock = _emitter(monkeypatch, LOG, max_batch_records=100)
    out = Emitted()
    replay = TransactionAttempt(3, 2)
    meta = emitter.emit_partition_batch_again(replay, cast(BatchOutputCollector, out), 0,
                                              {"offset": 0, "next": 2}, {"offset": 2, "next": 5})
    assert meta == {"offset": 2, "next": 5}
    assert out.tuples == [[replay, 0, o, None, WORDS[o]] for o in (2, 3, 4)]
    assert consumer.calls == [("assign", TOPIC, 0, 2), ("consume", 3)]
    assert emitter.positions[0] == 5  # ended exactly at the batch: the next one goes on from there
    # from the beginning of a partition whose oldest records are gone (offsets 3...): the
    # consumer reads past the batch, so its partition is assigned again for the next batch
    trimmed, consumer, _clock = _emitter(monkeypatch, LOG[3:], max_batch_records=100)
    consumer.position = 0
    out.tuples.clear()
    again = trimmed.emit_partition_batch_again(replay, cast(BatchOutputCollector, out), 0, None,
                                               {"offset": 3, "next": 5})
    assert again == {"offset": 3, "next": 5} and [t[2] for t in out.tuples] == [3, 4]
    assert consumer.calls[:2] == [("assign", TOPIC, 0, opaque.OFFSET_BEGINNING), ("consume", 5)]
    assert consumer.calls[-1] == ("unassign", [(TOPIC, 0)]) and trimmed.positions[0] is None


def test_a_replay_that_ends_exactly_at_its_batch_keeps_its_place(monkeypatch: pytest.MonkeyPatch) -> None:
    emitter, consumer, _clock = _emitter(monkeypatch, LOG, ready=5)
    out = Emitted()
    meta = emitter.emit_partition_batch_again(TransactionAttempt(3, 2), cast(BatchOutputCollector, out), 0,
                                              {"offset": 0, "next": 2}, {"offset": 2, "next": 5})
    assert meta == {"offset": 2, "next": 5} and emitter.positions[0] == 5
    assert not any(c[0] == "unassign" for c in consumer.calls)


def test_a_short_replay_fails_naming_topic_partition_and_offsets_and_reads_again_next_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    emitter, consumer, clock = _emitter(monkeypatch, LOG, ready=4)
    out = Emitted()
    start = clock[0]
    with pytest.raises(FailedException) as info:
        emitter.emit_partition_batch_again(TransactionAttempt(3, 2), cast(BatchOutputCollector, out), 0,
                                           {"offset": 0, "next": 2}, {"offset": 2, "next": 6})
    assert str(info.value) == (f"Kafka topic {TOPIC!r} partition 0: the replay of transaction 3 must take "
                               "the offsets up to 6 its earlier attempt took, got up to 4 in time; the "
                               "transaction is tried again")
    assert clock[0] - start == pytest.approx(opaque.REPLAY_WAIT_SECS)
    assert out.tuples == [] and emitter.positions[0] is None
    assert consumer.calls[-1] == ("unassign", [(TOPIC, 0)])
    nothing, _consumer, _clock = _emitter(monkeypatch, LOG, ready=0)
    with pytest.raises(FailedException, match="must take the offsets up to 6 its earlier attempt took, "
                                              "got up to 2 in time"):
        nothing.emit_partition_batch_again(TransactionAttempt(3, 2), cast(BatchOutputCollector, out), 0,
                                           {"offset": 0, "next": 2}, {"offset": 2, "next": 6})


def test_a_replay_asks_only_for_the_records_its_batch_still_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    emitter, consumer, _clock = _emitter(monkeypatch, LOG, max_batch_records=3)
    out = Emitted()
    emitter.emit_partition_batch_again(TransactionAttempt(3, 2), cast(BatchOutputCollector, out), 0,
                                       {"offset": 0, "next": 2}, {"offset": 2, "next": 4})
    assert [c for c in consumer.calls if c[0] == "consume"] == [("consume", 2)]
    assert [t[2] for t in out.tuples] == [2, 3]


def test_close_closes_every_consumer_even_after_one_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    emitter, _consumer, _clock = _emitter(monkeypatch, LOG)
    closed: list[int] = []

    class Closing:
        def __init__(self, n: int, broken: bool) -> None:
            self.n, self.broken = n, broken

        def close(self) -> None:
            closed.append(self.n)
            if self.broken:
                raise RuntimeError("already closed")

    emitter.consumers = {0: Closing(0, True), 1: Closing(1, False)}  # type: ignore[dict-item]
    emitter.close()
    assert closed == [0, 1] and emitter.consumers == {}


def test_a_replay_elsewhere_moves_the_consumer_to_the_batchs_start(monkeypatch: pytest.MonkeyPatch) -> None:
    emitter, consumer, _clock = _emitter(monkeypatch, LOG, max_batch_records=4)
    out = Emitted()
    emitter.emit_partition_batch(TransactionAttempt(1, 1), cast(BatchOutputCollector, out), 0, None)
    assert emitter.positions[0] == 4
    consumer.calls.clear()
    out.tuples.clear()
    replay = TransactionAttempt(1, 2)
    assert emitter.emit_partition_batch_again(replay, cast(BatchOutputCollector, out), 0, None,
                                              {"offset": 0, "next": 4}) == {"offset": 0, "next": 4}
    assert consumer.calls[:2] == [("unassign", [(TOPIC, 0)]), ("assign", TOPIC, 0, opaque.OFFSET_BEGINNING)]
    assert [t[2] for t in out.tuples] == [0, 1, 2, 3]


def test_a_replay_fetched_in_pieces_asks_each_time_for_exactly_what_it_lacks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for chunks, asked in (([3], [6, 3]), ([5], [6, 1]), ([1, 1], [6, 5, 4])):
        emitter, consumer, _clock = _emitter(monkeypatch, LOG, max_batch_records=100)
        consumer.chunks = list(chunks)
        out = Emitted()
        meta = emitter.emit_partition_batch_again(TransactionAttempt(2, 2), cast(BatchOutputCollector, out),
                                                  0, None, {"offset": 0, "next": 6})
        assert meta == {"offset": 0, "next": 6} and [t[2] for t in out.tuples] == list(range(6))
        assert [c[1] for c in consumer.calls if c[0] == "consume"] == asked, chunks
        assert emitter.positions[0] == 6  # nothing read past the batch
    one, consumer, _clock = _emitter(monkeypatch, LOG, max_batch_records=100)
    one.emit_partition_batch_again(TransactionAttempt(2, 2), cast(BatchOutputCollector, Emitted()), 0,
                                   {"offset": 0, "next": 2}, {"offset": 2, "next": 3})
    assert [c for c in consumer.calls if c[0] == "consume"] == [("consume", 1)]


def test_a_short_replay_names_the_last_offset_it_got(monkeypatch: pytest.MonkeyPatch) -> None:
    emitter, _consumer, _clock = _emitter(monkeypatch, LOG, ready=4)
    with pytest.raises(FailedException, match="must take the offsets up to 6 its earlier attempt took, "
                                              "got up to 4 in time"):
        emitter.emit_partition_batch_again(TransactionAttempt(3, 2), cast(BatchOutputCollector, Emitted()), 0,
                                           None, {"offset": 0, "next": 6})
