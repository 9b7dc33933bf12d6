"""Windowed statistics (10 minutes, 3 hours, 1 day, all time), kept in the UI process.

Workers publish *cumulative* counters in their ZooKeeper heartbeats (per task when the worker sends
``WorkerHeartbeat.tasks``, else per component); a restarted worker starts again from zero. A
:class:`TopologyWindows` turns successive heartbeats into *deltas* and files them in time buckets,
so a window's figure is the sum of the deltas that arrived in it, whatever happened to workers:

* a heartbeat is taken once (same ``time`` again → ignored);
* a counter lower than the last value seen for the same worker slot and task, or a worker whose
  ``uptime`` went down, means a restart: the new value itself is the delta — unless the heartbeat
  says its counters continue earlier incarnations' (``process["counters_carried"]``, see
  ``stormpy.worker.cluster_link``): then the delta is taken from the last value seen for the same
  task in any worker slot (the task may have moved);
* counters seen for the first time (the first heartbeat of a worker slot, or a carried task
  this tracker never saw) count towards *all time*, and towards every window that reaches back to
  when they started accruing: the worker's start (``time - uptime``), or for carried counters the
  topology's launch (``launched``; unknown → all time only). So every window of a topology
  younger than the window equals all time, whenever the UI started; a window shorter than what
  the first heartbeat covers gets none of it (the split over time is unknown) and is exact from
  the next heartbeat on.

Buckets are 10 s wide for the 10-minute window and 5 minutes wide for the 3-hour and 1-day
windows (so those are exact to 5 minutes). The state lives in memory: a restarted UI starts its
windows afresh and its all-time figures from the workers' current counters.

The figures of a window are :class:`WindowFigures` (:meth:`TopologyWindows.figures`): per
component and per executor (:class:`ComponentFigures`: emitted on the user streams, transferred,
acked, failed, executed, the tuples of every stream, latencies in ms, capacity) and for the whole
topology (:meth:`WindowFigures.topology`). The REST documents (``stormdocs.py``) only shape them.

Counter keys are flat: ``transferred``, ``executed``, ``acked``, ``failed``, ``latency_sum``
(seconds), ``latency_count``, the sampled ``execute_latency_*`` and ``process_latency_*`` sums and
counts, any other numeric counter the worker sends, and ``emitted:<stream>`` per output stream.
Levels (``stormpy.worker.stats.GAUGES``, such as ``receive_queue``) are not counters and are left
out (``/metrics`` shows them from the latest heartbeat).
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from stormpy.cluster import WorkerHeartbeat
from stormpy.worker.stats import GAUGES
from stormpy.worker.stats import capacity as capacity_of

__all__ = ["ALL_TIME", "WINDOWS", "ComponentFigures", "TaskKey", "TopologyFigures", "TopologyWindows",
           "WindowFigures", "parse_window", "window_pretty"]

ALL_TIME = ":all-time"
#: The windows Storm's UI shows, in seconds, plus ``ALL_TIME``.
WINDOWS: tuple[str, ...] = ("600", "10800", "86400", ALL_TIME)
_PRETTY = {"600": "10m 0s", "10800": "3h 0m 0s", "86400": "1d 0h 0m 0s", ALL_TIME: "All time"}
_FINE_SECS = 10.0
_FINE_KEEP = 600.0
_COARSE_SECS = 300.0
_COARSE_KEEP = 86400.0

#: (component, task); task is -1 for figures a worker only sent per component
TaskKey = tuple[str, int]
Counters = dict[str, float]


def parse_window(value: str | None) -> str:
    """``None`` → ``"600"``; one of :data:`WINDOWS` → itself; anything else → ValueError naming
    the accepted values."""
    if value is None or value == "":
        return "600"
    if value in WINDOWS:
        return value
    raise ValueError(f"window {value!r} is not one of {', '.join(WINDOWS)}")


def window_pretty(window: str) -> str:
    return _PRETTY[window]


def beat_counters(beat: WorkerHeartbeat) -> dict[TaskKey, Counters]:
    """A heartbeat's cumulative counters per task (per component when it carries no tasks)."""
    out: dict[TaskKey, Counters] = {}
    if beat.tasks:
        for entry in beat.tasks:
            counters: Counters = {}
            for key, value in entry.items():
                if key == "emitted":
                    for stream, n in value.items():
                        counters[f"emitted:{stream}"] = float(n)
                elif key not in ("task", "component") and key not in GAUGES:
                    counters[key] = float(value)
            out[(str(entry["component"]), int(entry["task"]))] = counters
        return out
    for component, stats in beat.stats.items():
        counters = {k: float(v) for k, v in stats.items()
                    if k not in ("emitted", "tasks", "complete_latency_ms")}
        counters["emitted:default"] = float(stats.get("emitted", 0))
        out[(component, -1)] = counters
    return out


def _add(into: dict[TaskKey, Counters], deltas: Mapping[TaskKey, Counters]) -> None:
    for key, counters in deltas.items():
        target = into.setdefault(key, {})
        for name, value in counters.items():
            target[name] = target.get(name, 0.0) + value


