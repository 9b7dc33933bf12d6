"""The exactly-once Kafka path keeps its waits off (or short on) the executor loop, with stub
clients (no broker): a worker whose loop blocks misses its heartbeats and is restarted by its
supervisor, whose new incarnation would block again (the cause of output stalling after a
broker restart).

* The Trident sink state maps a batch without calling Kafka, even when its sink is not open:
  ``init_transactions``, the marker read and the transaction all run in ``commit_later``'s
  callable (the bolt runs it in the background); a replay of a committed txid learns it there
  and writes nothing.
* The opaque Kafka emitter's waits for records of one batch share one budget over the task's
  partitions (a fake clock: every poll times out).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import pytest

from stormpy.connectors.kafka import _opaque as opaque
from stormpy.connectors.kafka._opaque import REPLAY_WAIT_SECS, KafkaOpaqueEmitter, KafkaOpaqueSpout
from stormpy.connectors.kafka._transactional_sink import KafkaTransactionalConfig, KafkaTransactionalSink
from stormpy.connectors.kafka._trident_sink import KafkaTransactionalState, KafkaTransactionalUpdater
from stormpy.transactional._attempt import TransactionAttempt
from stormpy.trident._operation import TridentCollector, TridentTuple


class StubProducer:
    """The transactional calls of a confluent-kafka Producer, logged in ``calls``."""

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls
        self.produced: list[tuple[str, Any, Any]] = []

    def init_transactions(self, _timeout: float) -> None:
        self.calls.append("init_transactions")

    def begin_transaction(self) -> None:
        self.calls.append("begin_transaction")

    def produce(self, topic: str, value: Any = None, key: Any = None, **_kw: Any) -> None:
        self.produced.append((topic, key, value))

    def poll(self, _timeout: float) -> int:
        return 0

    def commit_transaction(self, _timeout: float) -> None:
        self.calls.append("commit_transaction")

    def abort_transaction(self, _timeout: float) -> None:
        self.calls.append("abort_transaction")

    def flush(self, _timeout: float) -> int:
        return 0


def sink_state(committed_txid: int | None) -> tuple[KafkaTransactionalState, list[str]]:
    calls: list[str] = []
    producers: list[StubProducer] = []

    def factory(_conf: Mapping[str, Any]) -> StubProducer:
        calls.append("new producer")
        producers.append(StubProducer(calls))
        return producers[-1]

    def read_txid(_sink: KafkaTransactionalSink) -> int | None:
        calls.append("read marker")
        return committed_txid

    config = KafkaTransactionalConfig("127.0.0.1:9", topic="out", key_field="word",
                                      message_field="count")
    sink = KafkaTransactionalSink(config, "p-wc-b-1-0", producer_factory=factory,
                                  read_txid=read_txid)
    return KafkaTransactionalState(sink), calls


def update(state: KafkaTransactionalState, txid: int, rows: list[tuple[str, int]]) -> list[Any]:
    """Begin txid's commit and run the updater over ``rows`` (what the loop does); the values
    it emitted."""
    emitted: list[Any] = []
    state.begin_commit(txid)
    tuples = [TridentTuple([w, c], ["word", "count"]) for w, c in rows]
    KafkaTransactionalUpdater().update_state(state, tuples, TridentCollector(emitted.append))
    return emitted


def test_mapping_a_batch_calls_no_kafka_and_the_commit_opens_and_writes_in_the_background() -> None:
    state, calls = sink_state(committed_txid=None)
    emitted = update(state, 1, [("cow", 1), ("moon", 2)])
    assert calls == [], "the updater (on the executor loop) called Kafka"
    assert emitted == [[2]]
    commit = state.commit_later(1)
    assert calls == [], "commit_later only takes the records; its callable does the work"
    commit()
    assert calls == ["new producer", "init_transactions", "read marker", "begin_transaction",
                     "commit_transaction"]
    assert state.written == 2 and state.sink.last_txid == 1
    # the next batch, the sink open now: still nothing but the transaction itself
    update(state, 2, [("cow", 2)])
    state.commit_later(2)()
    assert calls[5:] == ["begin_transaction", "commit_transaction"]
    assert state.sink.metrics()["batches"] == 2


def test_a_replay_of_a_committed_txid_on_an_unopened_sink_is_skipped_in_the_commit() -> None:
    # a new incarnation of the task handed txid 4 again after its Kafka commit
    state, calls = sink_state(committed_txid=4)
    update(state, 4, [("cow", 3)])
    assert calls == []
    state.commit_later(4)()
    assert calls == ["new producer", "init_transactions", "read marker"], "nothing written"
    assert state.written == 0 and state.sink.counters["skipped_batches"] == 1
    # the open sink knows its last txid: a further replay of 4 maps nothing
    assert update(state, 4, [("cow", 3)]) == [[0]]


class SilentConsumer:
    """A consumer whose every poll waits its whole timeout and returns nothing (the first
    fetch after a (re)assignment is slow, or the broker is coming back)."""

    def __init__(self, clock: list[float]) -> None:
        self.clock = clock
        self.polls = 0

    def assign(self, _starts: Mapping[Any, int]) -> None:
        pass

    def unassign(self, _partitions: Any) -> None:
        pass

    def consume(self, _max_records: int, timeout_secs: float) -> tuple[list[Any], list[str]]:
        self.polls += 1
        self.clock[0] += timeout_secs
        return [], []


def test_the_waits_of_one_batch_share_one_budget_over_the_tasks_partitions(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(opaque, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    spout = KafkaOpaqueSpout("127.0.0.1:9", "in", 100)
    emitter = KafkaOpaqueEmitter(spout, SimpleNamespace())  # type: ignore[arg-type]
    consumers = {p: SilentConsumer(clock) for p in range(4)}

    def consumer(partition: int) -> SilentConsumer:
        emitter.positions.setdefault(partition, None)
        return consumers[partition]
    monkeypatch.setattr(emitter, "_consumer", consumer)
    collector: Any = SimpleNamespace(emit=lambda values: pytest.fail(f"emitted {values}"))
    attempt = TransactionAttempt(7, 1)
    start = clock[0]
    for p in range(4):  # each partition fresh: the first batch on this task
        assert emitter.emit_partition_batch(attempt, collector, p, None) is None
    spent = clock[0] - start
    assert all(c.polls >= 1 for c in consumers.values()), "every partition was polled"
    assert spent <= REPLAY_WAIT_SECS + 4 * spout.poll_timeout_secs + 1e-6, \
        f"one batch waited {spent:.1f} s on the executor loop"
    # the replay of the batch (a new attempt) has a budget of its own
    clock[0] += 1.0
    start = clock[0]
    replay = TransactionAttempt(7, 2)
    emitter.positions = dict.fromkeys(range(4), 99)  # moved: each partition fresh again
    for p in range(4):
        emitter.emit_partition_batch(replay, collector, p, {"offset": 0, "next": 5})
    assert REPLAY_WAIT_SECS <= clock[0] - start <= REPLAY_WAIT_SECS + 4 * spout.poll_timeout_secs + 1e-6


class SlowInitProducer(StubProducer):
    """``init_transactions`` times out (retriable) ``slow`` times before it completes."""

    def __init__(self, calls: list[str], slow: int, fatal: bool = False) -> None:
        super().__init__(calls)
        self.slow = slow
        self.fatal = fatal

    def init_transactions(self, timeout: float) -> None:
        from confluent_kafka import KafkaError, KafkaException

        self.calls.append("init_transactions")
        if self.slow > 0:
            self.slow -= 1
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "coordinator not available",
                                             retriable=not self.fatal, fatal=self.fatal))


@pytest.mark.parametrize("fatal", [False, True], ids=["retriable", "fatal"])
def test_an_init_transactions_that_timed_out_is_called_again_on_the_same_producer(
        fatal: bool) -> None:
    calls: list[str] = []
    made: list[SlowInitProducer] = []

    def factory(_conf: Mapping[str, Any]) -> SlowInitProducer:
        made.append(SlowInitProducer(calls, slow=1 if not made else 0, fatal=fatal))
        return made[-1]

    config = KafkaTransactionalConfig("127.0.0.1:9", topic="out")
    sink = KafkaTransactionalSink(config, "p-wc-b-1-0", producer_factory=factory,
                                  read_txid=lambda _sink: 3)
    with pytest.raises(Exception, match="coordinator not available"):
        sink.commit_batch(4, [("out", b"k", b"v")])
    assert sink.producer is None and sink.counters["opens"] == 0
    assert sink.commit_batch(4, [("out", b"k", b"v")])
    # retriable: the first producer's initialisation is still under way in the client, so it is
    # completed, not raced by a second producer of the same transactional.id (which it would
    # fence); fatal: that producer is unusable and a new one is made
    assert len(made) == (2 if fatal else 1)
    assert sink.producer is made[-1] and sink.last_txid == 4
    assert calls.count("init_transactions") == 2
