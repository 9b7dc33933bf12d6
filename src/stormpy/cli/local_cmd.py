"""``stormpy local``: run a topology in this process (Storm's ``storm local``)."""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

import click

from stormpy.cli.idle_watch import IdleWatch, user_activity, user_pending
from stormpy.cli.output import console, detail, error, say, stats_table, warning
from stormpy.cli.topology_loader import TopologyLoadError, load_topology
from stormpy.config import ConfigError, parse_config_args, setting
from stormpy.local import LocalCluster
from stormpy.topology import InvalidTopologyError, TopologySpec


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
    """Run MODULE[:ATTR] from PATH in one process until --ttl passes, --idle-stop finds it idle
    or Ctrl-C, then print per-component stats, why the run stopped and how many spout tuples
    were still pending."""
    try:
        loaded = load_topology(path, target)
        conf: dict[str, Any] = {**loaded.config, **parse_config_args(overrides).merged()}
        # context.code_dir names PATH, as it names the unpacked bundle on a cluster
        code_dir = os.path.abspath(path if os.path.isdir(path) else os.path.dirname(path) or ".")
        conf.setdefault("worker.code.dir", code_dir)
    except (TopologyLoadError, InvalidTopologyError, ConfigError) as exc:
        error(exc)
        sys.exit(2)
    topo_name = name or loaded.module.rsplit(".", 1)[-1]
    stop = threading.Event()
    signals: list[str] = []

    def on_signal(signum: int, _frame: Any) -> None:
        signals.append("Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name)
        stop.set()
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    # ZooKeeper settings given with -c make components keep their state there
    cluster = LocalCluster(conf={k: v for k, v in conf.items() if k.startswith("storm.zookeeper.")})
    failure = None
    try:
        try:
            warnings = cluster.check_topology(topo_name, conf, loaded.spec)
        except (ConfigError, InvalidTopologyError) as exc:  # the submit check refused it
            error(exc)
            sys.exit(2)
        # printed before any component runs: a component's own prints never cut into it
        say("running topology [bold]{}[/bold] in local mode (ttl {}s; Ctrl-C stops)",
            topo_name, f"{ttl:g}")
        for text in warnings:
            warning(text)
        worker = cluster.submit_topology(topo_name, conf, loaded.spec)
        deadline = time.monotonic() + ttl
        idle = IdleWatch(idle_stop) if idle_stop is not None else None
        stopped_by, reason = "ttl", f"ttl of {ttl:g} s reached"
        while not stop.is_set():
            if time.monotonic() >= deadline:
                break
            stop.wait(0.05)
            if worker.failure is not None:
                failure = worker.failure
                stopped_by, reason = "failure", "a component failed"
                break
            if idle is not None:
                pending = worker.spout_pending()
                if idle.observe(time.monotonic(), loop_quiet=worker.is_quiet(10),
                                activity=user_activity(worker.task_stats(), pending),
                                pending=user_pending(pending),
                                held=sum(worker.held_tuples().values())):
                    stopped_by, reason = "idle", f"finished: idle for {idle_stop:g} s (--idle-stop)"
                    break
        if signals:
            stopped_by, reason = "signal", f"{signals[0]} received"
        pending_left = user_pending(worker.spout_pending())
        held = worker.held_tuples()
        in_windows = worker.window_tuples()
        in_checkpoints = worker.checkpoint_tuples()
        stats = worker.stats()
        errors = {c: list(e) for c, e in worker.errors.items()}
        cluster.kill_topology(topo_name)
    finally:
        cluster.shutdown()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    console.print(stats_table(f"topology {topo_name}", stats))
    say("stopped: {}; {} spout tuple(s) still pending", reason, pending_left)
    note = run_note(stopped_by, pending_left, held, in_windows, in_checkpoints, conf,
                    idle_secs=idle_stop, ticks=user_tick_periods(conf, loaded.spec))
    if note is not None:
        say("[yellow]note:[/yellow] {}", note)
    if failure is not None:
        error(failure, label="topology failed")
    for comp, errs in sorted(errors.items()):  # reported errors too (a restarted subprocess)
        if errs:
            detail("[red]last error of {}:[/red]", errs[-1]["error"], comp)
    if failure is not None:
        sys.exit(1)


def _held_by(held: dict[str, int]) -> str:
    """``'a' (1 tuple(s)), 'b' (2 tuple(s))``, by component name."""
    return ", ".join(f"{c!r} ({n} tuple(s))" for c, n in sorted(held.items()))


def run_note(stopped_by: str, pending_left: int, held: dict[str, int], in_windows: dict[str, int],
             in_checkpoints: dict[str, int], conf: dict[str, Any], *,
             idle_secs: float | None = None, ticks: Mapping[str, float] | None = None) -> str | None:
    """The note under a local run's summary, None when there is nothing to explain.
    ``stopped_by`` is ``ttl``, ``idle``, ``failure`` or ``signal``; ``pending_left`` the user
    spout tuples still pending; ``held`` the tuples bolts hold for a timer (open windows),
    ``in_windows`` and ``in_checkpoints`` the tuples windows and stateful bolts hold un-acked
    (component -> tuples); ``idle_secs`` the ``--idle-stop`` time and ``ticks`` the tick tuple
    period of each of the user's bolts (:func:`user_tick_periods`). One note at most, the first
    that applies: a ttl that cut open windows, then pending tuples held in windows, then pending
    tuples held for a checkpoint, then an idle stop sooner than a bolt's tick period."""
    if held and stopped_by == "ttl":
        return (f"the ttl stopped the run while window(s) were still open: {_held_by(held)} "
                "not evaluated yet; raise --ttl to let them close")
    if pending_left and in_windows:
        return (f"window(s) still hold tuples un-acked: {_held_by(in_windows)}; a window acks a "
                "tuple once it has left every window, so the last tuples of a finite input wait "
                "for more input (or fail at topology.message.timeout.secs and are replayed)")
    if pending_left and in_checkpoints:
        return checkpoint_note(in_checkpoints, conf)
    if stopped_by == "idle" and idle_secs is not None and ticks:
        late = {c: p for c, p in ticks.items() if p > idle_secs}
        if late:
            bolts = ", ".join(f"{c!r} (every {p:g} s)" for c, p in sorted(late.items()))
            return (f"the run stopped as idle after {idle_secs:g} s, sooner than the tick tuples of "
                    f"{bolts}: what they do on a tick (a flush, a periodic report) may not have "
                    f"run after the last input; give --idle-stop {math.floor(max(late.values())) + 1} "
                    "or more")
    return None


def user_tick_periods(conf: Mapping[str, Any], spec: TopologySpec) -> dict[str, float]:
    """The tick tuple period (``topology.tick.tuple.freq.secs``, a component's config over the
    topology's) of each bolt of the user's own classes that gets tick tuples. stormpy's own bolts
    (windows, joins, Spark, transactional coordinators) are left out: they hold what waits for
    their timers, which the idle rule already waits for."""
    periods = {}
    for name, comp in spec.bolts.items():
        if comp.class_path.startswith("stormpy."):
            continue
        freq = {**conf, **comp.config}.get("topology.tick.tuple.freq.secs")
        if freq:
            periods[name] = float(freq)
    return periods


def checkpoint_note(held: dict[str, int], conf: dict[str, Any]) -> str:
    """Why spout tuples are still pending when stateful bolts hold them (``held``: component ->
    tuples held until a checkpoint commits): a stateful bolt acks its inputs at each commit, so
    ``topology.max.spout.pending`` bounds what completes per checkpoint interval."""
    bolts = _held_by(held)
    interval_ms = f"{float(setting(conf, 'topology.state.checkpoint.interval.ms')):g}"
    text = (f"stateful bolt(s) hold tuples un-acked until their next checkpoint commits: {bolts}; "
            f"a stateful bolt acks its inputs when a checkpoint commits (every {interval_ms} ms, "
            "topology.state.checkpoint.interval.ms)")
    max_pending = setting(conf, "topology.max.spout.pending")
    if max_pending:
        text += (f", so with topology.max.spout.pending {max_pending} at most {max_pending} tuple "
                 "tree(s) per spout task complete per interval: raise it or shorten the interval "
                 "for more throughput")
    return text
