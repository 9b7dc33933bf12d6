"""``stormpy supervisor``: run a supervisor daemon in the foreground (Storm's ``storm supervisor``)."""

from __future__ import annotations

import sys

import click

from stormpy.cli.client_cmds import command_conf
from stormpy.cli.output import CONFIG_HELP, error, say
from stormpy.cluster.errors import ClusterStateError
from stormpy.supervisor import Supervisor


@click.command("supervisor")
@click.option("--config", "config_file", multiple=True, metavar="FILE|KEY=VALUE",
              help=CONFIG_HELP)
@click.option("-c", "overrides", multiple=True, metavar="KEY=VALUE|FILE",
              help="Config override (repeatable), e.g. -c supervisor.slots.ports=[6700,6701].")
def supervisor(config_file: tuple[str, ...], overrides: tuple[str, ...]) -> None:
    """Run a supervisor until SIGTERM or Ctrl-C: it starts and watches the worker processes that
    Nimbus assigns to this host. Logs go to <storm.log.dir>/supervisor-<id>.log."""
    conf = command_conf(config_file, overrides)
    daemon = Supervisor(conf, root_logging=True)
    try:
        daemon.start()
    except (ClusterStateError, OSError, ValueError) as exc:
        error(exc, label="supervisor cannot start")
        sys.exit(1)
    say("supervisor {} running (slots {}); log: {}", daemon.supervisor_id, list(daemon.ports),
        daemon.log_path, err=True)
    daemon.run_forever()
