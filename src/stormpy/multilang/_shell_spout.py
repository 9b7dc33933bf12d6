"""ShellSpout: a spout whose tuples come from a subprocess speaking Storm's multilang protocol.

    builder.set_spout("sentences", ShellSpout("node", "spout.js").declare(["sentence"]))

The host sends one command at a time and waits (off the loop) for the subprocess's ``sync``
before the next: ``next`` when the worker calls ``next_tuple`` (as often as
``topology.max.spout.pending`` and backpressure allow), ``ack``/``fail`` with the message id the
subprocess gave its ``emit``, ``activate``/``deactivate`` with the topology. Emits carry
``tuple``, ``id`` (the message id; none: untracked), ``stream``, ``task`` (a direct emit) and
``need_task_ids`` (default true: the task ids are answered, except to direct emits, as Storm).

A subprocess that leaves a command unanswered for ``topology.subprocess.timeout.secs`` (else
``supervisor.worker.timeout.secs``) has hung. After a fault (:mod:`stormpy.multilang._shell`) the
new subprocess gets only the ack/fail of message ids it emitted itself: those of the dead one are
dropped (logged), since no process holds them any more; the source behind a spout must be able
to replay them (as with a worker restart on Storm).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping
from typing import Any

from stormpy.multilang._protocol import SPOUT_COMMANDS, check_command
from stormpy.multilang._shell import ShellHost
from stormpy.topology._component import Spout
from stormpy.topology._context import TopologyContext
from stormpy.topology._tuple import DEFAULT_STREAM

__all__ = ["ShellSpout"]


class ShellSpout(ShellHost, Spout):
    """A spout run by a subprocess (see the module doc). ``ShellSpout(*command, cwd=, env=)``
    with ``.declare(outputs)``, or a subclass setting ``command`` and ``outputs``."""

    # --- running -----------------------------------------------------------------------------

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self._commands: deque[dict[str, Any]] = deque()
        self._busy = False
        self._ready = False
        self._start_shell(conf, context)

    def next_tuple(self) -> None:
        if not self._busy and not self._commands:
            self._send({"command": "next"})
        else:
            self._pump()

    def ack(self, msg_id: Any) -> None:
        self._queue("ack", msg_id)

    def fail(self, msg_id: Any) -> None:
        self._queue("fail", msg_id)

    def activate(self) -> None:
        self._commands.append({"command": "activate"})
        self._pump()

    def deactivate(self) -> None:
        self._commands.append({"command": "deactivate"})
        self._pump()

    def close(self) -> None:
        self._stop_shell()

    def _queue(self, command: str, msg_id: Any) -> None:
        generation, sub_id = msg_id
        if generation != self._generation:
            self._log.info("%s: %s of message id %r dropped: the subprocess that emitted it "
                           "was restarted", self._name, command, sub_id)
            return
        self._commands.append({"command": command, "id": sub_id})
        self._pump()

    def _pump(self) -> None:
        if not self._busy and self._commands:
            self._send(self._commands.popleft())

    def _send(self, msg: dict[str, Any]) -> None:
        proc = self._process
        if proc is None or not self._ready:
            if msg["command"] != "next":
                self._commands.appendleft(msg)
            return
        self._busy = True
        proc.waiting_since = time.monotonic()
        proc.send(msg)

    def _on_started(self) -> None:
        self._busy = False
        self._ready = False

    def _on_ready(self) -> None:
        self._ready = True
        self._pump()

    def _on_command(self, msg: Any) -> None:
        command = check_command(msg, SPOUT_COMMANDS)
        if command == "sync":
            self._busy = False
            if self._process is not None:
                self._process.waiting_since = None
            self._pump()
        elif command == "emit":
            sub_id = msg.get("id")
            msg_id = None if sub_id is None else (self._generation, sub_id)
            stream = msg.get("stream") or DEFAULT_STREAM
            task = msg.get("task")
            if task is not None:
                self.emit_direct(task, msg["tuple"], msg_id, stream)
            else:
                tasks = self.emit(msg["tuple"], msg_id, stream)
                if msg.get("need_task_ids", True) and self._process is not None:
                    self._process.send(list(tasks))
        else:
            self._common_command(command, msg)

    def _on_fault_dropped(self) -> None:
        self._busy = False
        self._commands = deque(c for c in self._commands if c["command"] in
                               ("activate", "deactivate"))
