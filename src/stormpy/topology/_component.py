"""Spout, Bolt, BasicBolt and CustomStreamGrouping: the runtime plug-ins users subclass.

A component is described in a topology by its class (imported by path on every worker) and by
keyword arguments that msgpack can carry; the runtime constructs one instance per task with those
arguments, then calls ``open`` (spouts) or ``prepare`` (bolts) on the worker's executor loop.

While a component runs, the runtime binds these methods to the task's collector:
``emit``, ``emit_many``, ``emit_direct``, ``ack``, ``ack_many``, ``fail``, ``reset_timeout``,
``report_error``,
``run_in_background``, ``call_soon_threadsafe``. Calling them before ``open``/``prepare`` raises
RuntimeError. The last two are the task's off-loop seam (``context.off_loop``'s ``submit`` and
``call_soon``; see ``stormpy.topology._offloop``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from stormpy.topology._columns import column_lists, rows_of
from stormpy.topology._streams import Stream, normalize_outputs
from stormpy.topology._tuple import DEFAULT_STREAM

if TYPE_CHECKING:
    from stormpy.topology._context import TopologyContext
    from stormpy.topology._spec import TopologySpec
    from stormpy.topology._tuple import Tuple


def _unbound(name: str) -> Callable[..., Any]:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{type(self).__name__}.{name}() can only be called once the component "
                           "runs (after open/prepare)")
    method.__name__ = name
    return method


def require_entry_point(cls: type, base: type, names: Sequence[str], signature: str,
                        mistaken: Sequence[str] = ()) -> None:
    """Contract: returns when ``cls`` defines (itself or through a class between it and ``base``)
    at least one of ``names`` that ``base`` does not already define as is; otherwise raises
    ValueError saying which method is missing (``signature``, as the user writes it) and, when
    one of the class's own methods is spelt close to it or is one of ``mistaken`` (a name
    users write for it, such as Storm's ``execute`` on a basic bolt), naming that one. A bolt
    without its entry point would run and do nothing with its input (never acking it, so every
    tree through it times out and replays), which Storm's interfaces refuse at compile time."""
    if any(getattr(cls, name, None) is not getattr(base, name, None) for name in names):
        return
    own = sorted({attr for klass in cls.__mro__ if klass not in base.__mro__
                  for attr, value in vars(klass).items()
                  if callable(value) and not attr.startswith("_")})
    close = [name for name in mistaken if name in own] or \
        difflib.get_close_matches(names[0], own, n=1, cutoff=0.6)
    hint = f"; rename {close[0]}() to {names[0]}()?" if close else ""
    raise ValueError(f"{cls.__qualname__} defines no {signature}: as a {base.__name__} it would "
                     f"do nothing with its input{hint}")


def check_entry_point(cls: type) -> None:
    """The entry point every bolt class must define (:func:`require_entry_point`): ``process``
    for a :class:`BasicBolt`, ``execute`` (or its batch or columnar form, ``execute_batch`` /
    ``execute_columns``) for any other bolt. (A spout without ``next_tuple`` emits nothing but
    loses nothing either; it is not refused.)"""
    if issubclass(cls, BasicBolt):
        require_entry_point(cls, BasicBolt, ("process",), "process(tuple)", mistaken=("execute",))
    elif issubclass(cls, Bolt):
        require_entry_point(cls, Bolt, ("execute", "execute_batch", "execute_columns"),
                            "execute(tuple)", mistaken=("process",))


