"""``stormpy monitor NAME -m COMPONENT [-s STREAM] [-i SECS] [-w emitted|transferred]`` (Storm's
``monitor`` verb): live rates of one component, summed over its tasks, until Ctrl-C.

Contract: every ``-i`` seconds (default 4, Storm's) the command asks Nimbus for the topology's
info and prints one line: the time, the component, its tasks, the seconds since the previous
sample, the watched item's tuples in that interval (``-w``, default ``emitted``) and the
emitted, transferred and acked rates (tuples per second). ``emitted`` counts the stream ``-s``
(default ``default``, as Storm); ``transferred`` and ``acked`` are the component's totals over
all its streams. A counter that goes down (a worker restarted) counts from its new value.
An unknown component is refused with the components the topology has (exit 2).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import click

from stormpy.cli.client_cmds import EXIT_USAGE, client_options, fail, nimbus_client
from stormpy.cli.output import say
from stormpy.client import NimbusClient

__all__ = ["Sample", "monitor", "rates", "sample"]

#: one reading: (monotonic seconds, emitted on the stream, transferred, acked)
Sample = tuple[float, int, int, int]


def sample(info: Mapping[str, Any], component: str, stream: str, now: float) -> Sample:
    """The component's counters in ``info`` (a ``get_topology_info`` document)."""
    stats = info.get("stats", {}).get(component, {})
    emitted = int(info.get("streams", {}).get(component, {}).get(stream, 0))
    return now, emitted, int(stats.get("transferred", 0)), int(stats.get("acked", 0))


def rates(before: Sample, after: Sample) -> tuple[float, list[int], list[float]]:
    """Seconds between two samples, the tuples of each item in between (a counter that went down
    counts from zero) and each item's rate per second."""
    secs = max(after[0] - before[0], 1e-9)
    deltas = [b - a if b >= a else b for a, b in zip(before[1:], after[1:])]
    return secs, deltas, [d / secs for d in deltas]


def _components(info: Mapping[str, Any]) -> list[str]:
    return sorted(c for c in info.get("components", {}) if not c.startswith("__"))


def run_monitor(client: NimbusClient, name: str, component: str, stream: str, interval: float,
                watch: str, clock: Callable[[], float] = time.monotonic,
                sleep: Callable[[float], None] = time.sleep, samples: int | None = None) -> None:
    """Print a line per interval (``samples`` lines, or until interrupted)."""
    info = client.topology_info(name)
    if component not in _components(info):
        fail(f"topology {name!r} has no component {component!r}; its components: "
             f"{', '.join(_components(info)) or '(none)'}", EXIT_USAGE)
    tasks = info["components"][component]["tasks"]
    say("topology {} component {} ({} tasks) stream {}: every {} s, watching {}", name, component,
        tasks, stream, f"{interval:g}", watch)
    say("{:<9} {:>8} {:>12} {:>11} {:>14} {:>9}", "time", "secs", watch, "emitted/s", "transferred/s",
        "acked/s")
    previous = sample(info, component, stream, clock())
    printed = 0
    while samples is None or printed < samples:
        sleep(interval)
        current = sample(client.topology_info(name), component, stream, clock())
        secs, deltas, per_sec = rates(previous, current)
        watched = deltas[0] if watch == "emitted" else deltas[1]
        say("{:<9} {:>8} {:>12} {:>11} {:>14} {:>9}", time.strftime("%H:%M:%S"), f"{secs:.1f}",
            watched, f"{per_sec[0]:.1f}", f"{per_sec[1]:.1f}", f"{per_sec[2]:.1f}")
        previous = current
        printed += 1


@click.command("monitor")
@click.argument("name")
@click.option("-m", "--component", required=True, help="The component to watch.")
@click.option("-s", "--stream", default="default", show_default=True,
              help="The stream whose emitted tuples are counted.")
@click.option("-i", "--interval", type=click.FloatRange(min=0.1), default=4.0, show_default=True,
              help="Seconds between lines.")
@click.option("-w", "--watch", type=click.Choice(["emitted", "transferred"]), default="emitted",
              show_default=True, help="The item whose tuples per interval are printed.")
@click.option("-n", "--samples", type=click.IntRange(min=1), default=None,
              help="Stop after this many lines (default: until Ctrl-C).")
@client_options
def monitor(name: str, component: str, stream: str, interval: float, watch: str, samples: int | None,
            nimbus_address: str | None, config_file: tuple[str, ...], overrides: tuple[str, ...],
            timeout: float | None) -> None:
    """Print live emitted / transferred / acked rates of COMPONENT of topology NAME, summed over
    its tasks, every interval until Ctrl-C (Storm's ``monitor``)."""
    with nimbus_client(nimbus_address, config_file, overrides, timeout) as client:
        try:
            run_monitor(client, name, component, stream, interval, watch, samples=samples)
        except KeyboardInterrupt:
            say("stopped")
