"""Storm's multilang protocol: the handshake, the commands each side may send, the settings.

Host → subprocess: the handshake ``{"conf", "context", "pidDir"}``; to bolts, tuples
``{"id", "comp", "stream", "task", "tuple"}`` (heartbeats: stream ``__heartbeat``, task -1) and
task-id answers to emits (a bare list); to spouts, ``{"command": next|ack|fail|activate|
deactivate}`` (``ack``/``fail`` with ``id``), each answered by ``sync`` once the subprocess is done.

Subprocess → host: ``{"pid"}`` once (it also writes an empty file named by its pid in
``pidDir``), then commands: ``emit`` (``tuple``; optional ``stream``, ``anchors`` (bolts), ``id``
(spouts), ``task`` (a direct emit), ``need_task_ids``, default true), ``ack``/``fail`` (bolts,
``id``), ``log`` (``msg``, ``level`` 0 trace ... 4 error), ``error`` (``msg``), ``metrics``
(``name``, ``params``), ``sync``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from stormpy.config import setting
from stormpy.config.multilang import (
    MAX_PENDING_KEY,
    SUBPROCESS_TIMEOUT_KEY,
    max_pending_value,
    subprocess_timeout_value,
)
from stormpy.topology._context import TopologyContext

__all__ = ["BOLT_COMMANDS", "HEARTBEAT_STREAM", "LOG_LEVELS", "MAX_PENDING_KEY", "SPOUT_COMMANDS",
           "SUBPROCESS_TIMEOUT_KEY", "WORKER_TIMEOUT_KEY", "ProtocolError", "check_command",
           "handshake", "heartbeat_period", "max_pending", "subprocess_timeout"]

HEARTBEAT_STREAM = "__heartbeat"
WORKER_TIMEOUT_KEY = "supervisor.worker.timeout.secs"

#: multilang log levels (STORM-414) → Python's
LOG_LEVELS = {0: 5, 1: logging.DEBUG, 2: logging.INFO, 3: logging.WARNING, 4: logging.ERROR}

#: command → the keys it must carry
BOLT_COMMANDS: dict[str, tuple[str, ...]] = {
    "emit": ("tuple",), "ack": ("id",), "fail": ("id",), "log": ("msg",), "error": ("msg",),
    "metrics": ("name",), "sync": ()}
SPOUT_COMMANDS: dict[str, tuple[str, ...]] = {
    "emit": ("tuple",), "log": ("msg",), "error": ("msg",), "metrics": ("name",), "sync": ()}


class ProtocolError(ValueError):
    """The subprocess sent something the protocol does not allow (the message says what)."""


def _short(msg: Any) -> str:
    text = repr(msg)
    return text if len(text) <= 200 else text[:200] + "..."


def check_command(msg: Any, commands: Mapping[str, tuple[str, ...]]) -> str:
    """The command of ``msg``; ProtocolError quoting it when it is not a map, names an unknown
    command or lacks a key its command needs (``tuple`` must be a list)."""
    if not isinstance(msg, dict):
        raise ProtocolError(f"expected a command map, got {_short(msg)}")
    command = msg.get("command")
    needed = commands.get(command) if isinstance(command, str) else None
    if needed is None or not isinstance(command, str):
        raise ProtocolError(f"unknown command {command!r} in {_short(msg)}")
    for key in needed:
        if key not in msg:
            raise ProtocolError(f"{command} without {key!r}: {_short(msg)}")
    if command == "emit" and not isinstance(msg["tuple"], list):
        raise ProtocolError(f"emit of a non-list tuple: {_short(msg)}")
    return command


def subprocess_timeout(conf: Mapping[str, Any]) -> float:
    """Seconds a subprocess may stay silent: ``topology.subprocess.timeout.secs`` when set, else
    ``supervisor.worker.timeout.secs`` (as Storm); SettingError for a non-positive value."""
    key = SUBPROCESS_TIMEOUT_KEY if conf.get(SUBPROCESS_TIMEOUT_KEY) is not None \
        else WORKER_TIMEOUT_KEY
    return subprocess_timeout_value(setting(conf, key), key)


def max_pending(conf: Mapping[str, Any]) -> int:
    """``topology.shellbolt.max.pending``: how many tuples a shell bolt task may have queued for
    its subprocess, not yet written to its stdin (Storm's default 100 when unset or None);
    SettingError for anything but an integer >= 1."""
    return max_pending_value(setting(conf, MAX_PENDING_KEY))


def heartbeat_period(timeout: float) -> float:
    """How often the host checks a subprocess (and sends bolts a heartbeat): every second as
    Storm, more often when the timeout is shorter than three seconds."""
    return min(1.0, timeout / 3)


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def handshake(context: TopologyContext, pid_dir: str) -> dict[str, Any]:
    """The first message to a subprocess: the topology's config (the values JSON can carry), the
    task's context as Storm gives it, and the directory for its pid file."""
    spec = context.spec
    me = spec.components[context.component_id]
    conf = {k: v for k, v in context.conf.items() if isinstance(k, str) and _jsonable(v)}
    conf.setdefault("topology.name", context.topology_id)
    sources: dict[str, dict[str, list[str]]] = {}
    for sub in me.inputs:
        fields = spec.stream_fields(sub.component, sub.stream).to_list()
        sources.setdefault(sub.component, {})[sub.stream] = fields
    targets: dict[str, dict[str, Any]] = {}
    for other in spec.components.values():
        for sub in other.inputs:
            if sub.component == context.component_id:
                targets.setdefault(sub.stream, {})[other.id] = sub.grouping.to_doc()
    ctx = {
        "taskid": context.task_id,
        "componentid": context.component_id,
        "task->component": {str(t): c for t, c in context.layout.task_component.items()},
        "streams": sorted(me.streams),
        "stream->outputfields": {s: st.fields.to_list() for s, st in me.streams.items()},
        "source->stream->fields": sources,
        "stream->target->grouping": targets,
    }
    return {"conf": conf, "context": ctx, "pidDir": pid_dir}
