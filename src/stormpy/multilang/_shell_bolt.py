"""ShellBolt: a bolt whose work is done by a subprocess speaking Storm's multilang protocol.

    builder.set_bolt("split", ShellBolt("python3", "splitsentence.py", cwd="multilang")
                     .declare(["word"]), 4).shuffle_grouping("sentences")

or, as on Storm, a subclass fixing the command and the outputs::

    class SplitSentence(ShellBolt):
        command = ("python3", "splitsentence.py")
        outputs = ["word"]

Each task starts the command in its own subprocess (working directory ``cwd`` inside the
topology's code dir, the worker's environment plus ``env``; ``serializer=`` sets
``topology.multilang.serializer`` for this component), sends it the handshake, then every
input tuple (tick tuples included) with a fresh string id; the subprocess's ``emit`` (anchored to
ids it was given; ``task`` for a direct emit; task ids answered unless ``need_task_ids`` is false),
``ack``, ``fail``, ``log``, ``error``, ``metrics`` and ``sync`` are carried out on the executor
loop. Every heartbeat period the bolt sends a heartbeat tuple (stream ``__heartbeat``, task -1)
unless one is unanswered; a subprocess that sends nothing for ``topology.subprocess.timeout.secs``
(else ``supervisor.worker.timeout.secs``) has hung. Faults: :mod:`stormpy.multilang._shell`; the
tuples the dead subprocess held are failed (reliable spouts replay them).

Writes go through the subprocess's writer thread, so ``execute`` never blocks. At most
``topology.shellbolt.max.pending`` tuples wait for that thread (written to the subprocess's stdin
as fast as it reads); further tuples wait in the bolt, in arrival order, and go out as the writer
makes room (Storm blocks the executor there instead). Tuples arriving while a subprocess
restarts, or waiting for room when it faulted, are kept and sent to the new one.
"""

from __future__ import annotations

import itertools
import random
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from stormpy.multilang._process import ShellProcess
from stormpy.multilang._protocol import (
    BOLT_COMMANDS,
    HEARTBEAT_STREAM,
    ProtocolError,
    check_command,
    max_pending,
)
from stormpy.multilang._shell import ShellHost
from stormpy.topology._component import Bolt
from stormpy.topology._context import TopologyContext
from stormpy.topology._tuple import DEFAULT_STREAM, Tuple

__all__ = ["WAITING_METRIC", "ShellBolt"]

#: the task metric: tuples waiting in the bolt for room under topology.shellbolt.max.pending
WAITING_METRIC = "multilangWaiting"


class ShellBolt(ShellHost, Bolt):
    """A bolt run by a subprocess (see the module doc). ``ShellBolt(*command, cwd=, env=)``
    with ``.declare(outputs)``, or a subclass setting ``command`` and ``outputs``; pass either to
    ``TopologyBuilder.set_bolt``."""

    _watched = True

    # --- running -----------------------------------------------------------------------------

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self._pending: dict[str, Tuple] = {}  # given to the subprocess, not acked or failed yet
        self._waiting: deque[Tuple] = deque()  # not given yet: no subprocess, or no room
        self._ids = itertools.count(1)
        self._heartbeat_out = False
        self._max_pending = max_pending(conf)
        context.register_metric(WAITING_METRIC, lambda: len(self._waiting))
        self._start_shell(conf, context)

    def execute(self, tup: Tuple) -> None:
        proc = self._process
        if self._waiting or proc is None or not proc.has_room():
            self._waiting.append(tup)
            if proc is not None and len(self._waiting) == 1 and proc.want_room():
                self._on_room()
            return
        self._give(proc, tup)

    def _give(self, proc: ShellProcess, tup: Tuple) -> None:
        tid = str(next(self._ids))
        msg = {"id": tid, "comp": tup.component, "stream": tup.stream, "task": tup.task,
               "tuple": tup.values}
        try:
            proc.send(msg, counted=True)
        except (TypeError, ValueError) as exc:
            self.report_error(ValueError(f"{self._name}: tuple {tup!r:.200} cannot be sent to "
                                         f"the subprocess ({self._codec.name}): {exc}"))
            self.fail(tup)
            return
        self._pending[tid] = tup

    def _on_room(self) -> None:
        """Give waiting tuples, in order, while the writer has room; ask again when it has not."""
        waiting = self._waiting
        while waiting:
            proc = self._process
            if proc is None:
                return  # the next subprocess takes them (_on_started)
            while waiting and proc.has_room():
                self._give(proc, waiting.popleft())
            if not waiting or not proc.want_room():
                return

    def cleanup(self) -> None:
        self._stop_shell()
        self._waiting.clear()

    def _write_limit(self) -> int:
        return self._max_pending

    def _on_started(self) -> None:
        self._heartbeat_out = False
        self._on_room()

    def _heartbeat_source(self) -> Callable[[], Any] | None:
        def heartbeat() -> Any:
            if self._heartbeat_out:
                return None
            self._heartbeat_out = True
            return {"id": str(random.getrandbits(62)), "comp": None, "stream": HEARTBEAT_STREAM,
                    "task": -1, "tuple": []}
        return heartbeat

    def _on_command(self, msg: Any) -> None:
        command = check_command(msg, BOLT_COMMANDS)
        if command == "emit":
            anchors = []
            for a in msg.get("anchors") or ():
                tup = self._pending.get(a) if isinstance(a, str) else None
                if tup is None:
                    raise ProtocolError(f"emit anchored onto unknown tuple id {a!r} (never "
                                        "given, or already acked or failed)")
                anchors.append(tup)
            stream = msg.get("stream") or DEFAULT_STREAM
            task = msg.get("task")
            if task is not None:
                self.emit_direct(task, msg["tuple"], anchors, stream)
            else:
                tasks = self.emit(msg["tuple"], anchors, stream)
                if msg.get("need_task_ids", True) and self._process is not None:
                    self._process.send(list(tasks))
        elif command == "ack" or command == "fail":
            tup = self._pending.pop(msg["id"], None) if isinstance(msg["id"], str) else None
            if tup is None:
                raise ProtocolError(f"{command} of unknown tuple id {msg['id']!r} (never given, "
                                    "or already acked or failed)")
            if command == "ack":
                self.ack(tup)
            else:
                self.fail(tup)
        elif command == "sync":
            self._heartbeat_out = False
        else:
            self._common_command(command, msg)

    def _on_fault_dropped(self) -> None:
        pending, self._pending = self._pending, {}
        for tup in pending.values():  # the waiting ones were never given: the next one gets them
            self.fail(tup)
