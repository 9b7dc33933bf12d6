"""Client commands talking to Nimbus: jar, list, kill, activate, deactivate, rebalance, info.

Every command takes ``--nimbus host:port`` (default: ``nimbus.host``/``nimbus.thrift.port`` of the
config), ``--config`` and ``-c`` (each repeatable, each a YAML/JSON FILE or KEY=VALUE: the files
first, in order, then the KEY=VALUE pairs over them; ``stormpy.config.ConfigArgs``); an
unreachable Nimbus is reported in a few seconds with exit code 3, a refused request with its
typed error and exit code 1, bad input (a config value the submit check refuses included) with 2,
each as one ``error:`` line. Requests carry the config's ``nimbus.rpc.auth.token``; each answer is
awaited ``--timeout`` seconds (default ``nimbus.rpc.timeout.secs``) with ``nimbus.rpc.retries``
retries.
"""

from __future__ import annotations

import functools
import getpass
import json
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, Task, TransferSpeedColumn
from rich.table import Table
from rich.text import Text

from stormpy.bundle import BundleError, build_bundle, unpack_bundle
from stormpy.cli.bundle_report import cluster_dirs, describe_bundle
from stormpy.cli.output import cell, console, detail, err_console, error, say, stats_table, warning
from stormpy.cli.topology_loader import TopologyLoadError, load_topology
from stormpy.client import NimbusClient
from stormpy.config import ConfigError, load_config_args, parse_config_args, topology_prefixes
from stormpy.config.validate import check_topology_config
from stormpy.rpc.errors import AuthorizationError, RpcError, RpcTimeoutError, UnreachableError
from stormpy.topology import InvalidTopologyError

F = TypeVar("F", bound=Callable[..., Any])

EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3


#: the options every client command shares (declared here, applied as each command is defined)
_TIMEOUT_OPTION = click.option("--timeout", type=float, default=None,
                               help="Seconds to wait for each Nimbus answer "
                                    "(default: nimbus.rpc.timeout.secs).")
_CONFIG_OPTION = click.option("--config", "config_file", multiple=True, metavar="FILE|KEY=VALUE",
                              help="Config file (YAML/JSON; default: $STORMPY_CONF or ./stormpy.yaml), or "
                                   "KEY=VALUE (repeatable). KEY=VALUE pairs win over files.")
_NIMBUS_OPTION = click.option("--nimbus", "nimbus_address", metavar="HOST:PORT",
                              help="Nimbus to talk to (default: nimbus.host:nimbus.thrift.port).")
_OVERRIDE_HELP = "Config override (repeatable): KEY=VALUE, or a YAML/JSON file."


def _client_option_set(overrides_option: Callable[[F], F]) -> Callable[[F], F]:
    """--nimbus, --config, the config override (``overrides_option``) and --timeout."""
    def decorate(func: F) -> F:
        return _NIMBUS_OPTION(_CONFIG_OPTION(overrides_option(_TIMEOUT_OPTION(func))))
    return decorate


#: --nimbus, --config, -c/--conf and --timeout for a client command
client_options = _client_option_set(click.option("-c", "--conf", "overrides", multiple=True,
                                                 metavar="KEY=VALUE|FILE", help=_OVERRIDE_HELP))
#: the same with the config override as ``--conf`` only, for commands whose ``-c`` names a
#: component (``stormpy logs NAME -c COMPONENT``, ``stormpy debug``)
client_options_without_c = _client_option_set(click.option("--conf", "overrides", multiple=True,
                                                           metavar="KEY=VALUE|FILE", help=_OVERRIDE_HELP))


def fail(message: str, code: int) -> NoReturn:
    error(message)
    sys.exit(code)


def command_conf(config_file: tuple[str, ...], overrides: tuple[str, ...]) -> dict[str, Any]:
    """The config a command runs with (``--config`` files and pairs, ``-c`` over them); a bad
    file or value ends the command with one ``error:`` line and exit 2."""
    try:
        return load_config_args(config_file, overrides)
    except (ConfigError, ValueError) as exc:
        fail(str(exc), EXIT_USAGE)