class Component:
    """Common base of spouts and bolts.

    Class attributes:
      ``outputs`` — the declared output streams: a list of field names for the default stream,
      ``Stream`` objects, or ``{stream: [fields]}``. Override ``declare_outputs`` when the streams
      depend on constructor arguments.
      ``component_config`` — default per-component config (for example
      ``{"topology.tick.tuple.freq.secs": 5}``); config given to the builder wins.
    """

    outputs: ClassVar[Any] = ()
    component_config: ClassVar[Mapping[str, Any]] = {}

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        """The streams this component emits, given its constructor keyword arguments."""
        return normalize_outputs(cls.outputs, cls.__qualname__)

    @classmethod
    def declare_config(cls, kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
        """Default per-component config given the constructor keyword arguments (for example a
        tick period derived from a batch interval); config passed to the builder wins."""
        return cls.component_config

    @classmethod
    def finish_topology(cls, spec: TopologySpec, component_id: str) -> None:
        """Called by ``TopologyBuilder.create_topology`` for every component added with this
        class, on the topology about to be returned, before it is validated: a component that
        needs machinery around it adds it here (stateful bolts add the checkpoint spout and wrap
        the bolts, as Storm's builder does). The default does nothing."""

    # Bound by the runtime; these placeholders give a clear error when called too early.
    report_error = _unbound("report_error")
    run_in_background = _unbound("run_in_background")
    call_soon_threadsafe = _unbound("call_soon_threadsafe")


class Spout(Component):
    """A source of tuples.

    ``next_tuple`` is called repeatedly on the executor loop while the topology is active and
    the task may emit (``topology.max.spout.pending`` not reached, no backpressure). It must not
    block: emit what is ready and return. ``ack``/``fail`` are called exactly once per message id
    passed to ``emit``.

    ``emit_many(values_list, msg_ids=None, stream=...)`` emits several tuples in one call (the
    same as ``emit`` for each, with ``msg_ids[i]`` as the message id of ``values_list[i]``); a
    ``next_tuple`` that has a batch ready emits it that way. ``topology.max.spout.pending`` is
    checked before each ``next_tuple`` call, so a batch may go past it by its own size.

    ``emit_batch(values_list, msg_ids=None, stream=...)`` emits several tuples as ONE tracked
    unit: one tuple tree (one root, one pending entry, one acker entry) for the whole list, with
    one message id per values. Towards bolts that all define ``execute_columns`` each target task
    gets the batch as one ``ColumnBatch``; other bolts get a tuple per values, all in that tree.
    When the tree completes, ``ack_many(msg_ids)`` is called if the spout defines it, else
    ``ack`` of each id; when any part of it fails or it times out, ``fail_many(msg_ids)`` or
    ``fail`` of each id: the replay unit is the batch (a record of it that failed makes every
    record of it fail). ``topology.max.spout.pending`` counts message ids (records), batched or
    not, and so do the spout's stats (emitted, acked, failed, complete latency) and task hooks.
    Without ``msg_ids`` the batch is untracked; without acker tasks the ids are acked at the end
    of the round. ``emit_many`` keeps its own contract (every message id tracked on its own).
    ``ack_many``/``fail_many`` are not defined here: define them to take a batch's ids at once.
    """

    emit = _unbound("emit")
    emit_many = _unbound("emit_many")
    emit_direct = _unbound("emit_direct")
    emit_batch = _unbound("emit_batch")

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        """Called once on the executor loop before the first ``next_tuple``."""

    def next_tuple(self) -> None:
        """Emit zero or more tuples with ``self.emit(values, msg_id=..., stream=...)``."""

    def ack(self, msg_id: Any) -> None:
        """The tuple tree of ``msg_id`` was fully processed."""

    def fail(self, msg_id: Any) -> None:
        """The tuple tree of ``msg_id`` failed or timed out; replay it if it must not be lost."""

    def activate(self) -> None:
        """The topology was activated (also called once after ``open`` when it starts active)."""

    def deactivate(self) -> None:
        """The topology was deactivated; ``next_tuple`` is not called until it is activated."""

    def close(self) -> None:
        """Called at shutdown; not guaranteed when the process is killed."""


class Bolt(Component):
    """A processing step. ``execute`` is called for every input tuple on the executor loop.

    The bolt must ``ack`` or ``fail`` every input tuple (tracked trees stay pending otherwise);
    ``emit(values, anchors=tup)`` anchors new tuples to inputs so their processing is tracked.

    The batch form: a bolt that defines ``execute_batch(tuples)`` is handed, instead of one
    ``execute`` call per tuple, a list of every tuple ready for it in a loop round (in arrival
    order, tick tuples included; at most 1024). Each tuple must still be acked or failed; failing
    one fails only its own trees. ``emit_many(values_list, anchors=None, stream=...)`` emits
    several tuples with the same anchors in one call, ``ack_many(tuples)`` acks several; both do
    exactly what ``emit``/``ack`` would do for each, with less overhead per tuple.

    The columnar form: a bolt that defines ``execute_columns(batch)`` receives, from a bolt's
    ``emit_many`` on a stream all of whose subscribers are columnar bolts, ONE
    ``ColumnBatch`` per ``emit_many`` call and target task (after grouping) instead of a tuple
    per values: its ``rows``, and its columns on demand (``batch.column("word")``). A batch is a
    single node of the tuple tree, shared by all its tuples: ack it (``self.ack(batch)``) or fail
    it (``self.fail(batch)``) as a whole; tuples emitted anchored to it (``emit``/``emit_many``
    with ``anchors=batch``) join every tree it is in, and failing it fails (and lets the spouts
    replay) every spout tuple it belongs to, so replay granularity is the batch. Counters count
    its tuples. Single tuples still arrive through ``execute`` (or ``execute_batch``): tick
    tuples, tuples from spouts, from ``emit``/``emit_direct``, and on streams with other
    subscribers. Not on ``BasicBolt``.

    ``emit_columns(columns, anchors=None, stream=...)`` is ``emit_many`` with the tuples given as
    columns: one list of values per declared field, all of one length (``[words]`` for a stream
    with the one field ``word``). Towards columnar bolts it builds no list per tuple: grouping
    splits the columns per target task in one pass (fields grouping over its key column; one
    target task or ``all`` grouping: the columns whole) and each task gets one ``ColumnBatch``
    holding its share. Otherwise it is ``emit_many`` of the rows. The lists are handed over: do
    not change them after the call.
    """

    emit = _unbound("emit")
    emit_many = _unbound("emit_many")
    emit_direct = _unbound("emit_direct")
    ack = _unbound("ack")
    ack_many = _unbound("ack_many")
    fail = _unbound("fail")
    reset_timeout = _unbound("reset_timeout")

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        """Called once on the executor loop before the first ``execute``."""

    def execute(self, tup: Tuple) -> None:
        """Process one input tuple."""

    def emit_columns(self, columns: Any, anchors: Any = None, stream: str = DEFAULT_STREAM) -> None:
        """``emit_many`` of the rows of ``columns`` (see the class doc); replaced by the
        runtime's columnar form where the stream's subscribers take columns."""
        cols, n = column_lists(columns, stream)
        self.emit_many(rows_of(cols, n), anchors, stream)

    def cleanup(self) -> None:
        """Called at shutdown; not guaranteed when the process is killed."""


class BasicBolt(Bolt):
    """A bolt whose emits are anchored to the current input, which is acked when ``process``
    returns and failed when it raises ``FailedException``. It has no batch form
    (``execute_batch``).

    Any other exception is an error of the component, as in Storm.
    """

    def process(self, tup: Tuple) -> None:
        """Process one input tuple; ``self.emit(values)`` anchors to it automatically."""


class CustomStreamGrouping:
    """Base class for user groupings.

    ``prepare`` is called once per emitting task with the subscribing component's task ids;
    ``choose_tasks`` returns the target task ids (a subset of those) for one tuple's values.
    The instance is built with the keyword arguments given to ``custom_grouping``.
    """

    def prepare(self, context: TopologyContext, stream: str, target_tasks: Sequence[int]) -> None:
        self.target_tasks = list(target_tasks)

    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> list[int]:
        raise NotImplementedError
