"""What ShellBolt and ShellSpout share: the command, its directory and environment, the declared
outputs, one :class:`~stormpy.multilang._process.ShellProcess` per task, the commands both sides
of the protocol take (``log``, ``error``, ``metrics``), and faults with restarts.

A fault (the subprocess died, hung, wrote garbage, sent an unknown command or an id it was never
given) is reported as an error of the task (``report_error``: ``stormpy info``, the UI,
``LocalCluster.errors``) naming the component, the task and what was sent; the owner then drops
what the subprocess held (a bolt fails its pending tuples, so reliable spouts replay them) and
the SUBPROCESS is restarted (not the worker: its other tasks keep running), at once after the
first fault, then with an exponential backoff (0.5 s doubling up to 30 s) while faults follow each
other within 30 s. A delayed restart is kept by one :class:`~stormpy.host.service.Service` per
task (``multilang-restart-<component>:<task>``, started at the first delayed restart), which
hands the restart to the executor loop when the backoff's delay is over; stopping the component
stops that service and cancels a restart still due.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Self

from stormpy.config import setting
from stormpy.host.backoff import Backoff
from stormpy.host.service import Service
from stormpy.multilang._process import ShellProcess
from stormpy.multilang._protocol import LOG_LEVELS, handshake, heartbeat_period, subprocess_timeout
from stormpy.multilang._serializers import SERIALIZER_KEY, Codec, codec_for, codec_named
from stormpy.topology._context import TopologyContext
from stormpy.topology._streams import Stream, normalize_outputs

__all__ = ["QUEUED_METRIC", "SERIALIZER_ENV", "ShellComponentError", "ShellSettings", "declared_config",
           "declared_outputs", "outputs_as_doc", "outputs_doc", "python_command"]

#: the child's environment names the serializer too (pystorm's runner reads it)
SERIALIZER_ENV = "STORMPY_MULTILANG_SERIALIZER"
#: the task metric: messages queued for the subprocess, not yet written to its stdin
QUEUED_METRIC = "multilangQueued"
#: a subprocess that ran this long before its fault restarts at once again
_STABLE_SECS = 30.0
#: the restart service's round when no restart is due (a wake runs it early)
_RESTART_IDLE_SECS = 3600.0


class ShellComponentError(RuntimeError):
    """A fault of a shell component's subprocess (reported through ``report_error``)."""


