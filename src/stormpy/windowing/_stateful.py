"""Stateful windowed bolts (Storm 2.x's ``BaseStatefulWindowedBolt`` with its two executors,
``StatefulWindowedBoltExecutor`` and ``PersistentWindowedBoltExecutor``).

Declaring::

    builder.set_bolt("sums", SumBolt.with_window(Count(100_000), Count(1000))
                     .with_persistence().with_max_events_in_memory(20_000))

:class:`StatefulWindowedBolt` is a :class:`~stormpy.windowing.WindowedBolt` with
``init_state(state)`` and the ``pre_prepare``/``pre_commit``/``pre_rollback`` hooks of a
:class:`~stormpy.state.StatefulBolt`. Its executor (:class:`StatefulWindowedBoltExecutor`, a
windowed bolt executor that is itself a stateful bolt) is wrapped by the builder in a
:class:`~stormpy.state._bolt.StatefulBoltExecutor`, which runs the checkpoint protocol, holds the
executor's acks until the checkpoint holding their effect commits and fails them on rollback.

Contract:

* Without persistence the window's events live in memory only; the user's state is checkpointed.
  Each input is acked once it left every window (as a windowed bolt) *and* the checkpoint after
  that committed; emits anchor to the window's tuples. A task that dies loses its window; the
  un-acked inputs time out and are replayed, so the message timeout must cover the window plus
  the checkpoint interval (checked when the task starts).
* With persistence (``with_persistence()``) the window's events and the manager's bookkeeping
  (triggers, watermark, tick time, the last window's departed events) are written into the task's
  :class:`~stormpy.state.KeyValueState` at each PREPARE, in partitions under their own keys
  (:mod:`stormpy.windowing._persistent`), and committed together with the user's map; at most
  ``max_events_in_memory`` events are held in memory. Each input is acked as soon as it is in the
  window, which takes effect when the next checkpoint commits; a rollback (or a restart) brings the
  window back to the last commit and fails the inputs since, which the spout replays. Emits are
  unanchored unless anchors are given (their inputs are acked long before the window ends). The
  message timeout only needs to exceed the checkpoint interval.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy.config import SettingError, message_timeout_secs, setting
from stormpy.state._kv import KeyValueState
from stormpy.state._settings import state_settings
from stormpy.state._wiring import add_checkpointing
from stormpy.topology._context import TopologyContext
from stormpy.topology._fields import Fields
from stormpy.topology._imports import import_object
from stormpy.topology._spec import MIN_MESSAGE_TIMEOUT_KEY, MIN_SPOUT_PENDING_KEY, TopologySpec
from stormpy.topology._streams import Stream
from stormpy.topology._tuple import Tuple
from stormpy.windowing._bolt import WindowedBolt, WindowedBoltExecutor, WindowedBoltSpec
from stormpy.windowing._config import WindowConfig, WindowConfigError
from stormpy.windowing._manager import Window, WindowManager
from stormpy.windowing._persistent import (
    META_KEY,
    EventCodec,
    EventKeys,
    PartitionedEvents,
    UserState,
    read_chunks,
    write_chunks,
)

__all__ = ["DEFAULT_MAX_EVENTS_IN_MEMORY", "StatefulWindowedBolt", "StatefulWindowedBoltExecutor",
           "StatefulWindowedBoltSpec"]

#: Storm's default for ``withMaxEventsInMemory``.
DEFAULT_MAX_EVENTS_IN_MEMORY = 1_000_000

#: The executor's keyword argument carrying the persistence settings.
PERSIST = "_persist"


class StatefulWindowedBolt(WindowedBolt):
    """Subclass, implement ``execute(window)`` and ``init_state(state)``; declare with
    :meth:`with_window` / :meth:`with_tumbling_window`, then optionally
    ``.with_persistence()`` and ``.with_max_events_in_memory(n)`` (see the module doc). Like
    every windowed bolt it does not ack or fail its inputs itself."""

    def init_state(self, state: KeyValueState) -> None:
        """Keep ``state`` (the last committed map); called once, before the first window."""

    def pre_prepare(self, txid: int) -> None:
        """Called before the state is prepared for checkpoint ``txid``."""

    def pre_commit(self, txid: int) -> None:
        """Called before the state is committed as ``txid``."""

    def pre_rollback(self) -> None:
        """Called before the state rolls back to the last committed checkpoint."""

    @classmethod
    def with_window(cls, length: Any, sliding_interval: Any | None = None
                    ) -> StatefulWindowedBoltSpec:
        return StatefulWindowedBoltSpec(cls, WindowConfig.sliding(length, sliding_interval))

    @classmethod
    def with_tumbling_window(cls, length: Any) -> StatefulWindowedBoltSpec:
        return StatefulWindowedBoltSpec(cls, WindowConfig.tumbling(length))


def _persistence(doc: Mapping[str, Any] | None) -> tuple[bool, int]:
    """(persistent, max events in memory) from the executor's ``_persist`` argument, checked."""
    doc = doc or {}
    persistent = bool(doc.get("persistent", False))
    max_events = doc.get("max_events")
    if max_events is not None:
        if not persistent:
            raise WindowConfigError("max events in memory",
                                    "only means something with with_persistence() (without it "
                                    "every window event is in memory)")
        if isinstance(max_events, bool) or not isinstance(max_events, int) or max_events < 1:
            raise WindowConfigError("max events in memory",
                                    f"must be a positive whole number, got {max_events!r}")
    return persistent, int(max_events or DEFAULT_MAX_EVENTS_IN_MEMORY)


