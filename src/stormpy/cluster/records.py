"""Typed cluster-state documents and their msgpack encoding.

Every document is a msgpack map carrying ``"v"`` (its schema version, :data:`SCHEMA_VERSION`).
Readers ignore unknown fields (so a newer writer may add optional ones) and refuse a newer schema
version. ``from_doc`` raises :class:`DocumentError` naming the field; :func:`decode` turns that
(and undecodable bytes) into :class:`~stormpy.cluster.errors.MalformedStateError` naming the znode.

Executors are :data:`~stormpy.topology._layout.ExecutorKey` ``(start_task, end_task)`` pairs
(inclusive), the keys of :class:`~stormpy.topology._layout.Executor`. msgpack has no tuples or
non-string map keys, so maps keyed by executor are stored as lists of rows, e.g.
``[[start, end, node, port], ...]``.
The objects are frozen: derive changed copies with :func:`dataclasses.replace`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar

import msgpack

from stormpy.cluster.errors import MalformedStateError
from stormpy.topology._layout import ExecutorKey

__all__ = [
    "SCHEMA_VERSION",
    "STORM_STATUSES",
    "Assignment",
    "DocumentError",
    "ErrorInfo",
    "StormBase",
    "SupervisorInfo",
    "WorkerHeartbeat",
    "decode",
    "decode_value",
    "encode",
    "encode_value",
]

SCHEMA_VERSION = 1
STORM_STATUSES = frozenset({"active", "inactive", "killed", "rebalancing"})

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class DocumentError(ValueError):
    """A document is not a valid instance of its type; the message names the field."""


# --- field readers ------------------------------------------------------------------------------
_MISSING: Any = object()


def _field(doc: Mapping[str, Any], key: str, ok: Callable[[Any], bool], expected: str,
           default: Any = _MISSING) -> Any:
    if key not in doc:
        if default is _MISSING:
            raise DocumentError(f"field {key!r} is missing")
        return default
    value = doc[key]
    if not ok(value):
        raise DocumentError(f"field {key!r} must be {expected}, got {value!r}")
    return value


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_list_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, list) and all(check(x) for x in v)


def _is_map_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, dict) and all(isinstance(k, str) and check(x) for k, x in v.items())


def _is_row(*checks: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: (isinstance(v, list) and len(v) == len(checks)
                      and all(c(x) for c, x in zip(checks, v)))


def _is_slot_exits(v: Any) -> bool:
    """A supervisor's record of one worker slot: str ``topology_id``, int ``port`` and ``restarts``."""
    return (isinstance(v, Mapping) and _is_str(v.get("topology_id")) and _is_int(v.get("port"))
            and _is_int(v.get("restarts")))


def _is_task_stats(v: Any) -> bool:
    """A heartbeat's task map: int ``task``, str ``component``, ``emitted`` stream → number, and
    numbers for every other key."""
    if not isinstance(v, Mapping) or not _is_int(v.get("task")) or not _is_str(v.get("component")):
        return False
    if not _is_map_of(_is_num)(v.get("emitted", {})):
        return False
    return all(_is_num(x) for k, x in v.items() if k not in ("task", "component", "emitted"))


def _check_version(doc: Any) -> Mapping[str, Any]:
    if not isinstance(doc, dict):
        raise DocumentError(f"expected a map, got {type(doc).__name__}")
    version: Any = doc.get("v")
    if not _is_int(version):
        raise DocumentError(f"schema version 'v' must be an int, got {version!r}")
    if version > SCHEMA_VERSION:
        raise DocumentError(f"schema version {version} is newer than this stormpy reads ({SCHEMA_VERSION})")
    return doc


def _executor(value: Any) -> ExecutorKey:
    start, end = value
    return (int(start), int(end))


