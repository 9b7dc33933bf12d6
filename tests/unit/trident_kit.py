"""Shared bits of the Trident tests: operations defined at module level (workers import them by
path) and a sink collecting what reaches it in this process (LocalCluster runs in-process)."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from stormpy.topology._streams import Stream
from stormpy.transactional import OpaquePartitionedTransactionalSpout
from stormpy.trident import (
    Aggregator,
    Consumer,
    Filter,
    Function,
    ReducerAggregator,
    TridentCollector,
    TridentTuple,
)

SENTENCES = ["the cow jumped over the moon", "the man went to the store and bought some candy",
             "four score and seven years ago", "how many apples can you eat"]

_lock = threading.Lock()
SEEN: dict[str, list[list[Any]]] = defaultdict(list)
FAILS: dict[str, int] = defaultdict(int)


def seen(name: str) -> list[list[Any]]:
    with _lock:
        return [list(v) for v in SEEN[name]]


def forget(prefix: str = "") -> None:
    """Drop what the sinks, counters and failure injectors named ``prefix...`` recorded (all of
    it by default), so a test that runs its topology again in the same process (a second test
    session, as mutmut's clean run after its stats run) starts from nothing."""
    with _lock:
        for record in (SEEN, FAILS, CALLS):
            for name in [n for n in record if n.startswith(prefix)]:
                del record[name]


class Collect(Consumer):
    """Records every tuple under ``name``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def accept(self, tuple_: TridentTuple) -> None:
        with _lock:
            SEEN[self.name].append(list(tuple_))


class Split(Function):
    def execute(self, tuple_: TridentTuple, collector: TridentCollector) -> None:
        for word in tuple_[0].split():
            collector.emit([word])


def split_words(tuple_: TridentTuple) -> list[list[str]]:
    return [[w] for w in tuple_["sentence"].split()]


def upper(tuple_: TridentTuple) -> list[Any]:
    return [tuple_[0].upper()]


def is_long(tuple_: TridentTuple) -> bool:
    return len(tuple_[0]) > 3


class Even(Filter):
    def is_keep(self, tuple_: TridentTuple) -> bool:
        return tuple_[0] % 2 == 0


class Double(Function):
    def execute(self, tuple_: TridentTuple, collector: TridentCollector) -> None:
        collector.emit([tuple_[0] * 2])


class ListOf(ReducerAggregator):
    """The sorted list of the first input field."""

    def init(self) -> list[Any]:
        return []

    def reduce(self, curr: Any, tuple_: TridentTuple) -> Any:
        return sorted([*curr, tuple_[0]])


class CountAndSum(Aggregator):
    """Emits [count, sum] of the first field (Storm's general Aggregator)."""

    def init(self, batch_id: Any, collector: TridentCollector) -> list[int]:
        return [0, 0]

    def aggregate(self, state: Any, tuple_: TridentTuple, collector: TridentCollector) -> None:
        state[0] += 1
        state[1] += tuple_[0]

    def complete(self, state: Any, collector: TridentCollector) -> None:
        collector.emit(list(state))


def times_ten(tuple_: TridentTuple) -> list[int]:
    return [tuple_["n"] * 10]


def twice(tuple_: TridentTuple) -> list[list[int]]:
    return [[tuple_[0]], [tuple_[0]]]


def is_odd(tuple_: TridentTuple) -> bool:
    return bool(tuple_[0] % 2)


class Parity(Function):
    def execute(self, tuple_: TridentTuple, collector: TridentCollector) -> None:
        collector.emit([tuple_[0] % 2])


class Square(Function):
    def execute(self, tuple_: TridentTuple, collector: TridentCollector) -> None:
        collector.emit([tuple_[0] ** 2])


CALLS: dict[str, int] = defaultdict(int)


class CountCalls(Function):
    """Emits nothing extra... counts its calls under ``name`` and passes the tuple on."""

    def __init__(self, name: str) -> None:
        self.name = name

    def execute(self, tuple_: TridentTuple, collector: TridentCollector) -> None:
        with _lock:
            CALLS[self.name] += 1
        collector.emit([])


class FailOnWord(Filter):
    """Fails the first tuple whose first field is ``word`` (once per ``name``), keeps the rest."""

    def __init__(self, name: str, word: Any) -> None:
        self.name = name
        self.word = word

    def is_keep(self, tuple_: TridentTuple) -> bool:
        with _lock:
            if tuple_[0] == self.word and FAILS[self.name] == 0:
                FAILS[self.name] += 1
                raise RuntimeError(f"injected failure at {self.word!r}")
        return True


class ShortFirstAttemptSpout(OpaquePartitionedTransactionalSpout):
    """An opaque spout over ``rows`` of one field ``word``, ``take`` rows per batch, whose first
    attempt of transaction ``short_txid`` emits only the first ``short`` rows of that batch (a
    replay of an opaque spout may differ; the rest comes with the replay)."""

    def __init__(self, rows: list[list[Any]], take: int, short_txid: int, short: int) -> None:
        self.rows, self.take, self.short_txid, self.short = rows, take, short_txid, short

    @property
    def component_class(self) -> type:
        return type(self)

    @property
    def component_kwargs(self) -> dict[str, Any]:
        return {"rows": self.rows, "take": self.take, "short_txid": self.short_txid,
                "short": self.short}

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        return {"default": Stream(["tx", "word"])}

    def get_coordinator(self, conf: Any, context: Any) -> _OpaqueCoordinator:
        return _OpaqueCoordinator(-(-len(self.rows) // self.take))

    def get_emitter(self, conf: Any, context: Any) -> _OpaqueEmitter:
        return _OpaqueEmitter(self)


class _OpaqueCoordinator(OpaquePartitionedTransactionalSpout.Coordinator):
    def __init__(self, batches: int) -> None:
        self.remaining = batches

    def is_ready(self) -> bool:
        if self.remaining <= 0:
            return False
        self.remaining -= 1
        return True


class _OpaqueEmitter(OpaquePartitionedTransactionalSpout.Emitter):
    def __init__(self, spout: ShortFirstAttemptSpout) -> None:
        self.spout = spout
        self.shortened = False

    def num_partitions(self) -> int:
        return 1

    def emit_partition_batch(self, attempt: Any, collector: Any, partition: int,
                             last_meta: Any) -> Any:
        start = last_meta["end"] if last_meta else 0
        end = min(start + self.spout.take, len(self.spout.rows))
        if attempt.transaction_id == self.spout.short_txid and not self.shortened:
            self.shortened = True
            end = min(end, start + self.spout.short)
        for row in self.spout.rows[start:end]:
            collector.emit([attempt, *row])
        return {"end": end}


def is_not_none(tuple_: TridentTuple) -> bool:
    return tuple_[0] is not None


def split_value(tuple_: TridentTuple) -> list[list[str]]:
    """Words of a Kafka record's value."""
    return [[w] for w in (tuple_["value"] or "").split()]