class StatefulWindowedBoltSpec(WindowedBoltSpec):
    """What ``StatefulWindowedBolt.with_window`` returns; every ``with_*`` returns a new spec."""

    def __init__(self, bolt: type[WindowedBolt], config: WindowConfig,
                 persistent: bool = False, max_events: int | None = None) -> None:
        super().__init__(bolt, config)
        self.persistent = persistent
        self.max_events = max_events

    def _with(self, **changes: Any) -> StatefulWindowedBoltSpec:
        return StatefulWindowedBoltSpec(self.bolt, self.config.with_(**changes), self.persistent,
                                        self.max_events)

    def with_persistence(self) -> StatefulWindowedBoltSpec:
        """Keep the window's events in the state backend, checkpointed with the user's state
        (Storm's ``withPersistence``)."""
        return StatefulWindowedBoltSpec(self.bolt, self.config, True, self.max_events)

    def with_max_events_in_memory(self, n: int) -> StatefulWindowedBoltSpec:
        """Hold at most ``n`` of the window's events in memory (with persistence; default
        1,000,000, Storm's)."""
        return StatefulWindowedBoltSpec(self.bolt, self.config, self.persistent, n)

    @property
    def component_class(self) -> type[StatefulWindowedBoltExecutor]:
        return StatefulWindowedBoltExecutor

    @property
    def component_kwargs(self) -> dict[str, Any]:
        return {**super().component_kwargs,
                PERSIST: {"persistent": self.persistent, "max_events": self.max_events}}


def _split(kwargs: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, dict[str, Any]]:
    return kwargs.get(PERSIST), {k: v for k, v in kwargs.items() if k != PERSIST}


