"""ShellProcess: one subprocess speaking the multilang protocol, driven from the executor loop.

The loop never waits on the subprocess. Per subprocess three daemon threads and a service do the
waiting:

* the reader reads its stdout, decodes messages (:mod:`.serializers`) and hands them to the loop:
  they queue in an inbox and ONE ``call_soon`` (the task's off-loop seam) is pending at a time to
  drain it, so a burst of messages costs one hand-off;
* the writer takes encoded messages from an unbounded queue the loop fills (``send`` never
  blocks) and writes whatever is queued in one write. Tuples sent with ``send(msg, counted=True)``
  are counted until written (:attr:`tuples_queued`): the owner keeps the count under
  ``max_pending`` (Storm's ``topology.shellbolt.max.pending``) and, when it is reached, calls
  :meth:`want_room` to get ``on_room()`` on the loop once the writer has written some;
* the watchdog (a :class:`~stormpy.host.service.Service` named ``multilang-watchdog-<name>``)
  runs a round every heartbeat period (1 s, or a third of the timeout): it asks the owner for a
  heartbeat message to send (bolts) and reports a hang when the process has been silent for the
  timeout while the owner waits on it, then stops.

stderr is read line by line into the log, and its last lines are kept: the fault of a process that
exited ends with them (``exited (exit code 1); its stderr ended with: ...``), so the error a user
sees carries the subprocess's own traceback. Faults (the process died, wrote garbage, hung, a pipe
broke) reach the owner on the loop, in order after the messages read before them, as
``on_fault(text)``; after a fault or ``stop`` nothing more is delivered.

The first message must be ``{"pid": n}`` (the answer to the handshake): it is checked here and
not delivered.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from stormpy.host.service import Service
from stormpy.multilang._serializers import Codec, GarbageError

__all__ = ["ShellProcess"]

log = logging.getLogger("stormpy.multilang")

_READ_CHUNK = 1 << 16
#: how long a stopped process gets between SIGTERM and SIGKILL
_TERM_GRACE = 1.0
#: the last lines of stderr kept for the fault of an exited process
STDERR_TAIL_LINES = 20


class _Fault:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class ShellProcess:
    """One subprocess: start with :meth:`start`, talk with :meth:`send`, end with :meth:`stop`.

    ``call_soon(fn)`` must run ``fn`` on the owner's loop (thread-safe); ``on_message(msg)`` and
    ``on_fault(text)`` are then called there, and ``on_ready()`` once the pid arrived.
    ``heartbeat()`` (on the watchdog thread) returns a message to send at each period or None.
    The owner sets :attr:`waiting_since` (a ``time.monotonic()`` value) while it waits on the
    process, or :attr:`always_watched` for a process that must answer heartbeats at all times
    (bolts).
    """

    def __init__(self, name: str, command: Sequence[str], cwd: str, env: Mapping[str, str],
                 codec: Codec, timeout: float, period: float,
                 call_soon: Callable[[Callable[[], None]], None],
                 on_message: Callable[[Any], None], on_fault: Callable[[str], None],
                 heartbeat: Callable[[], Any] | None = None,
                 on_ready: Callable[[], None] | None = None,
                 on_room: Callable[[], None] | None = None, max_pending: int = 0) -> None:
        self.name = name
        self.command = list(command)
        self.cwd = cwd
        self.env = dict(env)
        self.codec = codec
        self.timeout = timeout
        self.period = period
        self._call_soon = call_soon
        self._on_message = on_message
        self._on_fault = on_fault
        self._heartbeat = heartbeat
        self._on_ready = on_ready
        self._on_room = on_room
        #: most tuples queued for the writer before the owner holds back more (0: no limit)
        self.max_pending = max_pending
        # tuples counted into the queue (only the loop adds) and out of it (only the writer)
        self._tuples_sent = 0
        self._tuples_written = 0
        self._room_wanted = False
        self.pid: int | None = None
        self.always_watched = False
        self.waiting_since: float | None = None
        self.last_heard = time.monotonic()
        self._inbox: deque[Any] = deque()
        self._drain_pending = False
        self._lock = threading.Lock()
        self._out: queue.SimpleQueue[tuple[bytes, bool] | None] = queue.SimpleQueue()
        self._stopped = threading.Event()
        self._finished = False  # on the loop: a fault was delivered or stop() ran
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid_dir = ""
        self._threads: list[threading.Thread] = []
        self._stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._stderr_done = threading.Event()
        self._watchdog = Service(f"multilang-watchdog-{name}", self._watch, interval=period,
                                 first_delay=period, log=log)

    # --- the loop's side ----------------------------------------------------------------------

    def start(self, handshake: Callable[[str], Mapping[str, Any]]) -> None:
        """Start the command and send ``handshake(pid_dir)``; OSError when it cannot start."""
        self._pid_dir = tempfile.mkdtemp(prefix="stormpy-multilang-pids-")
        try:
            self._proc = subprocess.Popen(
                self.command, cwd=self.cwd, env=self.env, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0, start_new_session=True)
        except OSError:
            shutil.rmtree(self._pid_dir, ignore_errors=True)
            raise
        self.waiting_since = time.monotonic()  # until the pid arrives
        for target, what in ((self._read, "reader"), (self._write, "writer"),
                             (self._read_stderr, "stderr")):
            t = threading.Thread(target=target, name=f"multilang-{what}-{self.name}", daemon=True)
            t.start()
            self._threads.append(t)
        self._watchdog.start()
        self.send(dict(handshake(self._pid_dir)))

    def send(self, msg: Any, counted: bool = False) -> None:
        """Queue ``msg`` for the subprocess (never blocks); ``counted`` (a tuple): count it in
        :attr:`tuples_queued` until it is written. Encoding errors (TypeError, ValueError) are
        raised here, and then nothing was queued."""
        data = self.codec.encode(msg)
        if counted:
            self._tuples_sent += 1
        self._out.put((data, counted))

    @property
    def queued(self) -> int:
        """Messages waiting for the writer thread."""
        return self._out.qsize()

    @property
    def tuples_queued(self) -> int:
        """Tuples (``send(..., counted=True)``) not yet written to the subprocess's stdin."""
        return self._tuples_sent - self._tuples_written

    def has_room(self) -> bool:
        """Fewer than ``max_pending`` tuples wait for the writer (always, without a limit)."""
        return self.max_pending <= 0 or self._tuples_sent - self._tuples_written < self.max_pending

    def want_room(self) -> bool:
        """Call on the loop when :meth:`has_room` was False: True when there is room by now;
        otherwise ``on_room()`` runs on the loop once the writer has made some (once per call)."""
        self._room_wanted = True
        if self.has_room():  # the writer may have written meanwhile, before it saw the flag
            self._room_wanted = False
            return True
        return False

    def _room(self) -> None:
        if not self._finished and self._on_room is not None:
            self._on_room()

    @property
    def running(self) -> bool:
        return not self._finished

    @property
    def os_pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def stop(self, wait: bool = True) -> None:
        """End the subprocess (SIGTERM to its process group, SIGKILL after a grace) and its threads;
        nothing more is delivered. With ``wait`` False the reaping happens on a thread."""
        self._finished = True
        if self._stopped.is_set():
            return
        self._stopped.set()
        self._watchdog.request_stop()
        self._out.put(None)
        if wait:
            self._reap()
        else:
            threading.Thread(target=self._reap, name=f"multilang-reap-{self.name}",
                             daemon=True).start()

    def _reap(self) -> None:
        proc = self._proc
        if proc is not None:
            # the command runs in a session of its own: end its whole process group, so that
            # what a wrapper script started goes too (only while the leader is unreaped: its
            # pid is then still ours)
            if proc.poll() is None:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(_TERM_GRACE)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)  # not reaped: wait() timed out
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(_TERM_GRACE)
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                with contextlib.suppress(OSError):
                    if pipe is not None:
                        pipe.close()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(_TERM_GRACE)
        self._watchdog.stop(_TERM_GRACE)
        shutil.rmtree(self._pid_dir, ignore_errors=True)

    def _drain(self) -> None:
        with self._lock:
            self._drain_pending = False
        inbox = self._inbox
        while inbox and not self._finished:
            msg = inbox.popleft()
            if isinstance(msg, _Fault):
                self._finished = True
                self._on_fault(msg.text)
                return
            if self.pid is None:
                if isinstance(msg, dict) and isinstance(msg.get("pid"), int):
                    self.pid = msg["pid"]
                    self.waiting_since = None
                    if self._on_ready is not None:
                        self._on_ready()
                    continue
                self._finished = True
                self._on_fault(f"expected the handshake's pid message, got {msg!r:.200}")
                return
            self._on_message(msg)

    # --- threads ------------------------------------------------------------------------------

    def _hand(self, item: Any) -> None:
        self._inbox.append(item)
        with self._lock:
            if self._drain_pending:
                return
            self._drain_pending = True
        self._call_soon(self._drain)

    def _fault(self, text: str) -> None:
        if not self._stopped.is_set():
            self._hand(_Fault(text))

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        decoder = self.codec.decoder()
        while True:
            try:
                data = os.read(fd, _READ_CHUNK)
            except OSError as exc:
                self._fault(f"reading its output failed: {exc}")
                return
            if not data:
                code = None
                with contextlib.suppress(subprocess.TimeoutExpired):
                    code = self._proc.wait(_TERM_GRACE)
                self._fault(f"subprocess exited (exit code {code}){self._stderr_ending()}"
                            if code is not None else "subprocess closed its output")
                return
            try:
                msgs = decoder.feed(data)
            except GarbageError as exc:
                self._fault(f"sent garbage: {exc}")
                return
            if msgs:
                self.last_heard = time.monotonic()
                for msg in msgs:
                    self._hand(msg)

    def _write(self) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        fd = self._proc.stdin.fileno()
        out = self._out
        while True:
            item = out.get()
            chunks: list[bytes] = []
            counted = 0
            stop = False
            while item is not None:
                chunks.append(item[0])
                if item[1]:
                    counted += 1
                if len(chunks) >= 1024:
                    break
                try:
                    item = out.get_nowait()
                except queue.Empty:
                    break
            else:
                stop = True
            data = memoryview(b"".join(chunks))
            try:
                while data:
                    data = data[os.write(fd, data):]
            except OSError as exc:
                code = None  # a broken pipe: the subprocess most likely exited
                with contextlib.suppress(subprocess.TimeoutExpired):
                    code = self._proc.wait(_TERM_GRACE)
                self._fault(f"subprocess exited (exit code {code}); writing to it failed: {exc}"
                            f"{self._stderr_ending()}"
                            if code is not None else f"writing to it failed: {exc}")
                return
            if counted:
                self._tuples_written += counted  # only this thread writes it
                if self._room_wanted and self.has_room():
                    self._room_wanted = False
                    self._call_soon(self._room)
            if stop:
                return

    def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        try:
            for line in iter(self._proc.stderr.readline, b""):
                text = line.decode("utf-8", "replace").rstrip()
                self._stderr_tail.append(text)
                log.info("%s stderr: %s", self.name, text)
        except (OSError, ValueError):  # the pipe was closed by stop()
            pass
        finally:
            self._stderr_done.set()

    def _stderr_ending(self) -> str:
        """For the fault of an exited process: its last stderr lines (read to the end, waiting
        up to a grace period), or nothing when it wrote none."""
        self._stderr_done.wait(_TERM_GRACE)
        tail = [line for line in list(self._stderr_tail) if line.strip()]
        if not tail:
            return ""
        return "; its stderr ended with:\n" + "\n".join(tail)

    def _watch(self) -> None:
        """One watchdog round (see the module docstring)."""
        if self._stopped.is_set():
            self._watchdog.request_stop()
            return
        now = time.monotonic()
        since = self.waiting_since
        if self.always_watched or since is not None:
            quiet_from = max(self.last_heard, since) if since is not None else self.last_heard
            if now - quiet_from > self.timeout:
                self._watchdog.request_stop()
                self._fault(f"subprocess heartbeat timeout: nothing heard for "
                            f"{now - quiet_from:.1f} s (timeout {self.timeout:g} s)")
                return
        if self._heartbeat is not None and self.pid is not None:
            msg = self._heartbeat()
            if msg is not None:
                self.send(msg)
