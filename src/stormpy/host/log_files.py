"""A worker's log file with a size cap: rotation that carries stdout and stderr along.

Contract of :class:`CappedLogHandler`: a :class:`logging.handlers.RotatingFileHandler` on
``path`` (``max_bytes`` per file, ``backups`` older files ``path.1`` … ``path.N``, the oldest
dropped), so one worker's logs never exceed ``max_bytes * (backups + 1)`` bytes. With
``capture_stdio`` the process's file descriptors 1 and 2 are pointed at the current file at start
and after every rollover, so ``print`` output and tracebacks written by the interpreter land in the
same, rotated file (the supervisor starts workers with stdout and stderr on their log file).
Output written only through stdout or stderr is judged by :func:`rotate_full_logs`, which the
worker's control thread calls every round (so such a file may exceed the cap by what is written
in one round). ``max_bytes`` 0 disables rotation. The standard library only.
"""

from __future__ import annotations

import contextlib
import logging
import logging.handlers
import os
import sys

__all__ = ["CappedLogHandler", "rotate_full_logs"]

_NO_LOCK = contextlib.nullcontext()


def rotate_full_logs(logger: logging.Logger | None = None) -> None:
    """:meth:`CappedLogHandler.rotate_if_full` on every such handler of ``logger`` (the root's)."""
    for handler in (logger or logging.getLogger()).handlers:
        if isinstance(handler, CappedLogHandler):
            handler.rotate_if_full()


class CappedLogHandler(logging.handlers.RotatingFileHandler):
    """See the module contract."""

    def __init__(self, path: str | os.PathLike[str], max_bytes: int, backups: int, *,
                 capture_stdio: bool = False) -> None:
        os.makedirs(os.path.dirname(os.fspath(path)) or ".", exist_ok=True)
        super().__init__(path, maxBytes=max(0, int(max_bytes)), backupCount=max(1, int(backups)))
        self.capture_stdio = capture_stdio
        self._point_stdio()

    def _point_stdio(self) -> None:
        if not self.capture_stdio or self.stream is None:
            return
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        for fd in (1, 2):
            try:
                os.dup2(self.stream.fileno(), fd)
            except OSError:
                pass

    def rotate_if_full(self) -> bool:
        """Roll over now when the file reached ``max_bytes`` (output written only through stdout
        or stderr triggers no log record: the worker's control thread calls this every round)."""
        if self.maxBytes <= 0 or self.stream is None:
            return False
        with self.lock if self.lock is not None else _NO_LOCK:
            try:
                full = os.fstat(self.stream.fileno()).st_size >= self.maxBytes
            except OSError:
                return False
            if full:
                self.doRollover()
            return full

    def doRollover(self) -> None:  # noqa: N802 - the logging API's name
        super().doRollover()
        self._point_stdio()

    def shouldRollover(self, record: logging.LogRecord) -> int:  # noqa: N802
        # print() output written through fd 1/2 grows the file behind the handler's back:
        # judge by the file's real size, not the stream position alone
        if self.maxBytes > 0 and self.stream is not None:
            try:
                if os.fstat(self.stream.fileno()).st_size >= self.maxBytes:
                    return 1
            except OSError:
                pass
        return super().shouldRollover(record)
