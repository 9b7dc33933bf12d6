"""Unit-testing one component without a topology: :func:`test_tuple` builds the tuple a bolt
receives (Storm's ``Testing.testTuple``) and :class:`RecordingCollector` stands in for the
runtime, recording what the component emits, acks, fails and reports::

    collector = RecordingCollector()
    bolt = collector.prepare(SplitSentence())
    bolt.execute(test_tuple(["the cow"], fields=["sentence"]))
    assert collector.emitted_values() == [["the"], ["cow"]]
    assert collector.acked == [...]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stormpy.state._memory import MemoryBackend
from stormpy.topology._component import BasicBolt, Component, Spout
from stormpy.topology._context import TopologyContext
from stormpy.topology._errors import EmitError, FailedException
from stormpy.topology._fields import Fields
from stormpy.topology._imports import class_path
from stormpy.topology._layout import Executor, TaskLayout
from stormpy.topology._spec import BOLT, SPOUT, ComponentSpec, TopologySpec
from stormpy.topology._streams import Stream
from stormpy.topology._tuple import DEFAULT_STREAM, Tuple
from stormpy.worker.values import check_values

__all__ = ["Emitted", "RecordingCollector", "test_tuple"]


def test_tuple(values: Sequence[Any], component: str = "component", stream: str = DEFAULT_STREAM,
               task: int = 1, fields: Sequence[str] | None = None) -> Tuple:
    """A tuple as a bolt would receive it from ``component``'s task ``task`` on ``stream``, with
    ``fields`` (default ``field1``, ``field2``... one per value, as Storm's ``testTuple``).
    ValueError when ``fields`` and ``values`` differ in length. Untracked (no anchors)."""
    values = list(values)
    names = list(fields) if fields is not None else [f"field{i + 1}" for i in range(len(values))]
    if len(names) != len(values):
        raise ValueError(f"test_tuple: {len(values)} values for fields {names}")
    return Tuple(values, stream, task, component, Fields(names))


test_tuple.__test__ = False  # type: ignore[attr-defined]  # a factory, not a pytest test


@dataclass
class Emitted:
    """One emit: its values and stream, the input tuples it was anchored to (bolts), the
    message id (spouts) and the target task of an ``emit_direct`` (else None)."""

    values: list[Any]
    stream: str = DEFAULT_STREAM
    anchors: list[Tuple] = field(default_factory=list)
    msg_id: Any = None
    task: int | None = None


class RecordingCollector:
    """Stands in for the runtime's collector on one component instance (:meth:`bind` or
    :meth:`prepare`): ``emit``/``emit_direct`` are recorded in ``emitted`` (anchors as given,
    checked against the declared streams), ``ack``/``fail``/``reset_timeout`` record the tuple,
    ``report_error`` records the error, ``run_in_background`` runs the job at once and then its
    ``on_done``, ``call_soon_threadsafe`` runs the callback at once. A ``BasicBolt``'s ``execute``
    anchors emits to the input and acks it (fails it on ``FailedException``), as the runtime."""

    def __init__(self) -> None:
        self.emitted: list[Emitted] = []
        self.acked: list[Tuple] = []
        self.failed: list[Tuple] = []
        self.timeouts_reset: list[Tuple] = []
        self.errors: list[Any] = []
        self._streams: dict[str, Stream] | None = None
        self._name = "component"

    # -- reading ------------------------------------------------------------------------------
    def emitted_values(self, stream: str = DEFAULT_STREAM) -> list[list[Any]]:
        """Values of every emit on ``stream``, in order."""
        return [e.values for e in self.emitted if e.stream == stream]

    def clear(self) -> None:
        """Forget everything recorded."""
        for part in (self.emitted, self.acked, self.failed, self.timeouts_reset, self.errors):
            part.clear()

    # -- binding ------------------------------------------------------------------------------
    def bind(self, component: Component, *, kwargs: Mapping[str, Any] | None = None,
             component_id: str = "component") -> Any:
        """Bind this collector's methods onto ``component`` and return it. ``kwargs`` are the
        constructor arguments the component's ``declare_outputs`` needs to name its streams
        (emits are not checked when they cannot be named)."""
        self._name = component_id
        try:
            self._streams = type(component).declare_outputs(dict(kwargs or {}))
        except (KeyError, TypeError, ValueError):
            self._streams = None
        obj: Any = component
        obj.report_error = self.errors.append
        obj.run_in_background = self._run_in_background
        obj.call_soon_threadsafe = lambda fn: fn()
        if isinstance(component, Spout):
            obj.emit = self._spout_emit
            obj.emit_many = self._spout_emit_many
            obj.emit_direct = self._spout_emit_direct
            obj.emit_batch = self._spout_emit_batch
            return component
        obj.emit = self._emit
        obj.emit_many = self._emit_many
        obj.emit_direct = self._emit_direct
        obj.ack = self.acked.append
        obj.ack_many = self.acked.extend
        obj.fail = self.failed.append
        obj.reset_timeout = self.timeouts_reset.append
        if isinstance(component, BasicBolt):
            self._bind_basic(obj)
        return component

    def prepare(self, component: Component, conf: Mapping[str, Any] | None = None, *,
                kwargs: Mapping[str, Any] | None = None, component_id: str = "component",
                task: int = 1) -> Any:
        """:meth:`bind`, then call ``prepare`` (bolts) or ``open`` (spouts) with ``conf`` and a
        context of a one-task topology holding only this component (``component_id``,
        ``task``). Returns the component."""
        self.bind(component, kwargs=kwargs, component_id=component_id)
        context = self.context(component, component_id=component_id, task=task)
        if isinstance(component, Spout):
            component.open(dict(conf or {}), context)
        else:
            component.prepare(dict(conf or {}), context)  # type: ignore[attr-defined]
        return component

    def context(self, component: Component, *, component_id: str = "component",
                task: int = 1) -> TopologyContext:
        """A context for ``component`` as the only task (``task``) of a one-component
        topology; its memory state store works."""
        kind = SPOUT if isinstance(component, Spout) else BOLT
        spec = TopologySpec({component_id: ComponentSpec(
            component_id, kind, class_path(type(component)), streams=dict(self._streams or {}))})
        layout = TaskLayout({component_id: [task]}, {task: component_id},
                            [Executor(component_id, task, task)])
        return TopologyContext("test-topology", spec, layout, task, [task], {},
                               state=MemoryBackend())

    # -- the collector ------------------------------------------------------------------------
    def _check(self, values: Any, stream: Any, direct: bool) -> None:
        check_values(values, self._name, stream)
        if self._streams is None:
            return
        declared = self._streams.get(stream)
        if declared is None:
            raise EmitError(f"component {self._name!r} emitted on undeclared stream {stream!r} "
                            f"(declared: {sorted(self._streams)})")
        if declared.direct != direct:
            raise EmitError(f"component {self._name!r}: stream {stream!r} is "
                            f"{'not ' if direct else ''}declared direct")
        if len(values) != len(declared.fields):
            raise EmitError(f"component {self._name!r}, stream {stream!r}: emitted {len(values)} "
                            f"values for fields {declared.fields.to_list()}")

    @staticmethod
    def _anchors(anchors: Any) -> list[Tuple]:
        if anchors is None:
            return []
        return [anchors] if isinstance(anchors, Tuple) else list(anchors)

    def _emit(self, values: Any, anchors: Any = None, stream: Any = DEFAULT_STREAM) -> list[int]:
        self._check(values, stream, False)
        self.emitted.append(Emitted(list(values), stream, self._anchors(anchors)))
        return []

    def _emit_direct(self, task: Any, values: Any, anchors: Any = None,
                     stream: Any = DEFAULT_STREAM) -> None:
        self._check(values, stream, True)
        self.emitted.append(Emitted(list(values), stream, self._anchors(anchors), task=task))

    def _spout_emit(self, values: Any, msg_id: Any = None,
                    stream: Any = DEFAULT_STREAM) -> list[int]:
        self._check(values, stream, False)
        self.emitted.append(Emitted(list(values), stream, msg_id=msg_id))
        return []

    def _emit_many(self, values_list: Any, anchors: Any = None,
                   stream: Any = DEFAULT_STREAM) -> None:
        values_list = list(values_list)
        for values in values_list:  # every one checked before any is recorded, as the runtime
            self._check(values, stream, False)
        for values in values_list:
            self.emitted.append(Emitted(list(values), stream, self._anchors(anchors)))

    def _spout_emit_many(self, values_list: Any, msg_ids: Any = None,
                         stream: Any = DEFAULT_STREAM) -> None:
        values_list = list(values_list)
        ids = list(msg_ids) if msg_ids is not None else [None] * len(values_list)
        if len(ids) != len(values_list):
            raise EmitError(f"component {self._name!r}, stream {stream!r}: emit_many got "
                            f"{len(ids)} message ids for {len(values_list)} tuples")
        for values in values_list:
            self._check(values, stream, False)
        for values, msg_id in zip(values_list, ids):
            self.emitted.append(Emitted(list(values), stream, msg_id=msg_id))

    def _spout_emit_batch(self, values_list: Any, msg_ids: Any = None,
                          stream: Any = DEFAULT_STREAM) -> list[list[int]]:
        """Recorded as ``emit_many`` records (one ``Emitted`` per values, with its id)."""
        values_list = list(values_list)
        self._spout_emit_many(values_list, msg_ids, stream)
        return [[] for _ in values_list]

    def _spout_emit_direct(self, task: Any, values: Any, msg_id: Any = None,
                           stream: Any = DEFAULT_STREAM) -> None:
        self._check(values, stream, True)
        self.emitted.append(Emitted(list(values), stream, msg_id=msg_id, task=task))

    def _run_in_background(self, fn: Callable[[], Any],
                           on_done: Callable[[Any, BaseException | None], None]) -> None:
        try:
            result = fn()
        except Exception as exc:  # noqa: BLE001 - handed to on_done, as the runtime does
            on_done(None, exc)
            return
        on_done(result, None)

    def _bind_basic(self, bolt: Any) -> None:
        current: list[Tuple] = []
        emit, emit_direct = self._emit, self._emit_direct

        def basic_emit(values: Any, anchors: Any = None, stream: Any = DEFAULT_STREAM) -> list[int]:
            return emit(values, anchors if anchors is not None else current[-1], stream)

        def basic_emit_direct(task: Any, values: Any, anchors: Any = None,
                              stream: Any = DEFAULT_STREAM) -> None:
            emit_direct(task, values, anchors if anchors is not None else current[-1], stream)

        def basic_emit_many(values_list: Any, anchors: Any = None,
                            stream: Any = DEFAULT_STREAM) -> None:
            self._emit_many(values_list, anchors if anchors is not None else current[-1], stream)

        def execute(tup: Tuple) -> None:
            current.append(tup)
            try:
                bolt.process(tup)
            except FailedException:
                self.failed.append(tup)
                return
            finally:
                current.pop()
            self.acked.append(tup)

        bolt.emit, bolt.emit_direct, bolt.execute = basic_emit, basic_emit_direct, execute
        bolt.emit_many = basic_emit_many
