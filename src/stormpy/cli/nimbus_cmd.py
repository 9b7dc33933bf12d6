"""``stormpy nimbus``: run the Nimbus daemon in the foreground."""

from __future__ import annotations

import sys

import click

from stormpy.cli.output import CONFIG_HELP, error
from stormpy.config import ConfigError, load_config_args
from stormpy.nimbus import run_nimbus


@click.command("nimbus")
@click.option("--config", "config_file", multiple=True, metavar="FILE|KEY=VALUE",
              help=CONFIG_HELP)
@click.option("-c", "--conf", "overrides", multiple=True, metavar="KEY=VALUE|FILE",
              help="Config override (repeatable), e.g. -c nimbus.thrift.port=6627.")
def nimbus(config_file: tuple[str, ...], overrides: tuple[str, ...]) -> None:
    """Run Nimbus: accepts topologies, schedules them on supervisors, watches heartbeats.

    Logs to <storm.log.dir or storm.local.dir/logs>/nimbus.log; SIGTERM or Ctrl-C stops it cleanly."""
    try:
        conf = load_config_args(config_file, overrides)
    except ConfigError as exc:
        error(exc)
        sys.exit(2)
    sys.exit(run_nimbus(conf, echo=click.echo))
