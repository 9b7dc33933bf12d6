"""A cluster worker's event logger: samples the emits of the components being debugged and writes
them to the worker's events log (format and settings: :mod:`stormpy.topology._event_log`).

Contract:

* A task whose component samples nothing is never touched, so the tuple path pays nothing while
  the logger is off (as ``hooks.py`` does for task hooks). :meth:`EventLogger.apply`, run on the
  executor loop, wraps the collector methods bound onto a sampling task's component (``emit``,
  ``emit_many``, ``emit_direct``, a spout's ``emit_batch``) and puts the originals back when it
  stops sampling. A method rebound on top of the wrapper since (a task hook added later) is left
  as it is and the wrapper only stops sampling.
* A sampled emit costs a random draw and an append to a bounded queue on the loop; a side thread
  (``stormpy-event-logger``) turns the queue into lines of the events log and keeps the newest
  :data:`~stormpy.topology._event_log.RECENT_EVENTS` for the heartbeat (:meth:`recent`; a tuple
  of more than :data:`RECENT_CHARS` characters travels there cut short, ``"truncated": true``). When the
  thread falls behind by more than :data:`PENDING_LIMIT` emits the oldest are dropped (counted in
  ``dropped``). The file is opened at the first sampled tuple and appended to; it rotates as the
  worker's log does (:class:`~stormpy.host.log_files.CappedLogHandler`: ``max_bytes`` per file,
  ``backups`` older files ``path.1`` … ``path.N``, the oldest dropped; ``max_bytes`` 0: never), so
  a component sampled for days cannot fill the disk.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from stormpy.host.log_files import CappedLogHandler
from stormpy.host.service import Service
from stormpy.topology._event_log import RECENT_EVENTS, event_doc, event_line, sampling_pct
from stormpy.topology._tuple import DEFAULT_STREAM

__all__ = ["PENDING_LIMIT", "RECENT_CHARS", "EventLogger"]

log = logging.getLogger(__name__)

#: sampled emits waiting for the writer thread, at most
PENDING_LIMIT = 10_000
#: a sampled tuple whose line is longer travels in the heartbeat with its values cut to this
#: many characters of their JSON (``"truncated": true``); the events log has it whole
RECENT_CHARS = 1_000
_METHODS = ("emit", "emit_many", "emit_direct", "emit_batch")
#: (time, component, task, stream, values, message id)
_Event = tuple[float, str, int, Any, Any, Any]


class _Sampler:
    """The wrappers of one task: sample ``pct`` percent of its emits into ``sink``."""

    def __init__(self, runner: Any, pct: float, sink: deque[_Event]) -> None:
        self.pct = pct
        self.component: str = runner.component_id
        self.task: int = runner.task_id
        self.spout = bool(runner.is_spout)
        self.instance = runner.instance
        self.sink = sink
        # the collector methods the runner bound onto the instance (bound to the runner, not to
        # the instance). Never read ``instance.__dict__``: on CPython that materialises the
        # instance's dict and every attribute read of the component gets slower for good.
        self.originals: dict[str, Callable[..., Any]] = {}
        for name in _METHODS:
            bound = getattr(self.instance, name, None)
            if bound is not None and getattr(bound, "__self__", None) is not self.instance:
                self.originals[name] = bound
        self.wrappers: dict[str, Callable[..., Any]] = {}
        for name, original in self.originals.items():
            wrapper = getattr(self, f"_wrap_{name}")(original)
            self.wrappers[name] = wrapper
            setattr(self.instance, name, wrapper)

    def _take(self, values: Any, message_id: Any, stream: Any) -> None:
        if self.pct > 0 and random.random() * 100.0 < self.pct:
            self.sink.append((time.time(), self.component, self.task, stream, list(values), message_id))

    # the wrappers take the collector's own parameter names (a spout's msg_id/msg_ids, a
    # bolt's anchors), so that calls by keyword keep working
    def _wrap_emit(self, original: Callable[..., Any]) -> Callable[..., Any]:
        take = self._take
        if self.spout:
            def spout_emit(values: Any, msg_id: Any = None, stream: Any = DEFAULT_STREAM) -> Any:
                targets = original(values, msg_id, stream)
                take(values, msg_id, stream)
                return targets
            return spout_emit

        def bolt_emit(values: Any, anchors: Any = None, stream: Any = DEFAULT_STREAM) -> Any:
            targets = original(values, anchors, stream)
            take(values, None, stream)
            return targets
        return bolt_emit

    def _wrap_emit_direct(self, original: Callable[..., Any]) -> Callable[..., Any]:
        take = self._take
        if self.spout:
            def spout_emit_direct(task: Any, values: Any, msg_id: Any = None,
                                  stream: Any = DEFAULT_STREAM) -> Any:
                result = original(task, values, msg_id, stream)
                take(values, msg_id, stream)
                return result
            return spout_emit_direct

        def bolt_emit_direct(task: Any, values: Any, anchors: Any = None,
                             stream: Any = DEFAULT_STREAM) -> Any:
            result = original(task, values, anchors, stream)
            take(values, None, stream)
            return result
        return bolt_emit_direct

    def _wrap_many(self, original: Callable[..., Any]) -> Callable[..., Any]:
        take = self._take
        if self.spout:
            def spout_emit_many(values_list: Any, msg_ids: Any = None,
                                stream: Any = DEFAULT_STREAM) -> Any:
                values_list = values_list if type(values_list) is list else list(values_list)
                ids = None if msg_ids is None else list(msg_ids)
                result = original(values_list, ids, stream)
                for i, values in enumerate(values_list):
                    take(values, None if ids is None else ids[i], stream)
                return result
            return spout_emit_many

        def bolt_emit_many(values_list: Any, anchors: Any = None, stream: Any = DEFAULT_STREAM) -> Any:
            values_list = values_list if type(values_list) is list else list(values_list)
            result = original(values_list, anchors, stream)
            for values in values_list:
                take(values, None, stream)
            return result
        return bolt_emit_many

    _wrap_emit_many = _wrap_many
    _wrap_emit_batch = _wrap_many

    def remove(self) -> None:
        """Put the originals back (a method rebound since keeps its binding; this one stops)."""
        self.pct = 0.0
        for name, wrapper in self.wrappers.items():
            if getattr(self.instance, name, None) is wrapper:
                setattr(self.instance, name, self.originals[name])


class EventLogger:
    """The event logger of one worker, writing to ``path``."""

    def __init__(self, path: Path, topology_id: str, *, max_bytes: int = 0, backups: int = 1) -> None:
        self.path = path
        self.topology_id = topology_id
        self.max_bytes = max_bytes
        self.backups = backups
        self.dropped = 0
        self.written = 0
        self._pending: deque[_Event] = deque(maxlen=PENDING_LIMIT)
        self._recent: deque[dict[str, Any]] = deque(maxlen=RECENT_EVENTS)
        self._samplers: dict[int, _Sampler] = {}
        self._file: CappedLogHandler | None = None
        self._service = Service("stormpy-event-logger", self._drain, interval=0.2, log=log)

    def start(self) -> EventLogger:
        self._service.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Write what is pending, then stop the thread and close the file; idempotent."""
        self._service.request_stop()
        self._service.stop(timeout)
        self._drain()
        if self._file is not None:
            self._file.close()
            self._file = None

    @property
    def sampling(self) -> dict[int, float]:
        """task → the percentage of its emits sampled (tasks that sample only)."""
        return {task: s.pct for task, s in self._samplers.items()}

    def apply(self, runners: Iterable[Any], component_debug: Mapping[str, Mapping[str, Any]]) -> None:
        """On the loop thread: make each of ``runners`` (system components excepted) sample as
        ``component_debug`` (a StormBase's) says."""
        for runner in runners:
            if runner.component_id.startswith("__"):
                continue
            pct = sampling_pct(component_debug, self.topology_id, runner.component_id)
            sampler = self._samplers.get(runner.task_id)
            if pct is None:
                if sampler is not None:
                    sampler.remove()
                    del self._samplers[runner.task_id]
                    log.info("task %s:%d no longer samples its tuples", runner.component_id, runner.task_id)
            elif sampler is None:
                self._samplers[runner.task_id] = _Sampler(runner, pct, self._pending)
                log.info("task %s:%d samples %s%% of its tuples into %s", runner.component_id,
                         runner.task_id, pct, self.path)
            else:
                sampler.pct = pct

    def recent(self) -> list[dict[str, Any]]:
        """The newest sampled tuples written, oldest first (any thread)."""
        return list(self._recent)

    def _drain(self) -> None:
        pending = self._pending
        if not pending:
            return
        if len(pending) == PENDING_LIMIT:
            self.dropped += 1  # at least one was pushed out; the count is a lower bound
        lines = []
        while pending:
            ts, component, task, stream, values, message_id = pending.popleft()
            doc = event_doc(ts, component, task, stream, values, message_id)
            line = event_line(doc)
            lines.append(line)
            if len(line) > RECENT_CHARS:  # heartbeats stay small, whatever the tuples hold
                doc = {**doc, "values": [json.dumps(doc["values"])[:RECENT_CHARS]],
                       "message_id": None if doc["message_id"] is None else str(doc["message_id"])[:100],
                       "truncated": True}
            self._recent.append(doc)
        try:
            if self._file is None:
                self._file = CappedLogHandler(self.path, self.max_bytes, self.backups)
                self._file.terminator = ""  # each line ends with its own newline
            record = logging.LogRecord("stormpy.events", logging.INFO, str(self.path), 0,
                                       "".join(lines), None, None)
            if self._file.shouldRollover(record):
                self._file.doRollover()
            stream = self._file.stream
            if stream is None:  # a rollover that could not reopen the file
                stream = self._file.stream = self._file._open()
            stream.write(record.msg)
            stream.flush()
            self.written += len(lines)
        except OSError as exc:
            log.warning("cannot write sampled tuples to %s: %s", self.path, exc)