@contextmanager
def nimbus_client(nimbus_address: str | None, config_file: tuple[str, ...], overrides: tuple[str, ...],
                  timeout: float | None) -> Iterator[NimbusClient]:
    """A connected-looking client (timeout, retries and auth token from the config, ``timeout``
    overriding); turns RPC errors into clear messages and exit codes."""
    try:
        conf = load_config_args(config_file, overrides)
        client = NimbusClient.from_config(
            conf, nimbus_address, remember=True, **({"timeout_secs": timeout} if timeout is not None else {}))
    except (ConfigError, ValueError) as exc:
        fail(str(exc), EXIT_USAGE)
    try:
        client.check_reachable()
        yield client
    except UnreachableError as exc:
        fail(f"cannot reach Nimbus: {exc.message}", EXIT_UNREACHABLE)
    except RpcTimeoutError as exc:
        fail(f"Nimbus did not answer: {exc.message}", EXIT_UNREACHABLE)
    except AuthorizationError as exc:
        fail(f"AuthorizationError: {exc.message} (set nimbus.rpc.auth.token to Nimbus's token, in "
             "stormpy.yaml or with -c)", EXIT_REFUSED)
    except RpcError as exc:
        kind = exc.remote_type or type(exc).__name__
        fail(f"{kind}: {exc.message}", EXIT_REFUSED)
    finally:
        client.close()