# --- documents ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SupervisorInfo:
    """A live supervisor: where it runs and which worker ports (slots) it offers."""

    supervisor_id: str
    host: str
    ports: tuple[int, ...]
    start_time: float
    version: str
    #: counters since the supervisor started (optional field): ``worker_launches`` and
    #: ``worker_restarts`` (workers it stopped or found dead and started again)
    stats: dict[str, float] = field(default_factory=dict)
    #: port of the host's log server (optional field; None: the supervisor runs none)
    logviewer_port: int | None = None
    #: per worker slot that restarted (optional field): ``topology_id``, ``port``, ``restarts``,
    #: ``last_exit`` (why, or None), ``last_exit_time``, ``quick_exits`` (in a row) and
    #: ``crash_looping`` (see ``stormpy.supervisor.exits``)
    workers: tuple[dict[str, Any], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "ports", tuple(int(p) for p in self.ports))
        object.__setattr__(self, "workers", tuple(dict(w) for w in self.workers))

    def to_doc(self) -> dict[str, Any]:
        """The msgpack-ready document."""
        return {"v": SCHEMA_VERSION, "supervisor_id": self.supervisor_id, "host": self.host,
                "ports": list(self.ports), "start_time": self.start_time, "version": self.version,
                "stats": dict(self.stats), "workers": [dict(w) for w in self.workers],
                "logviewer_port": self.logviewer_port}

    @classmethod
    def from_doc(cls, doc: Any) -> SupervisorInfo:
        """Parse a document; raise DocumentError naming the bad field."""
        d = _check_version(doc)
        return cls(supervisor_id=_field(d, "supervisor_id", _is_str, "a string"),
                   host=_field(d, "host", _is_str, "a string"),
                   ports=tuple(_field(d, "ports", _is_list_of(_is_int), "a list of ints")),
                   start_time=float(_field(d, "start_time", _is_num, "a number")),
                   version=_field(d, "version", _is_str, "a string"),
                   stats=dict(_field(d, "stats", _is_map_of(_is_num), "a map of numbers", {})),
                   workers=tuple(_field(d, "workers", _is_list_of(_is_slot_exits),
                                        "a list of worker slot records", [])),
                   logviewer_port=_field(d, "logviewer_port", lambda v: v is None or _is_int(v),
                                         "an int or nil", None))


@dataclass(frozen=True)
class StormBase:
    """A topology's identity and status (``active|inactive|killed|rebalancing``)."""

    STATUSES: ClassVar[frozenset[str]] = STORM_STATUSES

    topology_id: str
    name: str
    status: str
    num_workers: int
    launch_time: float
    owner: str
    component_executors: dict[str, int] = field(default_factory=dict)
    kill_wait_secs: float | None = None
    prev_status: str | None = None
    #: sampled tuples (Storm's ``component_debug``): the topology id (every component) or a
    #: component → ``{"enable": bool, "samplingpct": float}``
    component_debug: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STORM_STATUSES:
            raise DocumentError(f"status {self.status!r} is not one of {sorted(STORM_STATUSES)}")
        if self.prev_status is not None and self.prev_status not in STORM_STATUSES:
            raise DocumentError(f"prev_status {self.prev_status!r} is not one of {sorted(STORM_STATUSES)}")

    def to_doc(self) -> dict[str, Any]:
        """The msgpack-ready document."""
        return {"v": SCHEMA_VERSION, "topology_id": self.topology_id, "name": self.name,
                "status": self.status, "num_workers": self.num_workers, "launch_time": self.launch_time,
                "owner": self.owner, "component_executors": dict(self.component_executors),
                "kill_wait_secs": self.kill_wait_secs, "prev_status": self.prev_status,
                "component_debug": {k: dict(v) for k, v in self.component_debug.items()}}

    @classmethod
    def from_doc(cls, doc: Any) -> StormBase:
        """Parse a document; raise DocumentError naming the bad field."""
        d = _check_version(doc)
        opt_num = lambda v: v is None or _is_num(v)  # noqa: E731
        opt_str = lambda v: v is None or _is_str(v)  # noqa: E731
        kill_wait = _field(d, "kill_wait_secs", opt_num, "a number or nil", None)
        return cls(topology_id=_field(d, "topology_id", _is_str, "a string"),
                   name=_field(d, "name", _is_str, "a string"),
                   status=_field(d, "status", lambda v: v in STORM_STATUSES,
                                 f"one of {sorted(STORM_STATUSES)}"),
                   num_workers=_field(d, "num_workers", _is_int, "an int"),
                   launch_time=float(_field(d, "launch_time", _is_num, "a number")),
                   owner=_field(d, "owner", _is_str, "a string"),
                   component_executors=dict(_field(d, "component_executors", _is_map_of(_is_int),
                                                   "a map of component → int", {})),
                   kill_wait_secs=float(kill_wait) if kill_wait is not None else None,
                   prev_status=_field(d, "prev_status", opt_str, "a string or nil", None),
                   component_debug={k: {"enable": bool(v.get("enable")),
                                        "samplingpct": float(v.get("samplingpct") or 0.0)}
                                    for k, v in _field(d, "component_debug", _is_map_of(_is_debug),
                                                       "a map of name → {enable, samplingpct}", {}).items()})


def _is_debug(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("enable"), bool) and \
        _is_num(value.get("samplingpct"))


