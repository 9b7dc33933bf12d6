"""``stormpy nimbus``: run the Nimbus daemon in the foreground."""

from __future__ import annotations

import sys

import click

from stormpy.cli.output import error
from stormpy.config import ConfigError, load_config, parse_overrides
from stormpy.nimbus import run_nimbus


@click.command("nimbus")
@click.option("--config", "config_file", type=click.Path(dir_okay=False),
              help="stormpy.yaml to read (default: $STORMPY_CONF, else ./stormpy.yaml if present).")
@click.option("-c", "--conf", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Config override (repeatable), e.g. -c nimbus.thrift.port=6627.")
def nimbus(config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Run Nimbus: accepts topologies, schedules them on supervisors, watches heartbeats.

    Logs to <storm.log.dir or storm.local.dir/logs>/nimbus.log; SIGTERM or Ctrl-C stops it cleanly."""
    try:
        conf = load_config(config_file, parse_overrides(overrides))
    except ConfigError as exc:
        error(exc)
        sys.exit(2)
    sys.exit(run_nimbus(conf, echo=click.echo))
