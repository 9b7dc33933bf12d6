"""pystorm components in-process: no subprocess, no serialisation.

``PystormBolt`` / ``PystormSpout`` build the user's pystorm class (a ``Bolt``, ``BatchingBolt``,
``TicklessBatchingBolt``, ``Spout`` or ``ReliableSpout`` subclass, streamparse's included) in
the task and run pystorm's own code for everything but the pipe: the instance's
``send_message`` is the executor's collector (``emit`` → ``emit``/``emit_direct`` with the anchors
its ids name, ``ack``/``fail`` → the input tuple's, ``log`` → the component's logger at the
multilang level, ``error`` → ``report_error``, ``metrics`` → a task metric), and its
``read_command`` / ``read_task_ids`` return the input tuple or command and the emit's task ids.
So pystorm's semantics hold as they are: auto-anchoring to the current tuple, auto-ack after
``process``, auto-fail and ``raise_exception`` on an exception, ``Tuple(id, component, stream,
task, values)`` (values as the namedtuple of the source stream's fields), batching bolts'
``group_key``, ``ticks_between_batches`` and ``process_batch``.

Differences, all forced by running in the worker: an exception a pystorm component raises is
handled as pystorm's ``run`` handles it (error reported, tuples failed), then, where pystorm would
exit the process (``exit_on_exception``, the default), the instance is rebuilt and initialized
again instead, its unacked inputs failed; a ``TicklessBatchingBolt`` processes its batches on
tick tuples every ``secs_between_batches`` (the component's tick frequency) on the executor loop
rather than on a batcher thread; the logging set-up of pystorm's ``_setup_component`` (a handler
on the root logger writing to stdout) is not installed: ``self.logger`` is a plain logger.
"""

from __future__ import annotations

import io
import itertools
import logging
import re
import threading
from collections import namedtuple
from collections.abc import Mapping
from typing import Any

from stormpy.config import setting
from stormpy.multilang._protocol import LOG_LEVELS, handshake
from stormpy.multilang._shell import ShellComponentError, declared_outputs
from stormpy.topology._component import Bolt, Spout
from stormpy.topology._context import TopologyContext
from stormpy.topology._imports import import_object
from stormpy.topology._streams import Stream
from stormpy.topology._tuple import DEFAULT_STREAM, Tuple

__all__ = ["PystormBolt", "PystormSpout", "TICK_KEY", "require_pystorm"]

TICK_KEY = "topology.tick.tuple.freq.secs"
_IDENTIFIER = re.compile(r"\W|^(?=\d)")


def require_pystorm() -> Any:
    """The pystorm package; ImportError saying how to install it."""
    try:
        import pystorm
    except ImportError as exc:  # pragma: no cover - the extra is installed in tests
        raise ImportError("pystorm components need the pystorm package: pip install "
                          "'stormpy[multilang]'") from exc
    return pystorm


def _instance(cls: Any) -> Any:
    """The user's component, built without pystorm's process set-up (no signal handler: the
    worker's loop is not the main thread; no batcher thread for TicklessBatchingBolt)."""
    pystorm = require_pystorm()
    # streams of its own: pystorm wraps them in text wrappers that close them when collected
    streams = {"input_stream": io.BytesIO(), "output_stream": io.BytesIO(), "rdb_signal": None}
    if issubclass(cls, pystorm.TicklessBatchingBolt):
        inst = cls.__new__(cls)
        pystorm.BatchingBolt.__init__(inst, **streams)
        inst.exc_info = None
        inst._batch_lock = threading.RLock()
        return inst
    return cls(**streams)