def _with_client(func: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(func)
    def wrapper(nimbus_address: str | None, config_file: tuple[str, ...], overrides: tuple[str, ...],
                timeout: float | None, **kwargs: Any) -> None:
        with nimbus_client(nimbus_address, config_file, overrides, timeout) as client:
            func(client, **kwargs)
    return wrapper


def print_wide(renderable: Any) -> None:
    """Print a table without truncating ids when stdout is not a terminal (pipes, scripts)."""
    if console.is_terminal:
        console.print(renderable)
    else:
        Console(width=max(console.width, 160)).print(renderable)


# -- jar --------------------------------------------------------------------------------------------
@click.command("jar")
@click.argument("path", type=click.Path(exists=True))
@click.argument("target", metavar="MODULE[:ATTR]")
@click.option("--name", help="Topology name (default: the module name).")
@click.option("--inactive", is_flag=True,
              help="Submit inactive: no spout opens and no bolt prepares until activated.")
@client_options
def jar(path: str, target: str, name: str | None, inactive: bool, nimbus_address: str | None,
        config_file: tuple[str, ...], overrides: tuple[str, ...], timeout: float | None) -> None:
    """Bundle PATH (a directory, or a prebuilt bundle .zip), upload it and submit MODULE[:ATTR].

    KEY=VALUE overrides (-c or --config) become the topology's config (over the module's
    ``config`` dict), and so do the topology.* keys (and connectors' keys) of the config files
    given with -c or --config, except nimbus.rpc.auth.token, which only authenticates this
    command. The default file ($STORMPY_CONF or ./stormpy.yaml) only configures this command
    (which Nimbus, its token), as Storm's storm.yaml does for `storm jar`: give it with --config
    to submit its topology.* keys too. The config passes the submit check before PATH is
    bundled and uploaded; a bad value is one error line."""
    topo_overrides = submitted_overrides(config_file, overrides)
    with nimbus_client(nimbus_address, config_file, overrides, timeout) as client, \
            tempfile.TemporaryDirectory(prefix="stormpy-jar-") as tmp:
        source = Path(path)
        try:
            if source.is_dir():
                loaded = load_topology(source, target)
            else:
                code = Path(tmp) / "code"
                unpack_bundle(source, code)
                loaded = load_topology(code, target)
            conf: dict[str, Any] = {**loaded.config, **topo_overrides}
            conf.setdefault("topology.submitter.user", _user())
            # the submit check (client.submit runs it again) before anything is bundled or shown
            check_topology_config(conf, loaded.spec.components)
            if source.is_dir():
                own = cluster_dirs(load_config_args(config_file, overrides))
                bundle = build_bundle(source, Path(tmp) / "bundle.zip", exclude=own)
                bundle_path, size = bundle.path, bundle.size
                root = source.resolve()
                say("{}", describe_bundle(bundle, {d.relative_to(root).as_posix(): key for d, key
                                                   in own.items() if d.is_relative_to(root)}))
            else:
                bundle_path, size = source, source.stat().st_size
        except (TopologyLoadError, InvalidTopologyError, BundleError, ConfigError) as exc:
            fail(str(exc), EXIT_USAGE)
        topo_name = name or default_topology_name(loaded.module)
        with Progress("[progress.description]{task.description}", BarColumn(),
                      DownloadColumn(binary_units=True), _UploadSpeed(), console=err_console,
                      transient=False) as progress:
            task = progress.add_task(f"uploading {cell(source.name)}", total=size)
            # submit() starts over on the new leader if the Nimbus leader changes meanwhile
            try:
                topology_id = client.submit(
                    topo_name, bundle_path, loaded.spec.to_doc(), conf, active=not inactive,
                    progress=lambda sent, _total: progress.update(task, completed=sent))
            except (ConfigError, InvalidTopologyError) as exc:
                progress.stop()
                fail(str(exc), EXIT_USAGE)
        say("submitted topology [bold]{}[/bold] as {}{}", topo_name, topology_id,
            " (inactive)" if inactive else "")
        for text in client.warnings:
            warning(text)


def submitted_overrides(config_file: tuple[str, ...], overrides: tuple[str, ...]) -> dict[str, Any]:
    """What ``jar`` adds to the topology's config: the topology (and connector) keys of the
    ``--config``/``-c`` files, then every KEY=VALUE pair over them, never
    ``nimbus.rpc.auth.token`` (a secret, not stored with the topology). A bad file or pair ends
    the command (exit 2) with its error."""
    try:
        given = parse_config_args((*config_file, *overrides))
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    prefixes = topology_prefixes()
    topo_overrides = {**{k: v for k, v in given.files.items() if k.startswith(prefixes)},
                      **given.pairs}
    topo_overrides.pop("nimbus.rpc.auth.token", None)
    return topo_overrides


def default_topology_name(module: str) -> str:
    """The name ``jar`` submits under without ``--name``: the module's last dotted part."""
    return module.rpartition(".")[2]


class _UploadSpeed(TransferSpeedColumn):
    """The upload's speed, blank (not rich's ``?``) while none is known yet."""

    def render(self, task: Task) -> Text:
        if (task.finished_speed or task.speed) is None:
            return Text("")
        return super().render(task)


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return ""


# -- list -------------------------------------------------------------------------------------------
@click.command("list")
@client_options
@_with_client
def list_topologies(client: NimbusClient) -> None:
    """List the running topologies (and the supervisors' slot usage)."""
    show_cluster(client)


def show_cluster(client: NimbusClient) -> None:
    """The ``list`` output: a table of the running topologies (``No topologies running.``
    without any), a ``degraded:`` line per degraded one, then the supervisors' slot usage and
    the Nimbus answering."""
    info = client.cluster_info()
    topologies = info.get("topologies")
    if not topologies:
        console.print("No topologies running.")
    else:
        table = Table(title="topologies")
        for col in ("name", "id", "status", "workers", "executors", "uptime (s)", "restarts"):
            numeric = col in ("workers", "executors", "uptime (s)", "restarts")
            table.add_column(col, justify="right" if numeric else "left", no_wrap=True)
        for t in topologies:
            status = f"{t['status']} (degraded)" if t.get("degraded") else t["status"]
            table.add_row(cell(t["name"]), cell(t["id"]), cell(status),
                          f"{t['num_workers']}/{t['requested_workers']}",
                          str(t["num_executors"]), f"{t['uptime_secs']:.0f}",
                          str(t.get("worker_restarts", "")))
        print_wide(table)
        for t in topologies:
            if t.get("degraded"):
                say("[red]degraded:[/red] {}: {}", t["name"], t["degraded"])
    sups = info.get("supervisors", [])
    used = sum(s["slots_used"] for s in sups)
    total = sum(s["slots_total"] for s in sups)
    say("{} supervisor(s), {}/{} slots used; Nimbus {}:{}", len(sups), used, total,
        info.get("nimbus", {}).get("host"), info.get("nimbus", {}).get("port"))


# -- kill / activate / deactivate / rebalance --------------------------------------------------------
@click.command("kill")
@click.argument("name")
@click.option("-w", "--wait", "wait_secs", type=float, default=None,
              help="Seconds between deactivation and removal (default: topology.message.timeout.secs).")
@client_options
@_with_client
def kill(client: NimbusClient, name: str, wait_secs: float | None) -> None:
    """Kill topology NAME: deactivate it, wait, then remove its workers and state."""
    kill_topology(client, name, wait_secs)


def kill_topology(client: NimbusClient, name: str, wait_secs: float | None) -> None:
    """Have Nimbus kill ``name`` after ``wait_secs`` (None: its message timeout) and say so."""
    client.kill(name, wait_secs)
    wait = "its message timeout" if wait_secs is None else f"{wait_secs:g} s"
    say("killing topology [bold]{}[/bold]; it is removed after {}", name, wait)


@click.command("activate")
@click.argument("name")
@client_options
@_with_client
def activate(client: NimbusClient, name: str) -> None:
    """Activate topology NAME (its spouts emit again)."""
    set_active(client, name, True)


def set_active(client: NimbusClient, name: str, active: bool) -> None:
    """Have Nimbus activate (``active``) or deactivate topology ``name`` and say which."""
    if active:
        client.activate(name)
    else:
        client.deactivate(name)
    say("{} topology [bold]{}[/bold]", "activated" if active else "deactivated", name)


@click.command("deactivate")
@click.argument("name")
@client_options
@_with_client
def deactivate(client: NimbusClient, name: str) -> None:
    """Deactivate topology NAME (its spouts stop emitting; in-flight tuples finish)."""
    set_active(client, name, False)


def _executor_counts(values: tuple[str, ...]) -> dict[str, int]:
    out = {}
    for item in values:
        comp, sep, n = item.partition("=")
        if not sep or not comp or not n.isdigit() or int(n) < 1:
            raise click.BadParameter(f"{item!r} must look like component=N with N >= 1", param_hint="-e")
        out[comp] = int(n)
    return out


@click.command("rebalance")
@click.argument("name")
@click.option("-w", "--wait", "wait_secs", type=float, default=None,
              help="Seconds to stay deactivated before rescheduling "
                   "(default: topology.message.timeout.secs).")
@click.option("-n", "--num-workers", type=click.IntRange(min=1), default=None, help="New number of workers.")
@click.option("-e", "--executors", "executor_args", multiple=True, metavar="COMPONENT=N",
              help="New executor count of a component (repeatable).")
@client_options
@_with_client
def rebalance(client: NimbusClient, name: str, wait_secs: float | None, num_workers: int | None,
              executor_args: tuple[str, ...]) -> None:
    """Spread topology NAME over a new number of workers and/or executors."""
    rebalance_topology(client, name, wait_secs, num_workers, executor_args)


def rebalance_topology(client: NimbusClient, name: str, wait_secs: float | None, num_workers: int | None,
                       executor_args: tuple[str, ...]) -> None:
    """Have Nimbus rebalance ``name`` (``-e COMPONENT=N`` checked first) and say so."""
    executors = _executor_counts(executor_args)
    client.rebalance(name, wait_secs, num_workers, executors or None)
    say("rebalancing topology [bold]{}[/bold]", name)


# -- info -------------------------------------------------------------------------------------------
_ZERO = {"emitted": 0, "transferred": 0, "executed": 0, "acked": 0, "failed": 0}


@click.command("info")
@click.argument("name")
@click.option("--system", is_flag=True, help="Also show system components (__acker).")
@client_options
@_with_client
def topology_info(client: NimbusClient, name: str, system: bool) -> None:
    """Show topology NAME: status, workers, per-component stats and last errors."""
    show_topology(client, name, system)


def show_topology(client: NimbusClient, name: str, system: bool) -> None:
    """The ``info`` output: the topology's status line, its ``degraded:`` reason and warnings,
    the workers table, the per-component stats (system components with ``system``), each
    task's metrics and each component's last error with its traceback."""
    info = client.topology_info(name)
    say("[bold]{}[/bold] ({}): {}, {}/{} workers, {} executors, up {} s", info["name"], info["id"],
        info["status"], info["num_workers"], info["requested_workers"], info["num_executors"],
        f"{info['uptime_secs']:.0f}")
    if info.get("degraded"):
        say("[red]degraded:[/red] {}", info["degraded"])
    for text in info.get("warnings") or ():
        warning(text)
    workers = Table(title="workers")
    for col in ("host", "port", "node", "executors", "uptime (s)", "heartbeat age (s)", "restarts",
                "last exit"):
        workers.add_column(col, no_wrap=col not in ("node", "last exit"), overflow="fold")
    for w in info["workers"]:
        workers.add_row(cell(w["host"]), str(w["port"]), cell(w["node"]), str(len(w["executors"])),
                        "" if w["uptime_secs"] is None else f"{w['uptime_secs']:.0f}",
                        "" if w["heartbeat_age_secs"] is None else f"{w['heartbeat_age_secs']:.1f}",
                        str(w.get("restarts", "")), cell(w.get("last_exit") or ""))
    print_wide(workers)
    stats: dict[str, dict[str, Any]] = {}
    for comp, desc in info.get("components", {}).items():
        if comp.startswith("__") and not system:
            continue
        stats[comp] = {**_ZERO, "tasks": desc["tasks"]}
    sources = {**info.get("stats", {}), **(info.get("system_components", {}) if system else {})}
    for comp, s in sources.items():
        stats[comp] = {**stats.get(comp, _ZERO), **s}
    print_wide(stats_table(f"topology {info['name']}", stats))
    for comp, tasks in info.get("metrics", {}).items():
        for task, metrics in tasks.items():
            for metric, value in metrics.items():
                say("[bold]{}[/bold] task {} metric [bold]{}[/bold]: {}", comp, task, metric,
                    json.dumps(value, sort_keys=True, default=str))
    for comp, errors in info.get("errors", {}).items():
        last = errors[-1]
        detail("[red]last error of {}[/red] (task {}, {}:{}):", last["message"], comp, last["task"],
               last["host"], last["port"], err=False)


topology_info_alias = click.Command("topology-info", callback=topology_info.callback,
                                    params=topology_info.params, help=topology_info.help)
