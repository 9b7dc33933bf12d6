"""``stormpy debug NAME [-c COMPONENT] --enable/--disable [--sampling-pct P]``: sampled tuples
(Storm's event logger, the UI's Debug button) on or off for a topology or one of its components.

Contract: asks Nimbus (``debug``) to store the setting in the topology's StormBase; the workers
apply it within seconds and write P percent of the component's emits to their events logs
(:mod:`stormpy.topology._event_log`). ``--disable`` without ``-c`` turns every component off.
An unknown topology or component, or a topology with ``topology.eventlogger.executors`` 0, is
refused with Nimbus's message (exit 1). ``-c`` names the component (as Storm's ``-c``), so
config overrides are given with ``--conf KEY=VALUE`` here.
"""

from __future__ import annotations

import click

from stormpy.cli.client_cmds import client_options_without_c, nimbus_client
from stormpy.cli.output import say

__all__ = ["debug", "say_sampling"]


@click.command("debug")
@click.argument("name")
@click.option("-c", "--component", default=None, help="Only this component (default: all of them).")
@click.option("--enable/--disable", required=True, help="Turn sampling on or off.")
@click.option("--sampling-pct", type=click.FloatRange(min=0, max=100, min_open=True), default=10.0,
              show_default=True, help="Percentage of the emitted tuples to sample.")
@client_options_without_c
def debug(name: str, component: str | None, enable: bool, sampling_pct: float, nimbus_address: str | None,
          config_file: tuple[str, ...], overrides: tuple[str, ...], timeout: float | None) -> None:
    """Turn sampled tuples of topology NAME on or off (Storm's event logger)."""
    with nimbus_client(nimbus_address, config_file, overrides, timeout) as client:
        client.debug(name, component, enable, sampling_pct)
    say_sampling(name, component, enable, sampling_pct)


def say_sampling(name: str, component: str | None, enable: bool, sampling_pct: float) -> None:
    """What ``debug`` turned on or off: the percentage, the component (or every component) and
    the topology, and where the sampled tuples are read."""
    what = f"component {component}" if component else "every component"
    if enable:
        say("sampling {}% of the tuples of {} of {}; see them with `stormpy logs {} --events{}` "
            "or on the UI's events page", f"{sampling_pct:g}", what, name, name,
            f" -c {component}" if component else "")
    else:
        say("no longer sampling the tuples of {} of {}", what, name)