class _Adapter:
    """What the bolt and spout adapters share: the instance and its ``send_message``."""

    _inst: Any

    def _setup(self, context: TopologyContext, path: str) -> None:
        """Build the instance of ``path`` for ``context`` (its conf is the handshake's: the
        topology's, the values JSON can carry)."""
        self._cls = import_object(path)
        self._context = context
        self._name = f"{context.component_id}:{context.task_id}"
        self._log = logging.getLogger(f"stormpy.multilang.{context.component_id}")
        doc = handshake(context, "")
        self._storm_conf, self._storm_context = doc["conf"], doc["context"]
        self._command: Any = None
        self._task_ids: Any = None
        self._metric_values: dict[str, Any] = {}
        self._build()

    def _build(self) -> None:
        inst = _instance(self._cls)
        inst.send_message = self._on_message
        inst.read_command = self._read_command
        inst.read_task_ids = self._read_task_ids
        conf, ctx = self._storm_conf, self._storm_context
        inst.topology_name = setting(conf, "topology.name") or ""
        inst.task_id = ctx["taskid"]
        inst.component_name = ctx["componentid"]
        inst.debug = setting(conf, "topology.debug")
        inst.storm_conf = conf
        inst.context = ctx
        inst.logger = logging.getLogger(f"pystorm.component.{inst.component_name}")
        types = getattr(inst, "_source_tuple_types", None)
        if types is not None:
            for source, streams in ctx["source->stream->fields"].items():
                for stream, fields in streams.items():
                    name = (_IDENTIFIER.sub("_", source.title()) + _IDENTIFIER.sub("_", stream.title())
                            + "Tuple")
                    types[source][stream] = namedtuple(name, fields)
        self._inst = inst
        self._fast_paths(inst)
        inst.initialize(conf, ctx)

    def _fast_paths(self, inst: Any) -> None:
        """Bind shortcuts for pystorm methods the class does not override (the bolt's)."""

    def _read_command(self) -> Any:
        return self._command

    def _read_task_ids(self) -> Any:
        return self._task_ids

    def _run(self, command: Any) -> None:
        """pystorm's loop body on one command, and its exception handling."""
        self._command = command
        inst = self._inst
        try:
            inst._run()
        except Exception as exc:
            self._run_failed(inst, exc)

    def _run_failed(self, inst: Any, exc: Exception) -> None:
        """What pystorm does when a command or a batch raised ``exc``: the component's
        ``_handle_run_exception`` (an error of that is logged, not raised), then, where pystorm
        would exit (``exit_on_exception``), the component is rebuilt."""
        try:
            inst._handle_run_exception(exc)
        except Exception as again:
            self._log.error("%s: handling %r failed: %r", self._name, exc, again)
        if inst.exit_on_exception:
            self._restart(exc)

    def _restart(self, exc: BaseException) -> None:
        self._log.warning("%s: rebuilding the pystorm component after %r (pystorm would exit)",
                          self._name, exc)
        self._dropped()
        self._build()

    def _dropped(self) -> None:
        """Forget what the old instance held."""

    def _emit(self, msg: Mapping[str, Any], anchors: Any) -> None:
        raise NotImplementedError

    def _on_message(self, msg: Any) -> None:
        command = msg.get("command") if isinstance(msg, dict) else None
        if command == "emit":
            self._emit(msg, msg.get("anchors"))
        elif command == "ack" or command == "fail":
            self._ack_fail(command, msg.get("id"))
        elif command == "log":
            level = msg.get("level", 2)
            self._log.log(LOG_LEVELS.get(level, logging.INFO), "%s: %s", self._name, msg.get("msg"))
        elif command == "error":
            self.report_error(ShellComponentError(  # type: ignore[attr-defined]
                f"pystorm component {self._name}: {msg.get('msg')}"))
        elif command == "metrics":
            name = msg.get("name")
            if isinstance(name, str) and name:
                if name not in self._metric_values:
                    self._context.register_metric(name, lambda: self._metric_values[name])
                self._metric_values[name] = msg.get("params")
        elif command != "sync":
            self.report_error(ShellComponentError(  # type: ignore[attr-defined]
                f"pystorm component {self._name} sent an unknown message {msg!r:.200}"))

    def _ack_fail(self, command: str, tup_id: Any) -> None:
        raise NotImplementedError


