"""The worker's failure exception.

It lives in a module of its own that is never compiled: the executor loop may be compiled with
mypyc, and a compiled class cannot subclass a built-in exception.
"""

from __future__ import annotations


class WorkerError(RuntimeError):
    """A component raised; the worker stopped. ``component`` and ``task`` say which."""

    def __init__(self, component: str, task: int, message: str) -> None:
        super().__init__(message)
        self.component = component
        self.task = task


def caused_by(error: BaseException, cause: BaseException | None) -> BaseException:
    """``raise error from cause`` spelled out: sets ``__cause__`` and suppresses the implicit
    context. The compiled modules use it because mypyc drops the ``from`` clause."""
    error.__cause__ = cause
    error.__suppress_context__ = True
    return error
