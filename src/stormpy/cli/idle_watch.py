"""When ``stormpy local --idle-stop N`` stops a topology: the idleness rule, apart from the CLI.

Waiting is not idleness: while a user spout tuple is pending (its tree not complete yet) or a bolt
holds tuples for a timer (a windowed bolt's next window, ``Worker.held_tuples``), the topology is
not idle, however quiet its loop is between ticks. Otherwise it is idle once, for ``N`` seconds
without a break, either

* **the loop is quiet**: the executor loop did nothing for some rounds and no background job or
  callback is pending (``Worker.is_quiet``), as for a plain topology whose spout ran dry; or
* **the user's work is done**: after the first user activity, no user activity happened. User
  activity is what a Storm user sees their topology do: emits on user streams of user
  components, and acks and fails of user spouts. System components and streams (names starting
  with ``__`` or ``$``, e.g. the checkpoint spout of a stateful topology and its ``$checkpoint``
  stream) do not count, so a stateful topology whose sentences are all counted and committed
  stops although its checkpoint spout keeps the loop busy every second.

A tuple tree still pending (a micro-batch of a Spark bolt waiting for its tick, a stateful bolt's
inputs waiting for the next commit, a tumbling window's tuples waiting for it to close) keeps a
topology running until it completes or times out; a topology that never did any user work stops
only by the first rule (or ``--ttl``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["SYSTEM_PREFIXES", "IdleWatch", "is_user_name", "user_activity", "user_pending"]

#: components and streams whose names start so are the framework's, not the user's
SYSTEM_PREFIXES = ("__", "$")


def is_user_name(name: str) -> bool:
    """True for a user component or stream (not a system one, see :data:`SYSTEM_PREFIXES`)."""
    return not name.startswith(SYSTEM_PREFIXES)


def user_activity(task_stats: Iterable[Mapping[str, Any]], spout_pending: Mapping[str, int]) -> int:
    """A count that grows with every piece of user work: emits on user streams of user components
    plus acks and fails of user spouts. ``task_stats`` are ``Worker.task_stats()`` documents;
    ``spout_pending`` (``Worker.spout_pending()``) names the spout components."""
    total = 0
    for doc in task_stats:
        component = doc["component"]
        if not is_user_name(component):
            continue
        total += sum(n for stream, n in doc["emitted"].items() if is_user_name(stream))
        if component in spout_pending:
            total += doc["acked"] + doc["failed"]
    return total


def user_pending(spout_pending: Mapping[str, int]) -> int:
    """The tuple trees the user spouts wait on (``Worker.spout_pending()`` without system spouts)."""
    return sum(n for component, n in spout_pending.items() if is_user_name(component))


class IdleWatch:
    """Feed it one observation at a time; :meth:`observe` says when the topology has been idle
    for ``idle_secs`` (see the module doc). ValueError for a negative ``idle_secs``."""

    def __init__(self, idle_secs: float) -> None:
        if idle_secs < 0:
            raise ValueError(f"--idle-stop must be 0 or more seconds, got {idle_secs!r}")
        self.idle_secs = idle_secs
        self._quiet_since: float | None = None
        self._user_idle_since: float | None = None
        self._activity: int | None = None

    def observe(self, now: float, *, loop_quiet: bool, activity: int, pending: int,
                held: int = 0) -> bool:
        """Record the state at ``now`` (monotonic seconds): whether the loop is quiet, the
        :func:`user_activity` count, the :func:`user_pending` tuples and the tuples bolts
        ``held`` for a timer. True once either rule held for ``idle_secs`` without a break."""
        waiting = pending > 0 or held > 0
        if not loop_quiet or waiting:
            self._quiet_since = None
        elif self._quiet_since is None:
            self._quiet_since = now
        if activity != self._activity:  # work just happened: idle from now at the earliest
            self._activity = activity
            self._user_idle_since = now if activity > 0 and not waiting else None
        elif activity <= 0 or waiting:
            self._user_idle_since = None
        elif self._user_idle_since is None:
            self._user_idle_since = now
        return any(since is not None and now - since >= self.idle_secs
                   for since in (self._quiet_since, self._user_idle_since))
