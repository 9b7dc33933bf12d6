"""Test components: feeder spouts, fixed-tuple (mock) spouts and capture bolts.

The handles (``FeederSpout``, ``Capture``) are what tests hold; pass them to the builder in place
of a class. The runtime builds the real component from the handle's registry key.
"""

from __future__ import annotations

import threading
import uuid
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from stormpy.testing import _registry as registry
from stormpy.testing._acks import AckFailDelegate, AckFailMapTracker
from stormpy.topology import Bolt, Spout, Stream, TopologyContext, Tuple
from stormpy.topology._tuple import DEFAULT_STREAM


class _FeederState:
    def __init__(self) -> None:
        self.tracker = AckFailMapTracker()
        self.delegates: list[AckFailDelegate] = []
        self.queue: deque[tuple[list[Any], Any, str]] = deque()


class FeederSpout:
    """A spout the test feeds by hand: ``feeder.feed(values, msg_id=...)`` (Storm's
    ``FeederSpout``). Every feed is tracked: without a ``msg_id`` it gets a random one (a uuid hex
    string, returned by ``feed``), as in Storm, so acks, fails and tracked waits cover it.

    ``acked``/``failed`` list the message ids the topology acked or failed (copies);
    ``tracker`` is the :class:`AckFailMapTracker` holding them (``feeder.assert_acked(...)``);
    ``set_ack_fail_delegate`` tells another delegate too.
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

    def feed(self, values: Sequence[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM) -> Any:
        """Queue ``values`` for emission on ``stream``; returns the message id (``msg_id``, or
        the random one given when it is None)."""
        if msg_id is None:
            msg_id = uuid.uuid4().hex
        self._state.queue.append((list(values), msg_id, stream))
        return msg_id

    def feed_many(self, rows: Iterable[Sequence[Any]], with_ids: bool = True) -> list[Any]:
        """Feed each row; with ``with_ids`` its position becomes its message id, else a random
        id. Returns the ids."""
        return [self.feed(row, msg_id=i if with_ids else None) for i, row in enumerate(rows)]

    def set_ack_fail_delegate(self, delegate: AckFailDelegate) -> None:
        """Also tell ``delegate`` (an ``AckFailMapTracker`` or anything with ``ack(msg_id)`` and
        ``fail(msg_id)``) of every ack and fail (Storm's ``setAckFailDelegate``)."""
        self._state.delegates.append(delegate)

    @property
    def tracker(self) -> AckFailMapTracker:
        return self._state.tracker

    def assert_acked(self, *msg_ids: Any) -> None:
        """AssertionError naming the ids this feeder did not see acked."""
        self._state.tracker.assert_acked(*msg_ids)

    def assert_failed(self, *msg_ids: Any) -> None:
        """AssertionError naming the ids this feeder did not see failed."""
        self._state.tracker.assert_failed(*msg_ids)

    @property
    def pending_feed(self) -> int:
        return len(self._state.queue)

    @property
    def acked(self) -> list[Any]:
        return self._state.tracker.acked

    @property
    def failed(self) -> list[Any]:
        return self._state.tracker.failed


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
        self.state.tracker.ack(msg_id)
        for d in self.state.delegates:
            d.ack(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.state.tracker.fail(msg_id)
        for d in self.state.delegates:
            d.fail(msg_id)


class FixedTupleSpout(Spout):
    """Emits a fixed list of tuples once (Storm's mock source), spread over its tasks by
    position. ``tuples`` are on ``stream``, or, with ``streams`` (one stream name per tuple) and
    ``fields`` as a mapping stream → fields, each on its own stream. Message ids: the tuple's
    position (without ``streams``) or ``(stream, position within that stream)``. Acks and fails
    go to the registry entry ``key`` (an :class:`AckFailMapTracker`) when given."""

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        fields = kwargs["fields"]
        if isinstance(fields, Mapping):
            return {name: Stream(f, name=name) for name, f in fields.items()}
        name = kwargs.get("stream", DEFAULT_STREAM)
        return {name: Stream(fields, name=name)}

    def __init__(self, tuples: list[list[Any]], fields: list[str] | dict[str, list[str]],
                 stream: str = DEFAULT_STREAM, key: str | None = None,
                 streams: list[str] | None = None) -> None:
        if streams is not None and len(streams) != len(tuples):
            raise ValueError(f"FixedTupleSpout: {len(streams)} stream names for {len(tuples)} "
                             "tuples")
        self.tuples = tuples
        self.streams = streams if streams is not None else [stream] * len(tuples)
        self.positional = streams is None
        self.key = key
        self.i = 0

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.log: AckFailMapTracker | None = registry.lookup(self.key) if self.key else None
        n = len(context.component_tasks)
        idx = context.task_index
        counts: dict[str, int] = {}
        self.mine: list[tuple[Any, str, list[Any]]] = []
        for i, (values, stream) in enumerate(zip(self.tuples, self.streams)):
            pos = counts.get(stream, 0)
            counts[stream] = pos + 1
            if i % n == idx:
                self.mine.append((i if self.positional else (stream, pos), stream, values))

    def next_tuple(self) -> None:
        if self.i < len(self.mine):
            msg_id, stream, values = self.mine[self.i]
            self.i += 1
            self.emit(values, msg_id=msg_id, stream=stream)

    def ack(self, msg_id: Any) -> None:
        if self.log:
            self.log.ack(msg_id)

    def fail(self, msg_id: Any) -> None:
        if self.log:
            self.log.fail(msg_id)


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
