"""On-call commands for a running topology: logs, log levels, dumps and profiles, the log server.

* ``stormpy logs NAME [-c COMPONENT] [--events] [--follow] [--grep TEXT] [-n BYTES]`` finds the
  topology's workers through Nimbus (topology info → workers' host and port → the host's log
  server, whose port the supervisor publishes) and prints each worker's log end (``--grep``: the
  matching lines, through the log servers' search), following them with ``--follow``.
  ``--events`` reads the workers' events logs (the tuples ``stormpy debug`` samples) instead; with
  ``-c`` only that component's sampled tuples are printed.
* ``stormpy set-log-level NAME -l LOGGER=LEVEL[:TIMEOUT_SECS] ... -r LOGGER ...`` has Nimbus
  store the topology's run-time log levels in ZooKeeper (:mod:`stormpy.cluster.worker_ops`); its
  workers apply them within seconds and revert them after the timeout. Without ``-l``/``-r`` it
  shows them.
* ``stormpy profile NAME --worker HOST:PORT --action jstack|cpu|heap [--seconds N]`` asks that
  worker (its control thread, through Nimbus) for a dump or profile, waits for it and prints it
  (read through the host's log server, where it stays as a file).
* ``stormpy logviewer`` runs a log server in the foreground (one per host when no supervisor of
  the host runs one).

Requests to log servers carry the UI token (``ui.auth.token``, else ``nimbus.rpc.auth.token``).
"""

from __future__ import annotations

import json
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

import click

from stormpy.cli.client_cmds import (
    EXIT_REFUSED,
    EXIT_USAGE,
    client_options,
    client_options_without_c,
    command_conf,
    fail,
    nimbus_client,
)
from stormpy.cli.output import error, say
from stormpy.client import await_worker_action, request_worker_action
from stormpy.cluster.worker_ops import parse_level_setting
from stormpy.host.daemon import STOP_SIGNALS
from stormpy.logviewer.server import LogviewerServer
from stormpy.ui._security import ui_token

__all__ = ["WorkerLogReader", "action_patience", "check_level_settings", "follow_worker_logs",
           "log_config_text", "log_readers", "logs", "logviewer", "print_action_report",
           "print_worker_logs", "profile", "read_whole", "run_worker_action", "set_log_level",
           "worker_address"]


def _get_json(url: str, token: str | None) -> Any:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read().decode())


def read_whole(server: str, token: str | None, file: str, start: int = 0) -> str:
    """File ``file`` of the log server at ``server`` from byte ``start`` to its end, read in pages
    of the server's largest answer (1 MiB), so a longer file is never cut."""
    parts = []
    while True:
        doc = _get_json(f"{server}/api/v1/log?" + urllib.parse.urlencode(
            {"file": file, "start": start, "length": 1 << 20}), token)
        parts.append(str(doc["content"]))
        start = int(doc["start"]) + int(doc["length"])
        if not doc["length"] or start >= int(doc["size"]):
            return "".join(parts)