class _Buckets:
    """Deltas filed in fixed-width time buckets by when they accrued, the oldest dropped past
    ``keep`` seconds."""

    def __init__(self, width: float, keep: float) -> None:
        self.width = width
        self.keep = keep
        self.buckets: dict[float, dict[TaskKey, Counters]] = {}

    def add(self, at: float, now: float, deltas: Mapping[TaskKey, Counters]) -> None:
        """File ``deltas`` that accrued at ``at`` (at most ``now``)."""
        oldest = now - self.keep - self.width
        if at >= oldest:
            _add(self.buckets.setdefault(at - at % self.width, {}), deltas)
        for start in [s for s in self.buckets if s < oldest]:
            del self.buckets[start]

    def total(self, now: float, secs: float) -> dict[TaskKey, Counters]:
        out: dict[TaskKey, Counters] = {}
        for start, deltas in sorted(self.buckets.items()):
            if start + self.width > now - secs:
                _add(out, deltas)
        return out


class TopologyWindows:
    """The windowed counters of one topology (thread-safe: the sampler writes, requests read)."""

    def __init__(self, now: float, launched: float | None = None) -> None:
        #: since when the figures reach back (the tracker's start, or older counters' origin)
        self.started = now
        #: the topology's launch time, when known: where carried counters began
        self.launched = launched
        self._lock = threading.Lock()
        self._last: dict[tuple[str, int], tuple[float, float, dict[TaskKey, Counters]]] = {}
        self._fine = _Buckets(_FINE_SECS, _FINE_KEEP)
        self._coarse = _Buckets(_COARSE_SECS, _COARSE_KEEP)
        self._all: dict[TaskKey, Counters] = {}
        #: the last counters seen per task, whatever slot sent them
        self._by_task: dict[TaskKey, Counters] = {}

    def observe(self, beats: Iterable[WorkerHeartbeat], now: float) -> None:
        """Take the new heartbeats of the topology's workers (see the module contract)."""
        with self._lock:
            for beat in beats:
                slot = (beat.node, beat.port)
                last = self._last.get(slot)
                if last is not None and last[0] == beat.time:
                    continue
                current = beat_counters(beat)
                restarted = last is not None and beat.uptime < last[1]
                carried = bool(beat.process.get("counters_carried"))
                # where counters never seen before began accruing (None: unknown)
                origin: float | None = min(now, beat.time) - max(0.0, beat.uptime)
                if last is not None and not restarted:
                    previous = last[2]
                elif carried:
                    previous = {key: self._by_task[key] for key in current if key in self._by_task}
                    origin = self.launched
                else:
                    previous = {}
                recent: dict[TaskKey, Counters] = {}
                unseen: dict[TaskKey, Counters] = {}
                for key, counters in current.items():
                    before = previous.get(key)
                    delta = {}
                    for name, value in counters.items():
                        old = (before or {}).get(name, 0.0)
                        diff = value - old if value >= old else value
                        if diff:
                            delta[name] = diff
                    if delta:
                        # a restarted worker's counters accrued since the last beat seen
                        (unseen if last is None and before is None else recent)[key] = delta
                self._last[slot] = (beat.time, beat.uptime, current)
                self._by_task.update(current)
                _add(self._all, recent)
                _add(self._all, unseen)
                if recent:
                    self._file(now, now, recent)
                if unseen and origin is not None:
                    self._file(min(origin, now), now, unseen)

    def _file(self, at: float, now: float, deltas: Mapping[TaskKey, Counters]) -> None:
        self.started = min(self.started, at)
        self._fine.add(at, now, deltas)
        self._coarse.add(at, now, deltas)

    def totals(self, window: str, now: float) -> dict[TaskKey, Counters]:
        """Per-task sums of the deltas of ``window`` (one of :data:`WINDOWS`)."""
        with self._lock:
            if window == ALL_TIME:
                return {k: dict(v) for k, v in self._all.items()}
            secs = float(window)
            buckets = self._fine if secs <= _FINE_KEEP else self._coarse
            return buckets.total(now, secs)

    def span(self, window: str, now: float) -> float:
        """Seconds the figures of ``window`` cover (for rates): the window, or less when the
        tracker is younger; at least 1."""
        age = max(1.0, now - self.started)
        return age if window == ALL_TIME else max(1.0, min(float(window), age))

    def figures(self, window: str, now: float,
                executors: Sequence[tuple[int, int]] = ()) -> WindowFigures:
        """The figures of ``window`` (one of :data:`WINDOWS`) at ``now``; ``executors``: the
        topology's executor task ranges ``(start, end)``, for per-executor figures and capacity."""
        return WindowFigures(window, self.totals(window, now), self.span(window, now), executors)