@dataclass(frozen=True)
class Assignment:
    """Where a topology's executors run: executor → (node, port), node → host, bundle to run."""

    topology_id: str
    bundle_key: str
    executors: dict[ExecutorKey, tuple[str, int]]
    node_host: dict[str, str]
    executor_start_times: dict[ExecutorKey, float] = field(default_factory=dict)

    @property
    def worker_ports(self) -> dict[str, tuple[int, ...]]:
        """node → sorted ports used by this topology on that node."""
        ports: dict[str, set[int]] = {}
        for node, port in self.executors.values():
            ports.setdefault(node, set()).add(port)
        return {node: tuple(sorted(p)) for node, p in sorted(ports.items())}

    def workers(self) -> dict[tuple[str, int], list[ExecutorKey]]:
        """(node, port) → the sorted executors that worker runs."""
        slots: dict[tuple[str, int], list[ExecutorKey]] = {}
        for executor, slot in sorted(self.executors.items()):
            slots.setdefault(tuple(slot), []).append(executor)  # type: ignore[arg-type]
        return slots

    def executors_of(self, node: str, port: int) -> list[ExecutorKey]:
        """The sorted executors assigned to the worker ``node:port``."""
        return sorted(e for e, slot in self.executors.items() if tuple(slot) == (node, port))

    def to_doc(self) -> dict[str, Any]:
        """The msgpack-ready document (executor maps as sorted row lists)."""
        executors = [[s, e, node, port] for (s, e), (node, port) in sorted(self.executors.items())]
        start_times = [[s, e, t] for (s, e), t in sorted(self.executor_start_times.items())]
        return {"v": SCHEMA_VERSION, "topology_id": self.topology_id, "bundle_key": self.bundle_key,
                "executors": executors, "node_host": dict(self.node_host),
                "executor_start_times": start_times}

    @classmethod
    def from_doc(cls, doc: Any) -> Assignment:
        """Parse a document; raise DocumentError naming the bad field."""
        d = _check_version(doc)
        rows = _field(d, "executors", _is_list_of(_is_row(_is_int, _is_int, _is_str, _is_int)),
                      "a list of [start_task, end_task, node, port] rows")
        times = _field(d, "executor_start_times", _is_list_of(_is_row(_is_int, _is_int, _is_num)),
                       "a list of [start_task, end_task, time] rows", [])
        return cls(topology_id=_field(d, "topology_id", _is_str, "a string"),
                   bundle_key=_field(d, "bundle_key", _is_str, "a string"),
                   executors={(s, e): (node, port) for s, e, node, port in rows},
                   node_host=dict(_field(d, "node_host", _is_map_of(_is_str), "a map of node → host")),
                   executor_start_times={(s, e): float(t) for s, e, t in times})


@dataclass(frozen=True)
class WorkerHeartbeat:
    """One worker's liveness and per-component statistics.

    ``stats`` maps component → counter name → number (``emitted``, ``transferred``, ``acked``,
    ``failed``, ``executed``, ``complete_latency_ms``, ...); names are open-ended.

    ``tasks`` (optional, older workers send none) holds one map per task: ``task`` (int),
    ``component`` (str), ``emitted`` (stream → count) and numeric counters (``transferred``,
    ``executed``, ``acked``, ``failed``, ``latency_sum``, ``latency_count``, ...). ``process``
    (optional) holds the worker process's figures: counter name → number (``cpu_user_secs``,
    ``cpu_system_secs``, ``rss_bytes``, ``gc_collections_<gen>``, ...). Both are cumulative since
    the worker started, like ``stats``; the UI and its Prometheus exporter read them. ``metrics``
    maps component → task id (a string) → metric name → value: what tasks registered with
    ``context.register_metric`` (plain msgpack data; optional, absent in older heartbeats).
    ``events`` (optional) holds the worker's newest sampled tuples, oldest first, as the events
    log writes them (:func:`stormpy.topology._event_log.event_doc`).
    """

    topology_id: str
    node: str
    port: int
    time: float
    uptime: float
    executors: tuple[ExecutorKey, ...] = ()
    stats: dict[str, dict[str, float]] = field(default_factory=dict)
    tasks: tuple[dict[str, Any], ...] = ()
    process: dict[str, float] = field(default_factory=dict)
    metrics: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    events: tuple[dict[str, Any], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "executors", tuple(_executor(e) for e in self.executors))
        object.__setattr__(self, "tasks", tuple(self.tasks))
        object.__setattr__(self, "events", tuple(self.events))

    def to_doc(self) -> dict[str, Any]:
        """The msgpack-ready document."""
        return {"v": SCHEMA_VERSION, "topology_id": self.topology_id, "node": self.node,
                "port": self.port, "time": self.time, "uptime": self.uptime,
                "executors": [list(e) for e in self.executors],
                "stats": {c: dict(s) for c, s in self.stats.items()},
                "tasks": [dict(t) for t in self.tasks], "process": dict(self.process),
                "metrics": {c: {t: dict(m) for t, m in tasks.items()} for c, tasks in self.metrics.items()},
                "events": [dict(e) for e in self.events]}

    @classmethod
    def from_doc(cls, doc: Any) -> WorkerHeartbeat:
        """Parse a document; raise DocumentError naming the bad field."""
        d = _check_version(doc)
        return cls(topology_id=_field(d, "topology_id", _is_str, "a string"),
                   node=_field(d, "node", _is_str, "a string"),
                   port=_field(d, "port", _is_int, "an int"),
                   time=float(_field(d, "time", _is_num, "a number")),
                   uptime=float(_field(d, "uptime", _is_num, "a number")),
                   executors=tuple(_executor(e) for e in _field(
                       d, "executors", _is_list_of(_is_row(_is_int, _is_int)),
                       "a list of [start_task, end_task] pairs", [])),
                   stats={c: dict(s) for c, s in _field(
                       d, "stats", _is_map_of(_is_map_of(_is_num)),
                       "a map of component → map of counter → number", {}).items()},
                   tasks=tuple(dict(t) for t in _field(
                       d, "tasks", _is_list_of(_is_task_stats),
                       "a list of task maps (task, component, emitted, counters)", [])),
                   process=dict(_field(d, "process", _is_map_of(_is_num),
                                       "a map of counter → number", {})),
                   metrics={c: {t: dict(m) for t, m in tasks.items()} for c, tasks in _field(
                       d, "metrics", _is_map_of(_is_map_of(_is_map_of(lambda _v: True))),
                       "a map of component → map of task → map of metric → value", {}).items()},
                   events=tuple(dict(e) for e in _field(d, "events", _is_list_of(_is_str_map),
                                                         "a list of sampled tuple maps", [])))


