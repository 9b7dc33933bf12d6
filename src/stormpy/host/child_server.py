"""One server run as a child process on ``host:port``: the shape ZooKeeper and the test Kafka
broker share.

:class:`ChildServer` contract: :meth:`~ChildServer.start` picks a free port when none was given
(and picks another, up to three times, when the server's log says another process took the port
first), launches :meth:`~ChildServer.command` with its output appended to ``<work dir>/<log
name>``, and returns only once :meth:`~ChildServer.serving` is true; otherwise it raises the
subclass's ``start_error`` with the tail of the log, having stopped the process and removed a
temporary work directory. :meth:`~ChildServer.stop` sends SIGTERM, kills after a grace period,
reaps the process and removes the work directory when it was a temporary one it created;
it is idempotent. With ``die_with_parent`` (the default) the child dies with the thread that
started it on Linux, and a garbage-collected server object takes its process with it, so a killed
test run leaves nothing behind. The child runs in its own session: a Ctrl-C at the terminal
reaches the parent only, which stops the processes that use the server before the server (so
`stormpy dev-cluster` stops its daemons while ZooKeeper still serves them).

A subclass names itself (``kind``, used in errors), says how to start (:meth:`command`, optional
:meth:`prepare` to find binaries and :meth:`launch_env`) and how to tell it serves
(:meth:`serving`; an ``OSError`` there counts as "not yet").
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import weakref
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any, ClassVar, TypeVar

from stormpy.host.ports import free_port
from stormpy.host.processes import parent_death_signal, terminate_popen
from stormpy.host.waiting import WaitTimeout, wait_for

__all__ = ["ChildServer", "log_tail"]

_S = TypeVar("_S", bound="ChildServer")


def log_tail(path: Path | None, lines: int = 40) -> str:
    """The last ``lines`` lines of the log at ``path`` (reading at most its last 64 KiB); empty
    when there is no such file."""
    if path is None or not path.exists():
        return ""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - 64 * 1024))
        text = f.read().decode(errors="replace")
    return "\n".join(text.splitlines()[-lines:])


class ChildServer:
    """Base class of a server child process (see the module doc for the contract)."""

    #: what the server is called in errors ("ZooKeeper", "the Kafka broker")
    kind: ClassVar[str] = "the server"
    #: the exception :meth:`start` raises when the process exits or does not serve in time
    start_error: ClassVar[type[Exception]] = RuntimeError
    #: prefix of a temporary work directory
    temp_prefix: ClassVar[str] = "stormpy-server-"
    #: the log file's name inside the work directory
    log_name: ClassVar[str] = "server.log"
    #: how often :meth:`start` asks :meth:`serving`
    poll_secs: ClassVar[float] = 0.1
    #: :meth:`stop`'s default grace period before SIGKILL
    stop_grace_secs: ClassVar[float] = 10.0

    def __init__(self, port: int = 0, *, host: str = "127.0.0.1",
                 work_dir: str | os.PathLike[str] | None = None, startup_timeout_secs: float = 60.0,
                 die_with_parent: bool = True) -> None:
        self.host = host
        self._requested_port = port
        self._port: int | None = None
        self._requested_work_dir = Path(work_dir) if work_dir is not None else None
        self.startup_timeout_secs = startup_timeout_secs
        self.die_with_parent = die_with_parent
        self.work_dir: Path | None = None
        self.log_path: Path | None = None
        self._temp_dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    # -- what a subclass provides ----------------------------------------------------------------
    def prepare(self) -> None:
        """Called first by :meth:`start` (find binaries; raise a not-installed error)."""

    def command(self) -> list[str]:
        """The argv to launch on :attr:`port` (the work directory exists; it is the cwd)."""
        raise NotImplementedError

    def launch_env(self) -> Mapping[str, str] | None:
        """The child's environment (None: inherit this process's)."""
        return None

    def serving(self) -> bool:
        """True once the launched server answers on :attr:`port` (OSError counts as False)."""
        raise NotImplementedError

    # -- properties ------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The port (known after :meth:`start`, or when given explicitly)."""
        port = self._port or self._requested_port
        if not port:
            raise RuntimeError(f"{type(self).__name__}.port is known only after start()")
        return port

    @property
    def address(self) -> str:
        """``host:port``."""
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        """The process id while it runs."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        """True while the process is alive."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def returncode(self) -> int | None:
        """The exit status once the process has exited, else None."""
        return self._proc.poll() if self._proc is not None else None

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self: _S) -> _S:
        """Start the server and wait until it serves; return self (see the module doc)."""
        if self._proc is not None:
            raise RuntimeError(f"{type(self).__name__} already started")
        self.prepare()
        if self._requested_work_dir is None:
            self._temp_dir = Path(tempfile.mkdtemp(prefix=self.temp_prefix))
            self.work_dir = self._temp_dir
        else:
            self.work_dir = self._requested_work_dir.resolve()
            self.work_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.work_dir / self.log_name
        attempts = 1 if self._requested_port else 3
        for attempt in range(attempts):
            self._port = self._requested_port or free_port(self.host)
            try:
                self._launch()
                self._wait_until_serving()
                return self
            except self.start_error:
                port_taken = "in use" in self.log_tail().lower()
                self._halt()
                if attempt + 1 < attempts and port_taken:
                    continue  # another process took the free port first; pick another
                self._cleanup_dirs()
                raise
            except BaseException:
                self._halt()
                self._cleanup_dirs()
                raise
        raise AssertionError("unreachable")

    def _launch(self) -> None:
        assert self.log_path is not None and self.work_dir is not None
        cmd = self.command()
        self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - closed by _halt
        self._log_file.write(f"\n--- stormpy: {' '.join(cmd)}\n".encode())
        self._log_file.flush()
        env = self.launch_env()
        self._proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=self._log_file, stderr=subprocess.STDOUT,
            cwd=self.work_dir, env=dict(env) if env is not None else None,
            preexec_fn=parent_death_signal() if self.die_with_parent else None,
            start_new_session=True)
        self._finalizer = weakref.finalize(self, terminate_popen, self._proc, 5.0)

    def _wait_until_serving(self) -> None:
        proc = self._proc
        assert proc is not None

        def exited() -> None:
            code = proc.poll()
            if code is not None:
                raise self.start_error(f"{self.kind} exited with status {code} during startup "
                                       f"(log {self.log_path}):\n{self.log_tail()}")

        try:
            wait_for(self.serving, self.startup_timeout_secs, f"{self.kind} to serve",
                     interval=self.poll_secs, ignore=(OSError,), check=exited)
        except WaitTimeout:
            raise self.start_error(f"{self.kind} on {self.address} did not start serving within "
                                   f"{self.startup_timeout_secs:g} s (log {self.log_path}):\n"
                                   f"{self.log_tail()}") from None

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of the server's log (empty when there is none yet)."""
        return log_tail(self.log_path, lines)

    def _halt(self, grace_secs: float = 10.0) -> None:
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if self._proc is not None:
            terminate_popen(self._proc, grace_secs)
            self._proc = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def _cleanup_dirs(self) -> None:
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None

    def stop(self, grace_secs: float | None = None) -> None:
        """SIGTERM, SIGKILL after ``grace_secs`` (default :attr:`stop_grace_secs`), reap, and
        remove a temporary work dir; idempotent."""
        self._halt(self.stop_grace_secs if grace_secs is None else grace_secs)
        self._cleanup_dirs()

    def __enter__(self: _S) -> _S:
        if self._proc is None:
            self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