def _streams(kwargs: Mapping[str, Any], owner: type) -> dict[str, Stream]:
    return declared_outputs(owner, kwargs)


class PystormBolt(_Adapter, Bolt):
    """Runs the pystorm bolt ``component`` (its import path) in the task. Passed to the builder
    through ``pystorm_component``."""

    outputs = None

    def __init__(self, component: str, outputs: Any = None, tick_secs: float | None = None) -> None:
        self._component_path = component

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        return _streams(kwargs, cls)

    @classmethod
    def declare_config(cls, kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
        tick = kwargs.get("tick_secs")
        return {TICK_KEY: tick} if tick else {}

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self._inputs: dict[str, Tuple] = {}
        self._ids = itertools.count(1)
        self._ptuple = require_pystorm().Tuple
        self._anchor_cache: list[Any] = [None, None]
        self._setup(context, self._component_path)
        self._tickless = isinstance(self._inst, require_pystorm().TicklessBatchingBolt)

    def _fast_paths(self, inst: Any) -> None:
        """Where the class keeps pystorm's own ``read_tuple``, ``emit``, ``ack`` and ``fail``,
        bind equivalents that skip building and decoding the command maps (the same checks,
        the same results; an anchor or id that is unknown takes the general path and its
        error)."""
        pystorm = require_pystorm()
        cls = type(inst)
        base = pystorm.Bolt
        ptuple = pystorm.Tuple
        inputs_of = self
        self._fast_read = cls.read_tuple is base.read_tuple
        if self._fast_read:
            inst.read_tuple = self._read_tuple
        if cls.emit is base.emit or cls.emit is pystorm.BatchingBolt.emit:
            batching = cls.emit is pystorm.BatchingBolt.emit
            general = inst.emit
            emit, emit_direct = self.emit, self.emit_direct

            # the anchors last mapped and their tuples; an ack or fail forgets them, so an
            # emit anchored to a tuple acked since then takes the general path and its error
            cache = self._anchor_cache

            def fast_emit(tup: Any, stream: Any = None, anchors: Any = None,
                          direct_task: Any = None, need_task_ids: bool = False) -> Any:
                if type(tup) is not list:
                    if not isinstance(tup, tuple):
                        raise TypeError("All Tuples must be either lists or tuples, received "
                                        f"{type(tup)!r} instead.")
                    tup = list(tup)
                if anchors is None:
                    anchors = inst._current_tups if inst.auto_anchor else ()
                if anchors is cache[0]:  # the same current tuple(s) as the previous emit
                    storm_anchors = cache[1]
                else:
                    inputs = inputs_of._inputs
                    try:
                        storm_anchors = [inputs[a.id if isinstance(a, ptuple) else a]
                                         for a in anchors]
                    except (KeyError, TypeError):
                        return general(tup, stream=stream, anchors=anchors,
                                       direct_task=direct_task, need_task_ids=need_task_ids)
                    cache[0], cache[1] = anchors, storm_anchors
                if direct_task is not None:
                    emit_direct(direct_task, tup, storm_anchors, stream or DEFAULT_STREAM)
                    tasks: Any = [direct_task]
                else:
                    tasks = emit(tup, storm_anchors, stream or DEFAULT_STREAM)
                return tasks if need_task_ids and not batching else None
            inst.emit = fast_emit
        for name, method in (("ack", self.ack), ("fail", self.fail)):
            if getattr(cls, name) is getattr(base, name):
                inst.__dict__[name] = self._fast_ack_fail(name, method, ptuple)

    def _fast_ack_fail(self, name: str, method: Any, ptuple: Any) -> Any:
        cache = self._anchor_cache

        def ack_or_fail(tup: Any) -> None:
            cache[0] = None
            tup_id = tup.id if isinstance(tup, ptuple) else tup
            storm_tup = self._inputs.pop(tup_id, None) if isinstance(tup_id, str) else None
            if storm_tup is None:
                self._ack_fail(name, tup_id)
            else:
                method(storm_tup)
        return ack_or_fail

    def _read_tuple(self) -> Any:
        """pystorm's ``Bolt.read_tuple`` on the current input, without the command map."""
        inst = self._inst
        tid, tup = self._current_id, self._current
        val_type = inst._source_tuple_types[tup.component].get(tup.stream)
        values = tup.values
        return self._ptuple(tid, tup.component, tup.stream, tup.task,
                            tuple(values) if val_type is None else val_type(*values))

    def execute(self, tup: Tuple) -> None:
        tid = str(next(self._ids))
        self._inputs[tid] = tup
        if self._fast_read:
            self._current_id, self._current = tid, tup
            self._run(None)
        else:
            self._run({"id": tid, "comp": tup.component, "stream": tup.stream, "task": tup.task,
                       "tuple": tup.values})
        if self._tickless and tup.is_tick():
            inst = self._inst
            with inst._batch_lock:
                self._run_batches()

    def _run_batches(self) -> None:
        inst = self._inst
        try:
            inst.process_batches()
        except Exception as exc:
            inst._current_tups = []
            self._run_failed(inst, exc)

    def _emit(self, msg: Mapping[str, Any], anchor_ids: Any) -> None:
        anchors = []
        for a in anchor_ids or ():
            tup = self._inputs.get(a) if isinstance(a, str) else None  # ids are strings
            if tup is None:
                self.report_error(ShellComponentError(
                    f"pystorm bolt {self._name} anchored an emit onto unknown tuple id {a!r}"))
                continue
            anchors.append(tup)
        values = msg["tuple"]
        stream = msg.get("stream") or DEFAULT_STREAM
        task = msg.get("task")
        if task is not None:
            self.emit_direct(task, values, anchors, stream)
            self._task_ids = [task]
        else:
            self._task_ids = self.emit(values, anchors, stream)

    def _ack_fail(self, command: str, tup_id: Any) -> None:
        self._anchor_cache[0] = None
        tup = self._inputs.pop(tup_id, None) if isinstance(tup_id, str) else None
        if tup is None:
            self.report_error(ShellComponentError(
                f"pystorm bolt {self._name}: {command} of unknown tuple id {tup_id!r} (never "
                "given, or already acked or failed)"))
        elif command == "ack":
            self.ack(tup)
        else:
            self.fail(tup)

    def _dropped(self) -> None:
        inputs, self._inputs = self._inputs, {}
        for tup in inputs.values():
            self.fail(tup)


class PystormSpout(_Adapter, Spout):
    """Runs the pystorm spout ``component`` (its import path) in the task."""

    outputs = None

    def __init__(self, component: str, outputs: Any = None) -> None:
        self._component_path = component

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        return _streams(kwargs, cls)

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self._setup(context, self._component_path)

    def next_tuple(self) -> None:
        self._run(_NEXT)

    def ack(self, msg_id: Any) -> None:
        self._run({"command": "ack", "id": msg_id})

    def fail(self, msg_id: Any) -> None:
        self._run({"command": "fail", "id": msg_id})

    def activate(self) -> None:
        self._run({"command": "activate"})

    def deactivate(self) -> None:
        self._run({"command": "deactivate"})

    def _emit(self, msg: Mapping[str, Any], anchors: Any) -> None:
        values = msg["tuple"]
        stream = msg.get("stream") or DEFAULT_STREAM
        task = msg.get("task")
        if task is not None:
            self.emit_direct(task, values, msg.get("id"), stream)
            self._task_ids = [task]
        else:
            self._task_ids = self.emit(values, msg.get("id"), stream)

    def _ack_fail(self, command: str, tup_id: Any) -> None:
        self.report_error(ShellComponentError(
            f"pystorm spout {self._name} sent {command} (a bolt command)"))


_NEXT = {"command": "next"}
