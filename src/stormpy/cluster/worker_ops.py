"""Run-time operations on a topology's workers through ZooKeeper: logger levels and control requests.

Contract:

* **Log levels** (Storm's ``set_log_level`` / ``logconfig``). A topology's :class:`LogConfig` sits at
  ``ZkPaths.logconfig(topology_id)``: logger name → :class:`LoggerLevel` (target level, the level
  to reset to, timeout seconds and the epoch at which it expires; 0 means never).
  :func:`change_log_config` applies ``-l LOGGER=LEVEL[:TIMEOUT]`` settings and ``-r LOGGER`` resets
  to the stored document (read-modify-write); every worker of the topology applies the document
  within ``worker.control.poll.secs`` (:mod:`stormpy.worker.control`) and reverts a logger whose
  timeout passed. :meth:`LogConfig.to_storm_json` is Storm's REST shape (``namedLoggerLevels``).
  The root logger is named ``ROOT`` as in Storm. Bad levels and timeouts are ValueErrors naming
  the logger.
* **Control requests** (the per-worker channel). A request is a sequential node ``r<seq>`` under
  ``ZkPaths.worker_requests(topology, node, port)`` holding a :class:`ControlRequest` with
  ``status == "pending"``. The worker (its control thread, never the executor loop) answers by
  writing the request, answered, to the sibling node ``r<seq>.answer`` (a node it owns, so a
  secured topology's worker can answer what the daemons wrote) with ``status`` ``done``
  (``result``: a map, e.g. ``{"file": ...}`` the artefact's path relative to the log directory) or
  ``failed`` (``error``: why). Requesters poll (:func:`read_request` sees the answer) and delete
  both (:func:`remove_request`) when done; a worker removes answered
  requests older than :data:`ANSWERED_TTL_SECS`. Actions are plain words; the worker refuses an
  action it does not know with ``failed``, so new actions (metrics snapshots, event-logger
  switches) reuse the channel without changing it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from stormpy.cluster.records import decode_value, encode_value
from stormpy.cluster.state import ClusterState

__all__ = [
    "ANSWERED_TTL_SECS",
    "LEVELS",
    "ROOT_LOGGER",
    "ControlRequest",
    "LogConfig",
    "LoggerLevel",
    "change_log_config",
    "parse_level_setting",
    "pending_requests",
    "read_log_config",
    "read_request",
    "remove_request",
    "answer_request",
    "submit_request",
    "write_log_config",
]

#: Storm's (log4j's) level names, accepted case-insensitively; each maps to a logging level.
LEVELS: dict[str, int] = {"ALL": logging.NOTSET + 1, "TRACE": 5, "DEBUG": logging.DEBUG,
                          "INFO": logging.INFO, "WARN": logging.WARNING, "WARNING": logging.WARNING,
                          "ERROR": logging.ERROR, "FATAL": logging.CRITICAL,
                          "CRITICAL": logging.CRITICAL, "OFF": logging.CRITICAL + 10}
ROOT_LOGGER = "ROOT"
ANSWERED_TTL_SECS = 600.0


def _level(logger: str, value: Any) -> str:
    name = str(value).strip().upper()
    if name not in LEVELS:
        raise ValueError(f"logger {logger!r}: level {value!r} is not one of {', '.join(LEVELS)}")
    return name


@dataclass(frozen=True)
class LoggerLevel:
    """One logger's run-time level: ``target_level`` until ``timeout_epoch`` (0: no timeout), then
    ``reset_log_level`` (None: the level it had before the change)."""

    target_level: str
    timeout: int = 0
    timeout_epoch: float = 0.0
    reset_log_level: str | None = None

    def expired(self, now: float) -> bool:
        return self.timeout_epoch > 0 and now >= self.timeout_epoch


@dataclass(frozen=True)
class LogConfig:
    """A topology's run-time logger levels (see the module contract)."""

    named_logger_level: dict[str, LoggerLevel] = field(default_factory=dict)

    def to_value(self) -> dict[str, Any]:
        return {name: {"target_level": lv.target_level, "timeout": lv.timeout,
                       "timeout_epoch": lv.timeout_epoch, "reset_log_level": lv.reset_log_level}
                for name, lv in self.named_logger_level.items()}

    @classmethod
    def from_value(cls, value: Any, where: str = "log config") -> LogConfig:
        if value is None:
            return cls()
        if not isinstance(value, Mapping):
            raise ValueError(f"{where}: expected a map of logger names, got {type(value).__name__}")
        levels: dict[str, LoggerLevel] = {}
        for name, doc in value.items():
            if not isinstance(doc, Mapping):
                raise ValueError(f"{where}: logger {name!r} is not a map")
            reset = doc.get("reset_log_level")
            levels[str(name)] = LoggerLevel(_level(name, doc.get("target_level")),
                                            int(doc.get("timeout") or 0),
                                            float(doc.get("timeout_epoch") or 0.0),
                                            _level(name, reset) if reset else None)
        return cls(levels)

    def to_storm_json(self) -> dict[str, Any]:
        """Storm's REST document: ``{"namedLoggerLevels": {name: {target_level, reset_level,
        timeout, timeout_epoch}}}`` (epochs in milliseconds, as Storm's)."""
        return {"namedLoggerLevels": {
            name: {"target_level": lv.target_level, "reset_level": lv.reset_log_level or "",
                   "timeout": lv.timeout, "timeout_epoch": int(lv.timeout_epoch * 1000)}
            for name, lv in sorted(self.named_logger_level.items())}}