def declared_outputs(cls: type, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
    """The streams of a shell component: ``outputs`` from its kwargs (``.declare(...)``), else the
    class's ``outputs`` when a subclass sets it. ValueError when neither does: Storm asks every
    shell component to declare its outputs (``{}`` declares none)."""
    outputs = kwargs.get("outputs")
    if outputs is None:
        outputs = getattr(cls, "outputs", None)
    if outputs is None:
        raise ValueError(f"{cls.__name__} declares no outputs: pass them with "
                         f"{cls.__name__}(...).declare(['field', ...]) (or a {{stream: fields}} "
                         "map; {} for none)")
    return normalize_outputs(outputs_doc(outputs, cls.__qualname__), cls.__qualname__)


def outputs_doc(outputs: Any, owner: str) -> Any:
    """``outputs`` in a form msgpack carries and ``normalize_outputs`` takes: stream objects
    (ours, or streamparse's ``Stream(fields, name, direct)``) become ``Stream``s built from their
    attributes; ``{stream: {"fields": [...], "direct": bool}}`` maps are read the same way."""
    def stream(item: Any, name: str | None = None) -> Any:
        if isinstance(item, Mapping) and "fields" in item:
            return Stream(list(item["fields"]), name=name or item.get("name") or "default",
                          direct=bool(item.get("direct", False)))
        if not isinstance(item, (str, list, tuple, Stream)) and hasattr(item, "fields"):
            return Stream(list(item.fields), name=getattr(item, "name", None) or name or "default",
                          direct=bool(getattr(item, "direct", False)))
        return item
    if isinstance(outputs, Mapping):
        return {name: stream(spec, name) for name, spec in outputs.items()}
    if isinstance(outputs, (list, tuple)):
        return [stream(item) for item in outputs]
    raise ValueError(f"{owner}: outputs must be a list of fields or streams, or a map of stream "
                     f"to fields, got {outputs!r}")


def outputs_as_doc(streams: Mapping[str, Stream]) -> dict[str, dict[str, Any]]:
    """Declared streams as plain data (component kwargs): ``{name: {"fields", "direct"}}``."""
    return {name: {"fields": s.fields.to_list(), "direct": s.direct} for name, s in streams.items()}


def declared_config(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """A shell component's own config: ``serializer=`` sets ``topology.multilang.serializer`` for
    its tasks (the topology's setting otherwise)."""
    serializer = kwargs.get("serializer")
    return {SERIALIZER_KEY: serializer} if serializer is not None else {}


class ShellSettings:
    """The constructor arguments of a shell component, checked (TypeError/ValueError naming the
    bad one)."""

    def __init__(self, args: Sequence[str], command: Sequence[str] | None, cwd: str | None,
                 env: Mapping[str, str] | None, outputs: Any, serializer: str | None = None) -> None:
        if args and command is not None:
            raise TypeError("give the command either as arguments or as command=[...], not both")
        cmd = list(args) if args else list(command or ())
        if not cmd or not all(isinstance(part, str) and part for part in cmd):
            raise ValueError(f"a shell component needs a command: non-empty strings, got {cmd!r}")
        if cwd is not None and not isinstance(cwd, str):
            raise TypeError(f"cwd must be a path string, got {cwd!r}")
        if env is not None and not (isinstance(env, Mapping) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
            raise TypeError(f"env must map strings to strings, got {env!r}")
        self.command = cmd
        self.cwd = cwd
        self.env = dict(env) if env else None
        self.outputs = outputs
        if serializer is not None:
            codec_named(serializer)  # refuse an unknown name now
        self.serializer = serializer

    def kwargs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"command": self.command}
        if self.cwd is not None:
            out["cwd"] = self.cwd
        if self.env is not None:
            out["env"] = self.env
        if self.outputs is not None:
            out["outputs"] = self.outputs
        if self.serializer is not None:
            out["serializer"] = self.serializer
        return out

    def directory(self, conf: Mapping[str, Any]) -> str:
        """Where the command runs: ``cwd`` inside the topology's code dir (the worker's
        ``worker.code.dir``; in local mode the current directory). ValueError for a ``cwd``
        leading out of it."""
        base = os.path.realpath(setting(conf, "worker.code.dir") or os.getcwd())
        where = os.path.realpath(os.path.join(base, self.cwd)) if self.cwd else base
        if os.path.commonpath([base, where]) != base:
            raise ValueError(f"cwd {self.cwd!r} leads out of the topology's code dir {base}")
        if not os.path.isdir(where):
            raise ValueError(f"cwd {self.cwd!r}: no directory {where}")
        return where


class ShellHost:
    """One task's subprocess and its life cycle, and the component's description (command,
    outputs, config) shared by ``ShellBolt`` and ``ShellSpout``; the component mixes it in and
    implements ``_on_command(msg)`` (its own commands) and ``_on_fault_dropped()`` (drop what the
    dead subprocess held), and calls ``_start_shell`` in ``open``/``prepare``."""

    command: ClassVar[Sequence[str] | None] = None
    outputs: ClassVar[Any] = None
    component_config: ClassVar[Mapping[str, Any]]  # the Bolt or Spout base defines it
    _shell: ShellSettings
    _process: ShellProcess | None
    _watched = False

    def __init__(self, *args: str, command: Sequence[str] | None = None, cwd: str | None = None,
                 env: Mapping[str, str] | None = None, outputs: Any = None,
                 serializer: str | None = None) -> None:
        if not args and command is None:
            command = type(self).command
        self._shell = ShellSettings(args, command, cwd, env, outputs, serializer)

    def declare(self, outputs: Any) -> Self:
        """Declare the output streams (fields for the default stream, or ``{stream: fields}``);
        returns this component for ``set_bolt``/``set_spout``. Bad outputs are refused here."""
        self._shell.outputs = outputs
        declared_outputs(type(self), self._shell.kwargs())
        return self

    @property
    def component_class(self) -> type[Self]:
        return type(self)

    @property
    def component_kwargs(self) -> dict[str, Any]:
        return self._shell.kwargs()

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        return declared_outputs(cls, kwargs)

    @classmethod
    def declare_config(cls, kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
        return {**cls.component_config, **declared_config(kwargs)}

    def _start_shell(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self._conf = conf
        self._context = context
        self._name = f"{context.component_id}:{context.task_id}"
        self._log = logging.getLogger(f"stormpy.multilang.{context.component_id}")
        self._codec: Codec = codec_for(conf)
        self._timeout = subprocess_timeout(conf)
        self._cwd = self._shell.directory(conf)
        env = dict(os.environ)
        env.update(self._shell.env or {})
        env[SERIALIZER_ENV] = self._codec.name
        self._env = env
        self._metric_values: dict[str, Any] = {}
        self._backoff = Backoff(0.5, 30.0, free_failures=1)
        self._restart_due = False  # a delayed restart waits for the backoff's next_attempt
        self._restarter = Service(f"multilang-restart-{self._name}", self._restart_round,
                                  interval=_RESTART_IDLE_SECS, log=self._log)
        self._closing = False
        self._generation = 0
        self._started_at = 0.0
        self._process = None
        context.register_metric(QUEUED_METRIC, self._queued)
        self._spawn()

    def _queued(self) -> int:
        proc = self._process
        return proc.queued if proc is not None else 0

    def _restart_round(self) -> float | None:
        """The restart service's round: hand a due restart to the loop; else sleep until due."""
        if not self._restart_due:
            return None
        now = time.monotonic()
        if not self._backoff.ready(now):
            return self._backoff.next_attempt - now
        self._restart_due = False
        self.call_soon_threadsafe(self._spawn)  # type: ignore[attr-defined]
        return None

    def _spawn(self) -> None:
        self._restart_due = False
        if self._closing:
            return
        self._generation += 1
        proc = ShellProcess(self._name, self._shell.command, self._cwd, self._env, self._codec,
                            self._timeout, heartbeat_period(self._timeout),
                            self.call_soon_threadsafe,  # type: ignore[attr-defined]
                            self._on_message, self._on_fault, heartbeat=self._heartbeat_source(),
                            on_ready=self._on_ready, on_room=self._on_room,
                            max_pending=self._write_limit())
        proc.always_watched = self._watched
        self._started_at = time.monotonic()
        try:
            proc.start(lambda pid_dir: handshake(self._context, pid_dir))
        except OSError as exc:
            self._process = None
            self._fault(f"cannot start {self._shell.command!r} in {self._cwd}: {exc}")
            return
        self._process = proc
        self._on_started()

    def _on_message(self, msg: Any) -> None:
        try:
            self._on_command(msg)
        except Exception as exc:
            self._on_fault(f"{exc} (it sent {msg!r:.200})")

    def _on_fault(self, text: str) -> None:
        self._fault(text)

    def _fault(self, text: str) -> None:
        proc, self._process = self._process, None
        if proc is not None:
            proc.stop(wait=False)
        if self._closing:
            return
        error = ShellComponentError(f"shell process of {self._name} "
                                    f"({' '.join(self._shell.command)}): {text}")
        self._log.error("%s", error)
        self.report_error(error)  # type: ignore[attr-defined]
        self._on_fault_dropped()
        if time.monotonic() - self._started_at > _STABLE_SECS:
            self._backoff.reset()
        now = time.monotonic()
        due = self._backoff.failed_at(now)
        if due <= now:
            self._spawn()
            return
        self._log.warning("restarting the shell process of %s in %.1f s", self._name, due - now)
        self._restart_due = True
        self._restarter.start()
        self._restarter.wake()

    def _common_command(self, command: str, msg: Mapping[str, Any]) -> None:
        """``log``, ``error`` and ``metrics``, the same for bolts and spouts."""
        if command == "log":
            level = msg.get("level", 2)
            self._log.log(LOG_LEVELS.get(level, logging.INFO) if isinstance(level, int)
                          else logging.INFO, "%s: %s", self._name, msg["msg"])
        elif command == "error":
            self.report_error(ShellComponentError(  # type: ignore[attr-defined]
                f"Shell Process Exception ({self._name}): {msg['msg']}"))
        elif command == "metrics":
            name = msg["name"]
            if not isinstance(name, str) or not name:
                raise ValueError(f"metrics with a bad name {name!r}")
            if name not in self._metric_values:
                self._context.register_metric(name, lambda: self._metric_values[name])
            self._metric_values[name] = msg.get("params")

    def _stop_shell(self) -> None:
        self._closing = True
        self._restart_due = False
        self._restarter.stop()
        proc, self._process = self._process, None
        if proc is not None:
            proc.stop(wait=True)

    # --- for the component --------------------------------------------------------------------

    def _heartbeat_source(self) -> Callable[[], Any] | None:
        """A function the watchdog calls each period for a message to send (or None)."""
        return None

    def _on_started(self) -> None:
        """The subprocess of a new generation was started (the handshake is on its way)."""

    def _on_ready(self) -> None:
        """The subprocess answered the handshake with its pid."""

    def _write_limit(self) -> int:
        """Most counted messages (tuples) queued for the subprocess's stdin; 0: no limit."""
        return 0

    def _on_room(self) -> None:
        """The writer made room after :meth:`ShellProcess.want_room` (on the loop)."""

    def _on_command(self, msg: Any) -> None:
        raise NotImplementedError

    def _on_fault_dropped(self) -> None:
        raise NotImplementedError


def python_command(module: str, *args: str) -> list[str]:
    """``python -m module args...`` with this interpreter."""
    return [sys.executable, "-m", module, *args]
