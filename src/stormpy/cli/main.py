"""Entry point of the ``stormpy`` command."""

from __future__ import annotations

import logging

import click

from stormpy import __version__
from stormpy.cli.local_cmd import local


@click.group()
@click.version_option(__version__, prog_name="stormpy")
@click.option("-v", "--verbose", is_flag=True, help="Log at INFO level to stderr.")
def cli(verbose: bool) -> None:
    """stormpy: Apache Storm's model, native in Python."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


cli.add_command(local)


def main() -> None:
    cli()
