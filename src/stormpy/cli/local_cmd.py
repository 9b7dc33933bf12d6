"""``stormpy local``: run a topology in this process (Storm's ``storm local``)."""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import Any

import click
from rich.markup import escape

from stormpy.cli.idle_watch import IdleWatch, user_activity, user_pending
from stormpy.cli.output import console, err_console, stats_table
from stormpy.cli.topology_loader import TopologyLoadError, load_topology
from stormpy.config import ConfigError, parse_config_args
from stormpy.local import LocalCluster
from stormpy.topology import InvalidTopologyError


@click.command("local")
@click.argument("path", type=click.Path(exists=True))
@click.argument("target")
@click.option("--name", help="Topology name (default: the module name).")
@click.option("--ttl", type=float, default=20.0, show_default=True,
              help="Seconds to run before stopping (Storm's --local-ttl).")
@click.option("--idle-stop", type=click.FloatRange(min=0), default=None,
              help="Stop early once the topology has been idle this many seconds: its loop did "
                   "nothing, or its user components emitted, acked and failed nothing with no "
                   "user spout tuple pending (system spouts such as a stateful topology's "
                   "checkpoints do not count).")
@click.option("-c", "--config", "overrides", multiple=True, metavar="KEY=VALUE|FILE",
              help="Topology config (repeatable): KEY=VALUE, or a YAML/JSON file; KEY=VALUE "
                   "pairs win over files.")
def local(path: str, target: str, name: str | None, ttl: float, idle_stop: float | None,
          overrides: tuple[str, ...]) -> None:
    """Run MODULE[:ATTR] from PATH in one process until --ttl passes or Ctrl-C, then print
    per-component stats."""
    try:
        loaded = load_topology(path, target)
        conf: dict[str, Any] = {**loaded.config, **parse_config_args(overrides).merged()}
    except (TopologyLoadError, InvalidTopologyError, ConfigError) as exc:
        err_console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        sys.exit(2)
    topo_name = name or loaded.module.rsplit(".", 1)[-1]
    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    # ZooKeeper settings given with -c make components keep their state there
    cluster = LocalCluster(conf={k: v for k, v in conf.items() if k.startswith("storm.zookeeper.")})
    failure = None
    try:
        try:
            worker = cluster.submit_topology(topo_name, conf, loaded.spec)
        except (ConfigError, InvalidTopologyError) as exc:  # the submit check refused it
            err_console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
            sys.exit(2)
        console.print(f"running topology [bold]{topo_name}[/bold] in local mode "
                      f"(ttl {ttl:g}s; Ctrl-C stops)")
        for warning in cluster.warnings_of(topo_name):
            err_console.print(f"[yellow]warning:[/yellow] {escape(warning)}", soft_wrap=True)
        deadline = time.monotonic() + ttl
        idle = IdleWatch(idle_stop) if idle_stop is not None else None
        while not stop.is_set() and time.monotonic() < deadline:
            stop.wait(0.05)
            if worker.failure is not None:
                failure = worker.failure
                break
            if idle is not None:
                pending = worker.spout_pending()
                if idle.observe(time.monotonic(), loop_quiet=worker.is_quiet(10),
                                activity=user_activity(worker.task_stats(), pending),
                                pending=user_pending(pending)):
                    break
        stats = worker.stats()
        errors = {c: list(e) for c, e in worker.errors.items()}
        cluster.kill_topology(topo_name)
    finally:
        cluster.shutdown()
        signal.signal(signal.SIGINT, previous)
    console.print(stats_table(f"topology {topo_name}", stats))
    if failure is not None:
        err_console.print(f"[red]topology failed:[/red] {failure}")
        for comp, errs in errors.items():
            for e in errs[-1:]:
                err_console.print(f"[red]last error of {comp}:[/red]\n{e['error']}")
        sys.exit(1)
