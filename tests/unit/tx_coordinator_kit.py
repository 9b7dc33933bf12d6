"""The coordinator spout driven by hand over the in-memory store (for the coordinator's unit
tests): a user spout whose coordinator records what it is asked, a store that can be unreachable
or fail its next reads and writes, and a harness that records the spout's emits."""

from __future__ import annotations

from typing import Any

import pytest
from tx_memory import CONTEXT, NamedMemoryStore

from stormpy.topology._imports import class_path
from stormpy.transactional import TransactionAttempt
from stormpy.transactional._api import OpaquePartitionedTransactionalSpout, TransactionalSpout
from stormpy.transactional._coordinator import META_KEY, CoordinatorSpout
from stormpy.transactional._store import StoreUnavailable
from stormpy.transactional._streams import BATCH_STREAM, COMMIT_STREAM

READY: list[bool] = []  # answers of is_ready, popped one by one (True when empty)
ASKED: list[Any] = []


class Counting(TransactionalSpout):
    """Metadata of txid n: ``previous + 10`` (10 for the first)."""

    def get_coordinator(self, conf: Any, context: Any) -> Any:
        ASKED.append(("get_coordinator", conf.get("transactional.store"), context))
        return CountingCoordinator()


class Opaque(OpaquePartitionedTransactionalSpout):
    def get_coordinator(self, conf: Any, context: Any) -> Any:
        return CountingCoordinator()


class CountingCoordinator(TransactionalSpout.Coordinator):
    def is_ready(self) -> bool:
        ASKED.append("ready")
        return READY.pop(0) if READY else True

    def initialize_transaction(self, txid: int, prev_metadata: Any) -> Any:
        ASKED.append(("init", txid, prev_metadata))
        return (prev_metadata or 0) + 10

    def close(self) -> None:
        ASKED.append("close")


class Store(NamedMemoryStore):
    """A memory store that can be unreachable (``up``), fail its next reads or writes, and counts
    its closes."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.up = True
        self.fail_gets = 0
        self.fail_puts = 0
        self.fail_meta_puts = 0
        self.closed = 0

    def available(self) -> bool:
        return self.up

    def get(self, key: str) -> Any:
        if self.fail_gets:
            self.fail_gets -= 1
            raise StoreUnavailable("read timed out")
        return super().get(key)

    def put(self, key: str, value: Any) -> None:
        if self.fail_puts:
            self.fail_puts -= 1
            raise StoreUnavailable("write timed out")
        if self.fail_meta_puts and key.startswith(META_KEY):
            self.fail_meta_puts -= 1
            raise StoreUnavailable("metadata write timed out")
        super().put(key, value)

    def update(self, key: str, fn: Any) -> bool:
        if self.fail_puts:
            self.fail_puts -= 1
            raise StoreUnavailable("write timed out")
        return super().update(key, fn)

    def close(self) -> None:
        self.closed += 1


TX = "coord-edges"
OPENED: list[Store] = []
OPEN_FAILS: list[int] = [0]


def open_store(conf: Any, context: Any, name: str) -> Store:
    if OPEN_FAILS[0]:
        OPEN_FAILS[0] -= 1
        raise StoreUnavailable("cannot connect")
    store = Store(name)
    OPENED.append(store)
    return store


def reset(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh start for a test: no answers queued, nothing asked or opened, no stored state, and
    the coordinator opening its store through :func:`open_store`."""
    READY.clear()
    ASKED.clear()
    OPENED.clear()
    OPEN_FAILS[0] = 0
    NamedMemoryStore.forget(TX)
    monkeypatch.setattr("stormpy.transactional._coordinator.open_store", open_store)

class EmitRecorder:
    """A coordinator spout opened with ``conf`` and its emits recorded (``take``)."""

    def __init__(self, spout: CoordinatorSpout, conf: dict[str, Any]) -> None:
        self.spout = spout
        self.emitted: list[tuple[str, list[Any], Any]] = []
        self.spout.emit = self._emit  # type: ignore[method-assign]
        self.spout.open(conf, CONTEXT)  # type: ignore[arg-type]

    def _emit(self, values: list[Any], msg_id: Any = None, stream: str = "default") -> list[int]:
        self.emitted.append((stream, values, msg_id))
        return []

    def take(self) -> list[tuple[str, list[Any], Any]]:
        out, self.emitted = self.emitted, []
        return out


class Harness(EmitRecorder):
    def __init__(self, conf: dict[str, Any] | None = None, spout: type = Counting) -> None:
        super().__init__(CoordinatorSpout(TX, class_path(spout), {}),
                         {"transactional.store": "memory", **(conf or {})})
        if ASKED and ASKED[0][0] == "get_coordinator":
            assert ASKED.pop(0) == ("get_coordinator", "memory", CONTEXT)

    def batches(self) -> dict[int, tuple[TransactionAttempt, list[Any]]]:
        return {m.transaction_id: (m, v) for s, v, m in self.take() if s == BATCH_STREAM}

    def commit(self, attempt: TransactionAttempt) -> None:
        """Ack ``attempt``'s batch, then its commit (which must have been emitted)."""
        self.spout.ack(attempt)
        assert [(s, m) for s, _v, m in self.take()][:1] == [(COMMIT_STREAM, attempt)]
        self.spout.ack(attempt)