class StatefulWindowedBoltExecutor(WindowedBoltExecutor):
    """Runs a :class:`StatefulWindowedBolt` (built by its spec; not for direct use). A stateful
    bolt itself: the builder wraps it in the checkpointing executor."""

    stateful = True

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        persist, rest = _split(kwargs)
        _persistence(persist)
        bolt = rest.get("_bolt")
        streams = super().declare_outputs(rest)
        target = import_object(bolt) if isinstance(bolt, str) else bolt
        if not (isinstance(target, type) and issubclass(target, StatefulWindowedBolt)):
            raise WindowConfigError("StatefulWindowedBolt",
                                    f"{target!r} is not a StatefulWindowedBolt subclass")
        return streams

    @classmethod
    def declare_config(cls, kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
        persist, rest = _split(kwargs)
        conf = dict(super().declare_config(rest))
        if _persistence(persist)[0]:  # tuples are acked at checkpoints, not at expiry
            conf.pop(MIN_MESSAGE_TIMEOUT_KEY, None)
            conf.pop(MIN_SPOUT_PENDING_KEY, None)
        return conf

    @classmethod
    def finish_topology(cls, spec: TopologySpec, component_id: str) -> None:
        add_checkpointing(spec)

    def __init__(self, _window: Mapping[str, Any], _bolt: str, **kwargs: Any) -> None:
        persist, user = _split(kwargs)
        self.persistent, self.max_events = _persistence(persist)
        super().__init__(_window, _bolt, **user)
        self.kv: KeyValueState | None = None
        self.events: PartitionedEvents | None = None
        self._gone_saved: Any = None
        self._gone_chunks = 0

    # -- setup -----------------------------------------------------------------------------------
    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.context = context
        super().prepare(conf, context)
        context.register_metric("window-events", lambda: len(self.manager.events))
        context.register_metric("window-events-held", self.held_events)
        if self.persistent:
            context.register_metric("window-events-cached-peak",
                                    lambda: 0 if self.events is None else self.events.peak_held)
            context.register_metric("window-partition-loads",
                                    lambda: 0 if self.events is None else self.events.loads)

    def check_timeout(self, conf: Mapping[str, Any], me: str) -> None:
        if not setting(conf, "topology.enable.message.timeouts"):
            return
        timeout = message_timeout_secs(conf)
        interval = state_settings(conf).checkpoint_interval_secs
        if self.persistent:
            if interval >= timeout:  # Storm's PersistentWindowedBoltExecutor.validate
                raise SettingError("topology.state.checkpoint.interval.ms",
                                   f"persistent windowed bolt {me!r}: the checkpoint interval "
                                   f"({interval * 1000:g} ms) must be shorter than "
                                   f"topology.message.timeout.secs ({timeout:g}): inputs are "
                                   "acked when a checkpoint commits")
            return
        need = self.cfg.required_timeout_secs()
        if need and timeout < need + interval:
            raise SettingError("topology.message.timeout.secs",
                               f"stateful windowed bolt {me!r} needs it >= {need + interval:g} "
                               f"(the window, {need:g} s, plus the checkpoint interval: inputs "
                               f"are acked at the checkpoint after they expired), the topology "
                               f"sets {timeout:g}")

    def _fields(self, component: str, stream: str) -> Fields | None:
        try:
            return self.context.output_fields(stream, component)
        except (KeyError, ValueError):
            return None

    # -- the stateful bolt side (driven by the checkpointing executor) ---------------------------
    def init_state(self, state: KeyValueState) -> None:
        self.kv = state
        if self.persistent:
            self._restore()
        self.bolt.init_state(UserState(state))  # type: ignore[attr-defined]

    def pre_prepare(self, txid: int) -> None:
        self.bolt.pre_prepare(txid)  # type: ignore[attr-defined]
        if self.persistent:
            self._save()

    def pre_commit(self, txid: int) -> None:
        self.bolt.pre_commit(txid)  # type: ignore[attr-defined]

    def pre_rollback(self) -> None:
        self.bolt.pre_rollback()  # type: ignore[attr-defined]

    def state_rolled_back(self) -> None:
        """The state is back at the last commit: so is a persisted window."""
        if self.persistent and self.kv is not None:
            self._restore()

    # -- persistence -----------------------------------------------------------------------------
    def _save(self) -> None:
        assert self.kv is not None and self.events is not None
        self.events.flush()
        gone = self.manager.gone
        if gone is not self._gone_saved:
            self._gone_chunks = write_chunks(self.kv, self.events.codec, gone, self._gone_chunks)
            self._gone_saved = gone
        self.kv.put(META_KEY, {"events": self.events.index(),
                               "manager": self.manager.bookkeeping(),
                               "gone_chunks": self._gone_chunks,
                               "now": self.now, "late_dropped": self.late_dropped,
                               "max_ts": [[c, s, ts] for (c, s), ts in self.max_ts.items()]})

    def _restore(self) -> None:
        """The window as of the last commit (empty for a fresh task)."""
        assert self.kv is not None
        codec = EventCodec(self._fields)
        events = PartitionedEvents(self.kv, codec, self.max_events)
        manager = WindowManager(self.cfg, on_window=self._evaluate, origin=self.manager.origin)
        manager.use_events(events, EventKeys(events))
        meta = self.kv.get(META_KEY)
        if meta is not None:
            events.restore(meta.get("events"))
            self._gone_chunks = int(meta.get("gone_chunks", 0))
            gone = read_chunks(self.kv, codec, self._gone_chunks)
            manager.restore_bookkeeping(meta.get("manager") or {}, gone)
            # processing time never goes back: a restarted task goes on from the wall clock
            # (the windows it missed while down are evaluated, the empty ones skipped)
            self.now = max(self.now, int(meta.get("now", 0)))
            self.late_dropped = int(meta.get("late_dropped", 0))
            self.max_ts = {(c, s): int(ts) for c, s, ts in meta.get("max_ts", [])}
            self._gone_saved = gone
        else:
            self.late_dropped, self.max_ts = 0, {}
            self._gone_saved, self._gone_chunks = manager.gone, 0
        self.events, self.manager = events, manager

    # -- input -----------------------------------------------------------------------------------
    def execute(self, tup: Tuple) -> None:
        super().execute(tup)
        if self.persistent and not tup.is_tick():
            # in the window now (or routed as late): acked when the checkpoint holding it commits
            self.ack(tup)

    def _late(self, tup: Tuple, ts: int) -> None:
        if self.persistent:
            self.route_late(tup, ts)  # acked by execute
        else:
            super()._late(tup, ts)

    def _run(self, windows: list[Window], evicted: list[Any]) -> None:
        if self.persistent:  # acked when they entered the window
            for window in windows:
                self._evaluate(window)
            return
        super()._run(windows, evicted)

    def _anchors(self, anchors: Any) -> Any:
        if self.persistent:  # Storm's persistent executor emits unanchored
            return anchors
        return super()._anchors(anchors)

    def held_events(self) -> int:
        """Window events in memory now: the loaded partitions plus the last window's departed
        events (persistent), or every event (in memory)."""
        if self.events is None:
            return len(self.manager.events) + len(self.manager.gone)
        return self.events.held + len(self.manager.gone)