def parse_level_setting(text: str) -> tuple[str, str, int]:
    """``LOGGER=LEVEL[:TIMEOUT_SECS]`` → ``(logger, LEVEL, timeout)``; ValueError naming ``text``."""
    logger, sep, rest = text.partition("=")
    if not sep or not logger.strip() or not rest.strip():
        raise ValueError(f"log level setting {text!r} must be LOGGER=LEVEL[:TIMEOUT_SECS]")
    level, _, timeout = rest.partition(":")
    try:
        secs = int(timeout) if timeout.strip() else 0
    except ValueError:
        raise ValueError(f"log level setting {text!r}: timeout {timeout!r} is not whole seconds") from None
    if secs < 0:
        raise ValueError(f"log level setting {text!r}: timeout must be >= 0 seconds")
    return logger.strip(), _level(logger.strip(), level), secs


def read_log_config(state: ClusterState, topology_id: str) -> LogConfig:
    """The stored LogConfig of ``topology_id`` (empty when none)."""
    path = state.paths.logconfig(topology_id)
    data = state.storage.get(path)
    return LogConfig() if data is None else LogConfig.from_value(decode_value(data, path), path)


def write_log_config(state: ClusterState, topology_id: str, config: LogConfig) -> None:
    state.storage.set(state.paths.logconfig(topology_id), encode_value(config.to_value()))


def change_log_config(state: ClusterState, topology_id: str,
                      settings: Iterable[tuple[str, str, int]], resets: Iterable[str] = (),
                      *, now: float | None = None) -> LogConfig:
    """Apply ``(logger, LEVEL, timeout_secs)`` settings and logger resets; store and return the
    result. A reset logger gets its ``reset_log_level`` (or its original level) back at once:
    its entry stays with an expired timeout so the workers revert it, then they drop it."""
    now = time.time() if now is None else now
    levels = dict(read_log_config(state, topology_id).named_logger_level)
    for logger, level, timeout in settings:
        levels[logger] = LoggerLevel(level, timeout, now + timeout if timeout > 0 else 0.0,
                                     levels[logger].reset_log_level if logger in levels else None)
    for logger in resets:
        if logger in levels:
            levels[logger] = replace(levels[logger], timeout_epoch=now - 1e-3, timeout=0)
        else:
            levels[logger] = LoggerLevel("INFO", 0, now - 1e-3, None)
    config = LogConfig(levels)
    write_log_config(state, topology_id, config)
    return config