def _is_str_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) for k in value)


@dataclass(frozen=True)
class ErrorInfo:
    """An error a task reported: which component/task, when, where, and the message."""

    component: str
    task: int
    time: float
    message: str
    host: str
    port: int

    def to_doc(self) -> dict[str, Any]:
        """The msgpack-ready document."""
        return {"v": SCHEMA_VERSION, "component": self.component, "task": self.task, "time": self.time,
                "message": self.message, "host": self.host, "port": self.port}

    @classmethod
    def from_doc(cls, doc: Any) -> ErrorInfo:
        """Parse a document; raise DocumentError naming the bad field."""
        d = _check_version(doc)
        return cls(component=_field(d, "component", _is_str, "a string"),
                   task=_field(d, "task", _is_int, "an int"),
                   time=float(_field(d, "time", _is_num, "a number")),
                   message=_field(d, "message", _is_str, "a string"),
                   host=_field(d, "host", _is_str, "a string"),
                   port=_field(d, "port", _is_int, "an int"))


# --- encoding -----------------------------------------------------------------------------------
class _Document(Protocol):
    def to_doc(self) -> dict[str, Any]: ...


class _DocumentType(Protocol[T_co]):
    def from_doc(self, doc: Any) -> T_co: ...


def encode(obj: _Document) -> bytes:
    """msgpack bytes of ``obj.to_doc()``."""
    return msgpack.packb(obj.to_doc(), use_bin_type=True)


def _unpack(data: bytes, path: str) -> Any:
    try:
        return msgpack.unpackb(data, raw=False)
    except Exception as exc:  # msgpack raises several unrelated types on garbage
        raise MalformedStateError(path, f"not a msgpack document ({type(exc).__name__}: {exc})") from exc


def decode(cls: _DocumentType[T], data: bytes, path: str) -> T:
    """Decode ``data`` read from ``path`` as ``cls``; raise MalformedStateError naming the path."""
    doc = _unpack(data, path)
    try:
        return cls.from_doc(doc)
    except DocumentError as exc:
        raise MalformedStateError(path, f"{getattr(cls, '__name__', cls)}: {exc}") from exc


def encode_value(value: Any) -> bytes:
    """A free-form msgpack-serialisable value as a versioned document ``{"v": 1, "value": value}``."""
    return msgpack.packb({"v": SCHEMA_VERSION, "value": value}, use_bin_type=True)


def decode_value(data: bytes, path: str) -> Any:
    """Reverse :func:`encode_value`; raise MalformedStateError naming the path."""
    doc = _unpack(data, path)
    try:
        return _check_version(doc).get("value")
    except DocumentError as exc:
        raise MalformedStateError(path, str(exc)) from exc
