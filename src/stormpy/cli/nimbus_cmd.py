"""``stormpy nimbus``: run the Nimbus daemon in the foreground."""

from __future__ import annotations

import sys

import click

from stormpy.cli.client_cmds import command_conf
from stormpy.cli.output import CONFIG_HELP
from stormpy.nimbus import run_nimbus


@click.command("nimbus")
@click.option("--config", "config_file", multiple=True, metavar="FILE|KEY=VALUE",
              help=CONFIG_HELP)
@click.option("-c", "--conf", "overrides", multiple=True, metavar="KEY=VALUE|FILE",
              help="Config override (repeatable), e.g. -c nimbus.thrift.port=6627.")
def nimbus(config_file: tuple[str, ...], overrides: tuple[str, ...]) -> None:
    """Run Nimbus: accepts topologies, schedules them on supervisors, watches heartbeats.

    Logs to <storm.log.dir or storm.local.dir/logs>/nimbus.log; SIGTERM or Ctrl-C stops it cleanly."""
    conf = command_conf(config_file, overrides)
    sys.exit(run_nimbus(conf, echo=click.echo))
