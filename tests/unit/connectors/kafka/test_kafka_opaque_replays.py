"""KafkaOpaqueSpout's replays under opaque state: a transaction replayed after its first attempt's
values were committed (a crash between the committers' commit and the coordinator's commit
record) emits the same batch again, from the same emitter task or from a restarted one, so every
record is counted exactly once over that transaction and the next. A replay whose records cannot
be read in time fails instead of going out smaller."""

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