@dataclass(frozen=True)
class ControlRequest:
    """One request to a worker and, once answered, its outcome."""

    action: str
    args: dict[str, Any] = field(default_factory=dict)
    requested_at: float = 0.0
    status: str = "pending"
    result: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    answered_at: float | None = None

    def to_value(self) -> dict[str, Any]:
        return {"action": self.action, "args": dict(self.args), "requested_at": self.requested_at,
                "status": self.status, "result": dict(self.result), "error": self.error,
                "answered_at": self.answered_at}

    @classmethod
    def from_value(cls, value: Any, where: str) -> ControlRequest:
        if not isinstance(value, Mapping) or not isinstance(value.get("action"), str):
            raise ValueError(f"{where}: not a control request")
        return cls(value["action"], dict(value.get("args") or {}),
                   float(value.get("requested_at") or 0.0), str(value.get("status") or "pending"),
                   dict(value.get("result") or {}), value.get("error"), value.get("answered_at"))

    def answered(self, *, result: Mapping[str, Any] | None = None,
                 error: str | None = None) -> ControlRequest:
        return replace(self, status="failed" if error else "done", result=dict(result or {}),
                       error=error, answered_at=time.time())


def submit_request(state: ClusterState, topology_id: str, node: str, port: int, action: str,
                   args: Mapping[str, Any] | None = None) -> str:
    """Create a pending request for worker ``(node, port)``; return its znode path. The worker
    creates its request directory when it starts (so, in a secured cluster, the directory carries
    the topology's ACL and the worker may answer in it); LookupError while it does not exist."""
    parent = state.paths.worker_requests(topology_id, node, port)
    if not state.storage.exists(parent):
        raise LookupError(f"worker {node}:{port} of {topology_id} has no control channel yet "
                          "(it is starting, or runs a stormpy without one)")
    request = ControlRequest(action, dict(args or {}), time.time())
    return state.storage.create(f"{parent}/r", encode_value(request.to_value()), sequence=True,
                                makepath=False)


ANSWER_SUFFIX = ".answer"


def read_request(state: ClusterState, path: str) -> ControlRequest | None:
    """The request at ``path`` with its answer when there is one (None once deleted)."""
    answer = state.storage.get(path + ANSWER_SUFFIX)
    if answer is not None:
        return ControlRequest.from_value(decode_value(answer, path + ANSWER_SUFFIX), path)
    data = state.storage.get(path)
    return None if data is None else ControlRequest.from_value(decode_value(data, path), path)


def answer_request(state: ClusterState, path: str, request: ControlRequest) -> None:
    """Store ``request`` (answered) beside the request node, as a node the worker owns (so a
    secured topology's worker can answer requests the daemons' identity wrote)."""
    state.storage.set(path + ANSWER_SUFFIX, encode_value(request.to_value()))


def remove_request(state: ClusterState, path: str) -> None:
    """Delete a request and its answer (the requester, once it has read the answer)."""
    state.storage.delete(path + ANSWER_SUFFIX)
    state.storage.delete(path)


def pending_requests(state: ClusterState, topology_id: str, node: str, port: int,
                     *, now: float | None = None) -> list[tuple[str, ControlRequest]]:
    """The pending requests of a worker, oldest first; answered ones older than
    :data:`ANSWERED_TTL_SECS` are removed on the way, unreadable ones answered as failed."""
    now = time.time() if now is None else now
    parent = state.paths.worker_requests(topology_id, node, port)
    found = []
    children = set(state.storage.children(parent))
    for child in sorted(c for c in children if not c.endswith(ANSWER_SUFFIX)):
        path = f"{parent}/{child}"
        try:
            request = read_request(state, path)
        except ValueError as exc:  # MalformedStateError included
            answer_request(state, path, ControlRequest("?", {}, now).answered(error=str(exc)))
            continue
        if request is None:
            continue
        if request.status == "pending":
            found.append((path, request))
        elif (request.answered_at or 0.0) + ANSWERED_TTL_SECS < now:
            remove_request(state, path)
    for child in children:  # answers whose request is gone
        if child.endswith(ANSWER_SUFFIX) and child[:-len(ANSWER_SUFFIX)] not in children:
            state.storage.delete(f"{parent}/{child}")
    return found
