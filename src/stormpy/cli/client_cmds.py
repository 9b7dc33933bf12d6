"""Client commands talking to Nimbus: jar, list, kill, activate, deactivate, rebalance, info.

Every command takes ``--nimbus host:port`` (default: ``nimbus.host``/``nimbus.thrift.port`` of the
config), ``--config FILE`` and ``-c key=value``; an unreachable Nimbus is reported in a few seconds
with exit code 3, a refused request with its typed error and exit code 1, bad input with 2.
Requests carry the config's ``nimbus.rpc.auth.token``; each answer is awaited ``--timeout``
seconds (default ``nimbus.rpc.timeout.secs``) with ``nimbus.rpc.retries`` retries.
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
from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn
from rich.table import Table

from stormpy.bundle import BundleError, build_bundle, unpack_bundle
from stormpy.cli.output import console, err_console, stats_table
from stormpy.cli.topology_loader import TopologyLoadError, load_topology
from stormpy.client import NimbusClient
from stormpy.config import ConfigError, load_config, parse_override, parse_overrides
from stormpy.rpc.errors import AuthorizationError, RpcError, RpcTimeoutError, UnreachableError
from stormpy.topology import InvalidTopologyError

F = TypeVar("F", bound=Callable[..., Any])

EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3


def client_options(func: F) -> F:
    """--nimbus, --config, -c and --timeout for a client command."""
    func = click.option("--timeout", type=float, default=None,
                        help="Seconds to wait for each Nimbus answer "
                             "(default: nimbus.rpc.timeout.secs).")(func)
    func = click.option("-c", "--conf", "overrides", multiple=True, metavar="KEY=VALUE",
                        help="Config override (repeatable).")(func)
    func = click.option("--config", "config_file", type=click.Path(dir_okay=False),
                        help="stormpy.yaml to read (default: $STORMPY_CONF or ./stormpy.yaml).")(func)
    func = click.option("--nimbus", "nimbus_address", metavar="HOST:PORT",
                        help="Nimbus to talk to (default: nimbus.host:nimbus.thrift.port).")(func)
    return func


def fail(message: str, code: int) -> NoReturn:
    err_console.print(f"[red]error:[/red] {message}")
    sys.exit(code)


@contextmanager
def nimbus_client(nimbus_address: str | None, config_file: str | None, overrides: tuple[str, ...],
                  timeout: float | None) -> Iterator[NimbusClient]:
    """A connected-looking client (timeout, retries and auth token from the config, ``timeout``
    overriding); turns RPC errors into clear messages and exit codes."""
    try:
        conf = load_config(config_file, parse_overrides(overrides))
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
    def wrapper(nimbus_address: str | None, config_file: str | None, overrides: tuple[str, ...],
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
        config_file: str | None, overrides: tuple[str, ...], timeout: float | None) -> None:
    """Bundle PATH (a directory, or a prebuilt bundle .zip), upload it and submit MODULE[:ATTR].

    -c overrides become the topology's config (over the module's ``config`` dict), except
    nimbus.rpc.auth.token, which only authenticates this command."""
    try:
        topo_overrides = dict(parse_override(o) for o in overrides)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    topo_overrides.pop("nimbus.rpc.auth.token", None)  # a secret: never stored with the topology
    with nimbus_client(nimbus_address, config_file, overrides, timeout) as client, \
            tempfile.TemporaryDirectory(prefix="stormpy-jar-") as tmp:
        source = Path(path)
        try:
            if source.is_dir():
                loaded = load_topology(source, target)
                bundle = build_bundle(source, Path(tmp) / "bundle.zip")
                bundle_path, size = bundle.path, bundle.size
            else:
                code = Path(tmp) / "code"
                unpack_bundle(source, code)
                loaded = load_topology(code, target)
                bundle_path, size = source, source.stat().st_size
        except (TopologyLoadError, InvalidTopologyError, BundleError) as exc:
            fail(str(exc), EXIT_USAGE)
        topo_name = name or loaded.module.rsplit(".", 1)[-1]
        conf: dict[str, Any] = {**loaded.config, **topo_overrides}
        conf.setdefault("topology.submitter.user", _user())
        with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                      TransferSpeedColumn(), console=err_console, transient=False) as progress:
            task = progress.add_task(f"uploading {source.name}", total=size)
            # submit() starts over on the new leader if the Nimbus leader changes meanwhile
            topology_id = client.submit(
                topo_name, bundle_path, loaded.spec.to_doc(), conf, active=not inactive,
                progress=lambda sent, _total: progress.update(task, completed=sent))
        console.print(f"submitted topology [bold]{topo_name}[/bold] as {topology_id}"
                      f"{' (inactive)' if inactive else ''}")
        for warning in client.warnings:
            err_console.print(f"[yellow]warning:[/yellow] {warning}")


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
    info = client.cluster_info()
    topologies = info.get("topologies", [])
    if not topologies:
        console.print("No topologies running.")
    else:
        table = Table(title="topologies")
        for col in ("name", "id", "status", "workers", "executors", "uptime (s)"):
            numeric = col in ("workers", "executors", "uptime (s)")
            table.add_column(col, justify="right" if numeric else "left", no_wrap=True)
        for t in topologies:
            status = f"{t['status']} (degraded)" if t.get("degraded") else t["status"]
            table.add_row(t["name"], t["id"], status, f"{t['num_workers']}/{t['requested_workers']}",
                          str(t["num_executors"]), f"{t['uptime_secs']:.0f}")
        print_wide(table)
        for t in topologies:
            if t.get("degraded"):
                console.print(f"[red]degraded:[/red] {t['name']}: {t['degraded']}", soft_wrap=True)
    sups = info.get("supervisors", [])
    used = sum(s["slots_used"] for s in sups)
    total = sum(s["slots_total"] for s in sups)
    console.print(f"{len(sups)} supervisor(s), {used}/{total} slots used; Nimbus "
                  f"{info.get('nimbus', {}).get('host')}:{info.get('nimbus', {}).get('port')}")


# -- kill / activate / deactivate / rebalance --------------------------------------------------------
@click.command("kill")
@click.argument("name")
@click.option("-w", "--wait", "wait_secs", type=float, default=None,
              help="Seconds between deactivation and removal (default: topology.message.timeout.secs).")
@client_options
@_with_client
def kill(client: NimbusClient, name: str, wait_secs: float | None) -> None:
    """Kill topology NAME: deactivate it, wait, then remove its workers and state."""
    client.kill(name, wait_secs)
    wait = "its message timeout" if wait_secs is None else f"{wait_secs:g} s"
    console.print(f"killing topology [bold]{name}[/bold]; it is removed after {wait}")


@click.command("activate")
@click.argument("name")
@client_options
@_with_client
def activate(client: NimbusClient, name: str) -> None:
    """Activate topology NAME (its spouts emit again)."""
    client.activate(name)
    console.print(f"activated topology [bold]{name}[/bold]")


@click.command("deactivate")
@click.argument("name")
@client_options
@_with_client
def deactivate(client: NimbusClient, name: str) -> None:
    """Deactivate topology NAME (its spouts stop emitting; in-flight tuples finish)."""
    client.deactivate(name)
    console.print(f"deactivated topology [bold]{name}[/bold]")


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
    executors = _executor_counts(executor_args)
    client.rebalance(name, wait_secs, num_workers, executors or None)
    console.print(f"rebalancing topology [bold]{name}[/bold]")


# -- info -------------------------------------------------------------------------------------------
_ZERO = {"emitted": 0, "transferred": 0, "executed": 0, "acked": 0, "failed": 0}


@click.command("info")
@click.argument("name")
@click.option("--system", is_flag=True, help="Also show system components (__acker).")
@client_options
@_with_client
def topology_info(client: NimbusClient, name: str, system: bool) -> None:
    """Show topology NAME: status, workers, per-component stats and last errors."""
    info = client.topology_info(name)
    console.print(f"[bold]{info['name']}[/bold] ({info['id']}): {info['status']}, "
                  f"{info['num_workers']}/{info['requested_workers']} workers, "
                  f"{info['num_executors']} executors, up {info['uptime_secs']:.0f} s")
    if info.get("degraded"):
        console.print(f"[red]degraded:[/red] {info['degraded']}", soft_wrap=True)
    workers = Table(title="workers")
    for col in ("host", "port", "node", "executors", "uptime (s)", "heartbeat age (s)"):
        workers.add_column(col)
    for w in info["workers"]:
        workers.add_row(w["host"], str(w["port"]), w["node"], str(len(w["executors"])),
                        "" if w["uptime_secs"] is None else f"{w['uptime_secs']:.0f}",
                        "" if w["heartbeat_age_secs"] is None else f"{w['heartbeat_age_secs']:.1f}")
    print_wide(workers)
    stats: dict[str, dict[str, Any]] = {}
    for comp, desc in info.get("components", {}).items():
        if comp.startswith("__") and not system:
            continue
        stats[comp] = {**_ZERO, "tasks": desc["tasks"], "complete_latency_ms": None}
    sources = {**info.get("stats", {}), **(info.get("system_components", {}) if system else {})}
    for comp, s in sources.items():
        stats[comp] = {**stats.get(comp, _ZERO), **s}
    print_wide(stats_table(f"topology {info['name']}", stats))
    for comp, tasks in info.get("metrics", {}).items():
        for task, metrics in tasks.items():
            for metric, value in metrics.items():
                console.print(f"[bold]{comp}[/bold] task {task} metric [bold]{metric}[/bold]: "
                              f"{json.dumps(value, sort_keys=True, default=str)}", soft_wrap=True)
    for comp, errors in info.get("errors", {}).items():
        last = errors[-1]
        console.print(f"[red]last error of {comp}[/red] (task {last['task']}, {last['host']}:{last['port']}):"
                      f"\n{last['message']}")


topology_info_alias = click.Command("topology-info", callback=topology_info.callback,
                                    params=topology_info.params, help=topology_info.help)