def _workers(client: Any, name: str, component: str | None,
             events: bool = False) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Topology info and its workers (running ``component``'s tasks), each with ``logviewer``
    (``http://host:port`` of its host's log server, None when the host runs none), the
    ``topology_id`` and the ``file`` to read: the worker's log, or its events log (``events``)."""
    info = client.topology_info(name)
    servers = {s["id"]: s.get("logviewer_port") for s in client.cluster_info()["supervisors"]}
    tasks: set[int] | None = None
    if component is not None:
        components = info.get("components") or {}
        comp = components.get(component)
        if comp is None:
            fail(f"topology {name} has no component {component!r} (components: "
                 f"{', '.join(sorted(components))})", EXIT_USAGE)
        tasks = set(comp.get("task_ids", []))
    found = []
    for w in info["workers"]:
        if tasks is not None and not any(s <= t <= e for s, e in w["executors"] for t in tasks):
            continue
        port = servers.get(w["node"])
        suffix = "-events" if events else ""
        found.append({**w, "logviewer": f"http://{w['host']}:{port}" if port else None,
                      "topology_id": info["id"], "file": f"worker-{info['id']}-{w['port']}{suffix}.log"})
    return info, found


@click.command("logs")
@click.argument("name")
@click.option("-c", "--component", default=None, help="Only the workers running this component.")
@click.option("--events", is_flag=True,
              help="The workers' sampled tuples (`stormpy debug`) instead of their logs; with -c, "
                   "only that component's.")
@click.option("-f", "--follow", is_flag=True, help="Keep printing what the workers log.")
@click.option("--grep", "grep", default=None, metavar="TEXT", help="Only lines containing TEXT.")
@click.option("-n", "--bytes", "tail_bytes", type=click.IntRange(min=0), default=4096, show_default=True,
              help="Bytes of each log's end to print first.")
@client_options_without_c
def logs(name: str, component: str | None, events: bool, follow: bool, grep: str | None,
         tail_bytes: int, nimbus_address: str | None, config_file: tuple[str, ...],
         overrides: tuple[str, ...], timeout: float | None) -> None:
    """Print the logs of topology NAME's workers (read from each host's log server)."""
    token = ui_token(command_conf(config_file, overrides))
    with nimbus_client(nimbus_address, config_file, overrides, timeout) as client:
        _info, workers = _workers(client, name, component, events)
    shown = _sampled_by(component) if events and component is not None else None
    readers = log_readers(workers, token, name, component)
    print_worker_logs(readers, name, grep, shown, tail_bytes, events)
    if follow:
        follow_worker_logs(readers, grep, shown)


def log_readers(workers: list[dict[str, Any]], token: str | None, name: str,
                component: str | None) -> list[WorkerLogReader]:
    """A reader per worker whose host runs a log server; an ``error:`` line for each other one.
    No worker at all ends the command (exit 1) naming the topology (and ``component``)."""
    if not workers:
        fail(f"topology {name} has no running workers{' of ' + component if component else ''}", EXIT_REFUSED)
    for w in workers:
        if w["logviewer"] is None:
            error(f"{w['host']}:{w['port']}: its supervisor runs no log server (logviewer.port)")
    return [WorkerLogReader(w, token) for w in workers if w["logviewer"] is not None]


def print_worker_logs(readers: list[WorkerLogReader], name: str, grep: str | None,
                      shown: Callable[[str], bool] | None, tail_bytes: int, events: bool) -> None:
    """Each worker's log end (``tail_bytes``) under a ``== host:port (file) ==`` heading, or with
    ``grep`` its matching lines, each prefixed ``host:port``; ``shown`` filters the lines. A log
    server that cannot be reached or refuses is one ``error:`` line naming the worker; a missing
    events log (``events``) says how to turn sampling on."""
    for reader in readers:
        try:
            if grep is not None:
                for line in reader.grep(grep):
                    if shown is None or shown(line):
                        click.echo(f"{reader.label} {line}")
                reader.skip_to_end()
            else:
                say("[bold]== {} ({}) ==[/bold]", reader.label, reader.file)
                text = reader.tail(tail_bytes)
                if shown is not None:
                    text = "".join(f"{line}\n" for line in text.splitlines() if shown(line))
                click.echo(text, nl=False)
        except urllib.error.HTTPError as exc:
            if events and exc.code == 404:
                error(f"{reader.label}: no sampled tuples yet (turn sampling on with "
                      f"`stormpy debug {name} --enable`)")
            else:
                answer = exc.read().decode(errors="replace")
                error(f"{reader.label}: log server answered {exc.code}: {answer}")
        except OSError as exc:
            error(f"{reader.label}: cannot reach its log server {reader.server}: {exc}")


def follow_worker_logs(readers: list[WorkerLogReader], grep: str | None,
                       shown: Callable[[str], bool] | None, sleep: Callable[[float], None] = time.sleep,
                       rounds: int | None = None) -> None:
    """Every second (``sleep``), the lines the workers logged since, each prefixed ``host:port``
    (only those containing ``grep`` and passing ``shown``); a worker whose log server does not
    answer is skipped that round. Until interrupted, or ``rounds`` rounds."""
    done = 0
    while rounds is None or done < rounds:
        sleep(1.0)
        done += 1
        for reader in readers:
            try:
                text = reader.read_new()
            except (OSError, urllib.error.HTTPError):
                continue
            for line in text.splitlines():
                if (grep is None or grep in line) and (shown is None or shown(line)):
                    click.echo(f"{reader.label} {line}")


def _sampled_by(component: str) -> Callable[[str], bool]:
    """A filter of events-log lines: true for a whole line (one JSON object) sampled from
    ``component``; a partial line (where a tail starts) or any other line is false."""

    def shown(line: str) -> bool:
        try:
            event = json.loads(line)
        except ValueError:
            return False
        return isinstance(event, dict) and event.get("component") == component

    return shown


class WorkerLogReader:
    """One worker's log read through its host's log server, rotated files included.

    Contract: :meth:`grep` returns the matching lines of every file of the worker, the oldest
    rotated file (``.N``) first, the current one last. :meth:`tail` returns the current file's
    last ``n`` bytes and remembers where it ended; :meth:`read_new` returns what was written since
    (after a rotation: the rest of the file that became ``.1``, then the new file from its start),
    so following a log across a rotation loses nothing that is still on the host. A rotation is
    noticed by the current file being shorter than what was read of it (polled every second, a
    file rotates at ``worker.log.max.size.mb``, so the new file has not outgrown the old offset).
    """

    def __init__(self, worker: dict[str, Any], token: str | None) -> None:
        self.server = str(worker["logviewer"])
        self.file = str(worker["file"])
        self.topology_id = str(worker["topology_id"])
        self.port = int(worker["port"])
        self.label = f"{worker['host']}:{worker['port']}"
        self.token = token
        self.offset = 0

    def _get(self, path: str, **query: Any) -> Any:
        return _get_json(f"{self.server}/api/v1/{path}?" + urllib.parse.urlencode(query), self.token)

    def _read(self, file: str, start: int) -> dict[str, Any]:
        return dict(self._get("log", file=file, start=start, length=1 << 20))

    def files(self) -> list[str]:
        """The worker's log files, oldest first."""
        listed = self._get("listLogs", topoId=self.topology_id, port=self.port)["logs"]
        mine = [f for f in listed if f == self.file or f.startswith(self.file + ".")]
        return sorted(mine, key=lambda f: -int(f.rsplit(".", 1)[1]) if f != self.file else 1)

    def grep(self, needle: str) -> list[str]:
        lines: list[str] = []
        for file in self.files():
            start = 0
            while True:
                found = self._get("search", file=file, **{"search-string": needle,
                                                           "start-byte-offset": start,
                                                           "num-matches": 1000})
                lines.extend(m["line"] for m in found["matches"])
                following = found.get("nextByteOffset")
                if not found["matches"] or following is None or following <= start:
                    break
                start = following
        return lines

    def skip_to_end(self) -> None:
        self.offset = int(self._get("log", file=self.file, length=0)["size"])

    def tail(self, n: int) -> str:
        doc = self._get("log", file=self.file, length=n)
        self.offset = int(doc["start"]) + int(doc["length"])
        return str(doc["content"]) if n else ""

    def read_new(self) -> str:
        text = ""
        doc = self._read(self.file, self.offset)
        if doc["size"] < self.offset:  # rotated: the rest of the old file is now .1
            try:
                text += self._read_all(self.file + ".1", self.offset)
            except urllib.error.HTTPError as exc:
                if exc.code != 404:
                    raise
            doc = self._read(self.file, 0)
        text += str(doc["content"])
        self.offset = int(doc["start"]) + int(doc["length"])
        return text

    def _read_all(self, file: str, start: int) -> str:
        return read_whole(self.server, self.token, file, start)


@click.command("set-log-level")
@click.argument("name")
@click.option("-l", "settings", multiple=True, metavar="LOGGER=LEVEL[:TIMEOUT_SECS]",
              help="Set LOGGER (ROOT: the root logger) to LEVEL, for TIMEOUT_SECS if given (repeatable).")
@click.option("-r", "resets", multiple=True, metavar="LOGGER", help="Reset LOGGER now (repeatable).")
@client_options
def set_log_level(name: str, settings: tuple[str, ...], resets: tuple[str, ...],
                  nimbus_address: str | None, config_file: tuple[str, ...], overrides: tuple[str, ...],
                  timeout: float | None) -> None:
    """Change the log levels of topology NAME's workers at run time (Storm's set_log_level);
    without -l or -r, show them."""
    check_level_settings(settings)
    with nimbus_client(nimbus_address, config_file, overrides, timeout) as client:
        click.echo(log_config_text(client, name, settings, resets))


def check_level_settings(settings: tuple[str, ...]) -> None:
    """Every ``-l LOGGER=LEVEL[:TIMEOUT_SECS]`` well formed, else the command ends (exit 2) with
    the first bad one's message, before Nimbus is asked anything."""
    for setting in settings:
        try:
            parse_level_setting(setting)
        except ValueError as exc:
            fail(str(exc), EXIT_USAGE)


def log_config_text(client: Any, name: str, settings: tuple[str, ...], resets: tuple[str, ...]) -> str:
    """Nimbus's log levels of topology ``name`` as indented JSON, keys sorted: after storing
    ``settings`` and ``resets`` when there are any, else as they are."""
    if settings or resets:
        config = client.call("set_log_config", name=name, settings=list(settings), resets=list(resets))
    else:
        config = client.call("get_log_config", name=name)
    return json.dumps(config, indent=2, sort_keys=True)


@click.command("profile")
@click.argument("name")
@click.option("--worker", "worker", required=True, metavar="HOST:PORT", help="The worker to ask.")
@click.option("--action", type=click.Choice(["jstack", "cpu", "heap"]), default="jstack", show_default=True)
@click.option("--seconds", type=click.IntRange(1, 600), default=10, show_default=True,
              help="How long the CPU profile samples.")
@client_options
def profile(name: str, worker: str, action: str, seconds: int, nimbus_address: str | None,
            config_file: tuple[str, ...], overrides: tuple[str, ...], timeout: float | None) -> None:
    """Ask a worker of topology NAME for a stack dump (jstack), CPU profile or heap summary and
    print it; the report stays as a file on the worker's host, served by its log server."""
    conf = command_conf(config_file, overrides)
    host, port = worker_address(worker)
    with nimbus_client(nimbus_address, config_file, overrides, timeout) as client:
        _info, workers = _workers(client, name, None)
        target = next((w for w in workers if w["host"] == host and w["port"] == port), None)
        file = run_worker_action(client, name, host, port, action, seconds)
    print_action_report(action, worker, file, target["logviewer"] if target is not None else None,
                        ui_token(conf))


def worker_address(worker: str) -> tuple[str, int]:
    """``--worker HOST:PORT`` as (host, port); anything else ends the command (exit 2) naming
    the option and the value."""
    host, _, port_text = worker.rpartition(":")
    if not host or not port_text.isdigit():
        fail(f"--worker {worker!r} must be HOST:PORT", EXIT_USAGE)
    return host, int(port_text)


def action_patience(action: str, seconds: int) -> float:
    """How long a worker is waited for: 60 s, plus the sampling time of a CPU profile."""
    return (seconds if action == "cpu" else 0) + 60.0


def run_worker_action(client: Any, name: str, host: str, port: int, action: str, seconds: int,
                      clock: Callable[[], float] = time.monotonic,
                      sleep: Callable[[float], None] = time.sleep) -> str:
    """Ask Nimbus for ``action`` on the worker at ``host:port`` (``seconds`` of sampling for
    ``cpu``), poll its result every half second for :func:`action_patience` and return the
    report's file name. A worker that does not answer in time, or answers with an error, ends
    the command (exit 1) naming the worker."""
    request = request_worker_action(client.call, name, host, port, action,
                                    {"seconds": seconds} if action == "cpu" else {})
    patience = action_patience(action, seconds)
    answer = await_worker_action(client.call, name, request, patience, interval=0.5, clock=clock,
                                 sleep=sleep)
    if answer["status"] == "pending":
        fail(f"worker {host}:{port} did not answer within {patience:.0f} s (is it running?)", EXIT_REFUSED)
    if answer["status"] != "done":
        fail(f"worker {host}:{port}: {answer['error']}", EXIT_REFUSED)
    return str(answer["result"]["file"])


def print_action_report(action: str, worker: str, file: str, server: str | None, token: str | None) -> None:
    """Say where the report of ``action`` is (stderr), then print the whole of it from the
    worker's log server (``server``; None: the host runs none, so only where it is); a server
    that cannot be read is one ``error:`` line naming the file."""
    say("{} of {}: {} on {}", action, worker, file, server or "(no log server)", err=True)
    if server:
        try:
            click.echo(read_whole(server, token, file), nl=False)
        except OSError as exc:
            error(f"cannot read {file} from {server}: {exc}")


@click.command("logviewer")
@click.option("--config", "config_file", multiple=True, metavar="FILE|KEY=VALUE",
              help="Config file (YAML/JSON; default: $STORMPY_CONF, else ./stormpy.yaml if present), "
                   "or KEY=VALUE (repeatable).")
@click.option("-c", "overrides", multiple=True, metavar="KEY=VALUE|FILE",
              help="Config override (repeatable).")
def logviewer(config_file: tuple[str, ...], overrides: tuple[str, ...]) -> None:
    """Run the log server of this host (storm.log.dir on logviewer.port) until SIGTERM or Ctrl-C."""
    import signal

    conf = command_conf(config_file, overrides)
    try:
        server = LogviewerServer(conf).start()
    except (OSError, RuntimeError) as exc:
        error(exc, label="logviewer cannot start")
        sys.exit(1)
    stop = threading.Event()
    for signum in STOP_SIGNALS:
        signal.signal(signum, lambda *_: stop.set())
    say("log server on {} serving {}", server.url, server.log_dir.root, err=True)
    try:
        server.wait(stop)
    finally:
        server.stop()
