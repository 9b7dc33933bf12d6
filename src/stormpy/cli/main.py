"""Entry point of the ``stormpy`` command."""

from __future__ import annotations

import logging

import click

from stormpy import __version__
from stormpy.cli.client_cmds import (
    activate,
    deactivate,
    jar,
    kill,
    list_topologies,
    rebalance,
    topology_info,
    topology_info_alias,
)
from stormpy.cli.debug_cmd import debug
from stormpy.cli.dev_cmds import dev_cluster, dev_kafka, dev_redis, dev_spark, dev_zookeeper
from stormpy.cli.keygen_cmd import curve_keygen
from stormpy.cli.local_cmd import local
from stormpy.cli.monitor_cmd import monitor
from stormpy.cli.nimbus_cmd import nimbus
from stormpy.cli.ops_cmds import logs, logviewer, profile, set_log_level
from stormpy.cli.supervisor_cmd import supervisor
from stormpy.cli.ui_cmd import ui


@click.group()
@click.version_option(__version__, prog_name="stormpy")
@click.option("-v", "--verbose", is_flag=True, help="Log at INFO level to stderr.")
def cli(verbose: bool) -> None:
    """stormpy: Apache Storm's model, native in Python."""
    configure_logging(verbose)


def configure_logging(verbose: bool) -> None:
    """Log records to stderr: INFO and above with ``verbose``, else WARNING and above; never the
    records the commands already print themselves (submit warnings, a run's summarized error)."""
    handler = logging.StreamHandler()
    # `local` and `jar` print the submit warnings as `warning:` lines, and `local`'s summary the
    # error that stopped the topology with its traceback: not twice
    handler.addFilter(lambda record: not getattr(record, "submit_warning", False)
                      and not getattr(record, "summarized", False))
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, handlers=[handler],
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


cli.add_command(local)
cli.add_command(nimbus)
cli.add_command(jar)
cli.add_command(list_topologies)
cli.add_command(kill)
cli.add_command(activate)
cli.add_command(deactivate)
cli.add_command(rebalance)
cli.add_command(topology_info)
cli.add_command(topology_info_alias)
cli.add_command(monitor)
cli.add_command(debug)
cli.add_command(dev_zookeeper)
cli.add_command(dev_kafka)
cli.add_command(dev_redis)
cli.add_command(dev_cluster)
cli.add_command(dev_spark)
cli.add_command(supervisor)
cli.add_command(ui)
cli.add_command(curve_keygen)
cli.add_command(logs)
cli.add_command(logviewer)
cli.add_command(set_log_level)
cli.add_command(profile)


def main() -> None:
    cli()