@dataclass(frozen=True)
class ComponentFigures:
    """A component's (or one executor's) figures over a window. Latencies are None without a
    sample; ``capacity`` is an executor's, or for a component its busiest executor's."""

    emitted: int
    transferred: int
    acked: int
    failed: int
    executed: int
    #: stream → tuples emitted on it (system streams ``__*`` too)
    streams: dict[str, int]
    complete_latency_ms: float | None
    execute_latency_ms: float | None
    process_latency_ms: float | None
    capacity: float | None

    @classmethod
    def of(cls, counters: Mapping[str, float], span: float,
           busiest: float | None = None) -> ComponentFigures:
        """From summed counters over ``span`` seconds; ``capacity`` is ``busiest`` when given,
        else computed from the counters (one executor's)."""
        execute = latency_ms(counters, "execute_latency")
        executed = counters.get("executed", 0.0)
        return cls(emitted=int(emitted(counters)), transferred=int(counters.get("transferred", 0)),
                   acked=int(counters.get("acked", 0)), failed=int(counters.get("failed", 0)),
                   executed=int(executed),
                   streams={k: int(v) for k, v in stream_counts(counters).items()},
                   complete_latency_ms=latency_ms(counters), execute_latency_ms=execute,
                   process_latency_ms=latency_ms(counters, "process_latency"),
                   capacity=busiest if busiest is not None else capacity_of(executed, execute, span))


@dataclass(frozen=True)
class TopologyFigures:
    """A topology's figures over a window: its user components' emitted and transferred, its
    spouts' acked, failed and complete latency (None without a sample)."""

    emitted: int
    transferred: int
    acked: int
    failed: int
    complete_latency_ms: float | None


class WindowFigures:
    """What the UI shows of one window of one topology (see the module docstring)."""

    def __init__(self, window: str, totals: Mapping[TaskKey, Counters], span: float,
                 executors: Sequence[tuple[int, int]] = ()) -> None:
        self.window = window
        self.pretty = window_pretty(window)
        #: seconds the figures cover (for rates)
        self.span = span
        self._totals = dict(totals)
        self._executors = [(int(start), int(end)) for start, end in executors]
        self._components = per_component(totals)

    def _tasks(self, component: str) -> dict[int, Counters]:
        return {task: c for (comp, task), c in self._totals.items() if comp == component}

    def executor(self, component: str, start: int, end: int) -> ComponentFigures | None:
        """The figures of ``component``'s executor of tasks ``start..end`` (None: it has none)."""
        mine = [c for task, c in self._tasks(component).items() if start <= task <= end]
        if not mine:
            return None
        return ComponentFigures.of(per_component({("x", i): c for i, c in enumerate(mine)}).get("x", {}),
                                   self.span)

    def _executor_counters(self, component: str) -> list[Counters]:
        """Per executor (its tasks summed); per task for tasks in no known executor."""
        mine = self._tasks(component)
        out: list[Counters] = []
        seen: set[int] = set()
        for start, end in self._executors:
            tasks = [task for task in mine if start <= task <= end]
            if tasks:
                seen.update(tasks)
                out.append(per_component({("x", t): mine[t] for t in tasks}).get("x", {}))
        out.extend(c for task, c in mine.items() if task not in seen)
        return out

    def component(self, component: str) -> ComponentFigures:
        """The component's figures; its capacity is its busiest executor's."""
        caps = [cap for c in self._executor_counters(component)
                if (cap := capacity_of(c.get("executed", 0.0), latency_ms(c, "execute_latency"),
                                       self.span)) is not None]
        return ComponentFigures.of(self._components.get(component, {}), self.span,
                                   max(caps) if caps else None)

    def topology(self, spouts: Collection[str]) -> TopologyFigures:
        """The topology's figures; ``spouts``: the names of its spouts."""
        user = [c for name, c in self._components.items() if not name.startswith("__")]
        mine = [c for name, c in self._components.items() if name in spouts]
        lat_sum = sum(c.get("latency_sum", 0.0) for c in mine)
        lat_n = sum(c.get("latency_count", 0.0) for c in mine)
        return TopologyFigures(emitted=int(sum(emitted(c) for c in user)),
                               transferred=int(sum(c.get("transferred", 0) for c in user)),
                               acked=int(sum(c.get("acked", 0) for c in mine)),
                               failed=int(sum(c.get("failed", 0) for c in mine)),
                               complete_latency_ms=1000.0 * lat_sum / lat_n if lat_n else None)


def per_component(totals: Mapping[TaskKey, Counters]) -> dict[str, Counters]:
    """Sum per-task counters per component."""
    out: dict[str, Counters] = {}
    for (component, _task), counters in totals.items():
        target = out.setdefault(component, {})
        for name, value in counters.items():
            target[name] = target.get(name, 0.0) + value
    return out


def emitted(counters: Mapping[str, float], *, system: bool = False) -> float:
    """Tuples emitted on the user streams (system streams ``__*`` too with ``system``)."""
    return sum(v for k, v in counters.items() if k.startswith("emitted:")
               and (system or not k[8:].startswith("__")))


def stream_counts(counters: Mapping[str, float]) -> dict[str, float]:
    """stream → tuples emitted on it."""
    return {k[8:]: v for k, v in counters.items() if k.startswith("emitted:")}


def latency_ms(counters: Mapping[str, float], prefix: str = "latency") -> float | None:
    """Mean of ``<prefix>_sum`` (seconds) over ``<prefix>_count`` in ms, None with no samples."""
    count = counters.get(f"{prefix}_count", 0.0)
    return 1000.0 * counters.get(f"{prefix}_sum", 0.0) / count if count else None

