"""Test components: feeder spouts, fixed-tuple (mock) spouts and capture bolts.

The handles (``FeederSpout``, ``Capture``) are what tests hold; pass them to the builder in place
of a class. The runtime builds the real component from the handle's registry key.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from stormpy.testing import registry
from stormpy.topology import Bolt, Spout, Stream, TopologyContext, Tuple
from stormpy.topology.tuple import DEFAULT_STREAM


class _AckLog:
    """Message ids acked and failed by a spout, readable from the test thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acked: list[Any] = []
        self.failed: list[Any] = []


class _FeederState(_AckLog):
    def __init__(self) -> None:
        super().__init__()
        self.queue: deque[tuple[list[Any], Any, str]] = deque()


class FeederSpout:
    """A spout the test feeds by hand: ``feeder.feed(values, msg_id=...)``.

    ``acked``/``failed`` list the message ids the topology acked or failed (copies).
    """

    def __init__(self, fields: Iterable[str], streams: Mapping[str, Iterable[str]] | None = None):
        self._state = _FeederState()
        self.key = registry.register(self._state)
        self.fields = list(fields)
        self.streams = {k: list(v) for k, v in (streams or {}).items()}

    @property
    def component_class(self) -> type[Spout]:
        return FeederSpoutComponent

    @property
    def component_kwargs(self) -> dict[str, Any]:
        return {"key": self.key, "fields": self.fields, "streams": self.streams}

    def feed(self, values: Sequence[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM) -> None:
        self._state.queue.append((list(values), msg_id, stream))

    def feed_many(self, rows: Iterable[Sequence[Any]], with_ids: bool = True) -> None:
        """Feed each row; with ``with_ids`` its position becomes its message id."""
        for i, row in enumerate(rows):
            self.feed(row, msg_id=i if with_ids else None)

    @property
    def pending_feed(self) -> int:
        return len(self._state.queue)

    @property
    def acked(self) -> list[Any]:
        with self._state.lock:
            return list(self._state.acked)

    @property
    def failed(self) -> list[Any]:
        with self._state.lock:
            return list(self._state.failed)


class FeederSpoutComponent(Spout):
    """Runtime side of ``FeederSpout``."""

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        out = {DEFAULT_STREAM: Stream(kwargs["fields"])}
        for name, fields in (kwargs.get("streams") or {}).items():
            out[name] = Stream(fields, name=name)
        return out

    def __init__(self, key: str, fields: list[str], streams: dict[str, list[str]] | None = None):
        self.key = key

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.state: _FeederState = registry.lookup(self.key)

    def next_tuple(self) -> None:
        try:
            values, msg_id, stream = self.state.queue.popleft()
        except IndexError:
            return
        self.emit(values, msg_id=msg_id, stream=stream)

    def ack(self, msg_id: Any) -> None:
        with self.state.lock:
            self.state.acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        with self.state.lock:
            self.state.failed.append(msg_id)


class FixedTupleSpout(Spout):
    """Emits a fixed list of tuples once, each with its index as message id (Storm's mock
    source); acks and fails go to the registry entry ``key`` (an ``_AckLog``) when given."""

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        return {kwargs.get("stream", DEFAULT_STREAM): Stream(kwargs["fields"],
                                                             name=kwargs.get("stream",
                                                                             DEFAULT_STREAM))}

    def __init__(self, tuples: list[list[Any]], fields: list[str], stream: str = DEFAULT_STREAM,
                 key: str | None = None) -> None:
        self.tuples = tuples
        self.stream = stream
        self.key = key
        self.i = 0

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.log: _AckLog | None = registry.lookup(self.key) if self.key else None
        n = len(context.component_tasks)
        idx = context.task_index
        self.mine = [(i, t) for i, t in enumerate(self.tuples) if i % n == idx]

    def next_tuple(self) -> None:
        if self.i < len(self.mine):
            msg_id, values = self.mine[self.i]
            self.i += 1
            self.emit(values, msg_id=msg_id, stream=self.stream)

    def ack(self, msg_id: Any) -> None:
        if self.log:
            with self.log.lock:
                self.log.acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        if self.log:
            with self.log.lock:
                self.log.failed.append(msg_id)


class Capture:
    """A bolt handle that records every tuple it receives and acks it (unless built with
    ``ack=False``): ``capture.tuples``, ``capture.values``, ``capture.by_task``."""

    def __init__(self, ack: bool = True) -> None:
        self._lock = threading.Lock()
        self._tuples: list[Tuple] = []
        self._tasks: list[int] = []
        self.ack = ack
        self.key = registry.register(self)

    @property
    def component_class(self) -> type[Bolt]:
        return CaptureBolt

    @property
    def component_kwargs(self) -> dict[str, Any]:
        return {"key": self.key}

    def add(self, task: int, tup: Tuple) -> None:
        with self._lock:
            self._tuples.append(tup)
            self._tasks.append(task)

    @property
    def by_task(self) -> dict[int, list[list[Any]]]:
        """Receiving task id → values it received, in order."""
        with self._lock:
            out: dict[int, list[list[Any]]] = {}
            for task, tup in zip(self._tasks, self._tuples):
                out.setdefault(task, []).append(tup.values)
            return out

    @property
    def tuples(self) -> list[Tuple]:
        with self._lock:
            return list(self._tuples)

    @property
    def values(self) -> list[list[Any]]:
        return [t.values for t in self.tuples]


class CaptureBolt(Bolt):
    """Runtime side of ``Capture``."""

    def __init__(self, key: str) -> None:
        self.key = key

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.capture: Capture = registry.lookup(self.key)
        self.task = context.task_id

    def execute(self, tup: Tuple) -> None:
        self.capture.add(self.task, tup)
        if self.capture.ack:
            self.ack(tup)
