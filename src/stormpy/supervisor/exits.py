"""What a supervisor knows about its workers' exits and restarts, as it publishes it.

Contract:

* :class:`WorkerExits` keeps, per worker slot (port) and the topology assigned there, how many
  times its worker was restarted (it exited, or was stopped for a stale or missing heartbeat), the
  last exit's reason and time, and how many times in a row it exited within
  :data:`~stormpy.supervisor.sync.QUICK_EXIT_SECS` of its launch. A slot whose topology changes
  starts afresh; a slot no longer assigned here is forgotten (:meth:`WorkerExits.retain`).
* The reason of an exit is ``exit code N`` followed by the last error its worker logged since its
  launch (the last ``ERROR`` line of the worker log, else the log's last line), so a newcomer sees
  ``exit code 1: ... FileNotFoundError: [Errno 2] No such file or directory: 'access.log'``
  without opening the log.
* :meth:`WorkerExits.records` is the msgpack-ready list published in the supervisor's ZooKeeper
  record (``SupervisorInfo.workers``): ``topology_id``, ``port``, ``restarts``, ``last_exit``,
  ``last_exit_time``, ``quick_exits`` and ``crash_looping`` (at least :data:`CRASH_LOOP_EXITS`
  quick exits in a row and no worker on the slot that has run :data:`QUICK_EXIT_SECS` since).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stormpy.supervisor.sync import QUICK_EXIT_SECS

__all__ = ["CRASH_LOOP_EXITS", "LOG_TAIL_BYTES", "WorkerExits", "last_logged_error"]

#: quick exits in a row that make a slot "crash looping"
CRASH_LOOP_EXITS = 2
#: how much of a worker log's end is searched for its last error
LOG_TAIL_BYTES = 64 * 1024
_REASON_CHARS = 400


def last_logged_error(log_path: Path, since_offset: int = 0) -> str | None:
    """The message of the last ``ERROR`` line the worker logged at or after byte ``since_offset``
    of ``log_path`` (else its last non-empty line there); None when there is nothing."""
    try:
        with open(log_path, "rb") as f:
            size = f.seek(0, 2)
            start = max(since_offset, size - LOG_TAIL_BYTES, 0)
            f.seek(start)
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    for line in reversed(lines):
        if " ERROR [" in line or " CRITICAL [" in line:
            # "<time> ERROR [worker ...] <thread> <logger>: <message>"
            message = line.split("] ", 1)[-1]
            message = message.split(": ", 1)[-1] if ": " in message else message
            return message[:_REASON_CHARS]
    return lines[-1][:_REASON_CHARS]


@dataclass
class _Slot:
    topology_id: str
    restarts: int = 0
    quick_exits: int = 0
    last_exit: str | None = None
    last_exit_time: float | None = None


class WorkerExits:
    """The exit record of every worker slot of one supervisor (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slots: dict[int, _Slot] = {}

    def _slot(self, topology_id: str, port: int) -> _Slot:
        slot = self._slots.get(port)
        if slot is None or slot.topology_id != topology_id:
            slot = self._slots[port] = _Slot(topology_id)
        return slot

    def exited(self, topology_id: str, port: int, reason: str, ran_secs: float, now: float) -> None:
        """The worker of ``topology_id`` on ``port`` exited (or was stopped to be restarted) after
        ``ran_secs``; ``reason`` says why."""
        with self._lock:
            slot = self._slot(topology_id, port)
            slot.restarts += 1
            slot.quick_exits = slot.quick_exits + 1 if ran_secs < QUICK_EXIT_SECS else 0
            slot.last_exit = reason
            slot.last_exit_time = now

    def retain(self, assigned: Mapping[int, str]) -> None:
        """Forget the slots not assigned here to the same topology (``assigned``: port → id)."""
        with self._lock:
            for port in [p for p, s in self._slots.items() if assigned.get(p) != s.topology_id]:
                del self._slots[port]

    def records(self, running: Iterable[tuple[int, float]], now: float) -> list[dict[str, Any]]:
        """The published records (see the module docstring); ``running``: (port, launch time) of
        the workers running now."""
        launched = dict(running)
        out = []
        with self._lock:
            for port, slot in sorted(self._slots.items()):
                ran = now - launched[port] if port in launched else 0.0
                out.append({"topology_id": slot.topology_id, "port": port, "restarts": slot.restarts,
                            "last_exit": slot.last_exit, "last_exit_time": slot.last_exit_time,
                            "quick_exits": slot.quick_exits,
                            "crash_looping": slot.quick_exits >= CRASH_LOOP_EXITS and ran < QUICK_EXIT_SECS})
        return out
