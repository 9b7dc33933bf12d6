"""What every stormpy daemon shares: its log file, its stop request and its signal handling.

* :func:`log_to_file` is the one log set-up of Nimbus, the supervisors and the worker processes:
  one line per record, ``<time> <LEVEL> [<who>] <thread> <logger>: <message>``, INFO and up, with
  kazoo's own chatter held to WARNING.
* :class:`Daemon` is the base of the long-running daemons (Nimbus, the supervisor): subclasses
  implement ``start`` and ``stop`` (idempotent); :meth:`Daemon.request_stop` may be called from any
  thread or signal handler; :meth:`Daemon.run_forever` blocks until a stop is requested (SIGTERM and
  SIGINT request one while it runs on the main thread), then calls ``stop``.
* :func:`serve_until_stopped` runs a development server (``dev-zookeeper``, ``dev-kafka``,
  ``dev-spark``) in the foreground until SIGINT/SIGTERM or a stop event.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, Protocol

__all__ = ["STOP_SIGNALS", "Daemon", "log_to_file"]

#: The signals that stop a daemon cleanly.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def log_to_file(path: str | os.PathLike[str], who: str, *, logger: logging.Logger | None = None,
                replace: bool = False, level: int = logging.INFO,
                handler: logging.Handler | None = None) -> logging.Handler:
    """Write log records to the file ``path`` (created with its directory); return its handler.

    ``who`` names the process in every line (``"nimbus"``, ``"supervisor <id>"``,
    ``"worker <topology>:<port> pid %(process)d"``). Without ``logger`` every record of the process
    goes there: the root logger gets the handler and a level of at most ``level``, handlers it
    already had keep showing what they showed (``stormpy -v`` on stderr), or are removed first when
    ``replace``. With ``logger`` only that logger's records go there (a daemon embedded in another
    process). ``handler`` replaces the plain FileHandler on ``path`` (a rotating one, say). The
    caller removes and closes the handler when it is done.
    """
    os.makedirs(os.path.dirname(os.fspath(path)) or ".", exist_ok=True)
    handler = handler if handler is not None else logging.FileHandler(path)
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter(
        f"%(asctime)s %(levelname)s [{who}] %(threadName)s %(name)s: %(message)s"))
    if logger is not None:
        logger.setLevel(level)
        logger.addHandler(handler)
        return handler
    root = logging.getLogger()
    previous = root.level or logging.WARNING
    for existing in list(root.handlers):
        if replace:
            root.removeHandler(existing)
        elif existing.level == logging.NOTSET:
            existing.setLevel(previous)  # it keeps showing what it showed before
    root.addHandler(handler)
    root.setLevel(min(previous, level))
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    return handler


class Daemon:
    """Base of a long-running daemon (see the module docstring); ``log`` is its logger."""

    log: logging.Logger = logging.getLogger("stormpy")

    def __init__(self) -> None:
        self._stop_requested = threading.Event()

    def start(self) -> Any:
        """Start the daemon's services; raise (after cleaning up) when it cannot."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop everything :meth:`start` started; idempotent."""
        raise NotImplementedError

    def request_stop(self) -> None:
        """Make :meth:`run_forever` return and stop (any thread, signal handlers included)."""
        self._stop_requested.set()

    @property
    def stop_requested(self) -> bool:
        """True once a stop was requested."""
        return self._stop_requested.is_set()

    @contextlib.contextmanager
    def stopping_on_signals(self) -> Iterator[None]:
        """While inside, SIGTERM and SIGINT request a stop (logged); the previous handlers come back
        afterwards. Does nothing off the main thread (Python allows handlers only there)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            self.log.info("received %s", signal.Signals(signum).name)
            self.request_stop()

        previous = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def run_forever(self) -> None:
        """Block until a stop is requested (:meth:`request_stop`, SIGTERM, SIGINT), then :meth:`stop`."""
        with self.stopping_on_signals():
            try:
                while not self._stop_requested.wait(0.5):
                    pass
            finally:
                self.stop()


def serve_until_stopped(start: Callable[[], None], stop: Callable[[], None],
                        exited: Callable[[], int | None], *, stopping: str,
                        echo: Callable[[str], Any], stop_event: threading.Event | None = None) -> int:
    """Run a child server in the foreground: ``start()``, then every 0.5 s ask ``exited()``,
    which returns an exit status (non-zero: 1 when the server's own is unknown) once the server
    died on its own, having echoed why; that status is returned. SIGINT/SIGTERM (handled only
    when called from the main thread) or ``stop_event`` end it instead: ``stopping`` is echoed
    and 0 returned. ``stop()`` always runs and the previous signal handlers come back."""
    halt = stop_event or threading.Event()
    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            previous[sig] = signal.signal(sig, lambda *_: halt.set())
    try:
        start()
        while not halt.wait(0.5):
            code = exited()
            if code is not None:
                return code
        echo(stopping)
        return 0
    finally:
        stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class _ChildServer(Protocol):
    """What :func:`child_exit_watch` reads of a child server (``host.child_server.ChildServer``)."""

    @property
    def running(self) -> bool: ...

    @property
    def returncode(self) -> int | None: ...

    def log_tail(self) -> str: ...


def child_exit_watch(server: _ChildServer, name: str,
                     echo: Callable[[str], Any]) -> Callable[[], int | None]:
    """The ``exited`` of :func:`serve_until_stopped` for a child server: None while it runs;
    once it died, echoes ``"<name> exited with status N; last log lines: ..."`` and returns its
    status (1 when that is unknown or 0)."""
    def exited() -> int | None:
        if server.running:
            return None
        code = server.returncode
        echo(f"{name} exited with status {code}; last log lines:\n{server.log_tail()}")
        return code or 1
    return exited
