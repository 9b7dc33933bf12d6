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
(else ``supervisor.worker.timeout.secs``) has hung. Faults: :mod:`stormpy.multilang.shell`; the
tuples the dead subprocess held are failed (reliable spouts replay them).

Writes go through the subprocess's writer thread, so ``execute`` never blocks; tuples arriving
while a subprocess restarts are kept and sent to the new one.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Mapping
from typing import Any

from stormpy.multilang.protocol import (
    BOLT_COMMANDS,
    HEARTBEAT_STREAM,
    ProtocolError,
    check_command,
    max_pending,
)
from stormpy.multilang.shell import ShellHost
from stormpy.topology.component import Bolt
from stormpy.topology.context import TopologyContext
from stormpy.topology.tuple import DEFAULT_STREAM, Tuple

__all__ = ["ShellBolt"]


class ShellBolt(ShellHost, Bolt):
    """A bolt run by a subprocess (see the module doc). ``ShellBolt(*command, cwd=, env=)``
    with ``.declare(outputs)``, or a subclass setting ``command`` and ``outputs``; pass either to
    ``TopologyBuilder.set_bolt``."""

    _watched = True

    # --- running -----------------------------------------------------------------------------

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self._pending: dict[str, Tuple] = {}
        self._held: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._heartbeat_out = False
        self._max_pending = max_pending(conf)
        self._start_shell(conf, context)

    def execute(self, tup: Tuple) -> None:
        tid = str(next(self._ids))
        self._pending[tid] = tup
        msg = {"id": tid, "comp": tup.component, "stream": tup.stream, "task": tup.task,
               "tuple": tup.values}
        proc = self._process
        if proc is None:
            self._held.append(msg)
            return
        try:
            proc.send(msg)
        except (TypeError, ValueError) as exc:
            del self._pending[tid]
            self.report_error(ValueError(f"{self._name}: tuple {tup!r:.200} cannot be sent to "
                                         f"the subprocess ({self._codec.name}): {exc}"))
            self.fail(tup)

    def cleanup(self) -> None:
        self._stop_shell()

    def _on_started(self) -> None:
        self._heartbeat_out = False
        held, self._held = self._held, []
        if self._process is not None:
            for msg in held:
                self._process.send(msg)

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
        self._held = []
        for tup in pending.values():
            self.fail(tup)
