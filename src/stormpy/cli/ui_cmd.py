"""``stormpy ui``: the web UI, Storm's REST API and Prometheus metrics, in the foreground."""

from __future__ import annotations

import signal
import sys
import threading

import click

from stormpy.cli.client_cmds import command_conf
from stormpy.cli.output import CONFIG_HELP, error


@click.command("ui")
@click.option("--nimbus", "nimbus_address", metavar="HOST:PORT",
              help="Nimbus to read from (default: nimbus.host:nimbus.thrift.port).")
@click.option("--config", "config_file", multiple=True, metavar="FILE|KEY=VALUE",
              help=CONFIG_HELP)
@click.option("-c", "--conf", "overrides", multiple=True, metavar="KEY=VALUE|FILE",
              help="Config override (repeatable), e.g. -c ui.port=8080.")
def ui(nimbus_address: str | None, config_file: tuple[str, ...], overrides: tuple[str, ...]) -> None:
    """Serve the UI on ui.host:ui.port: pages, /api/v1 (Storm's REST API) and /metrics.

    Reads Nimbus (RPC) and the workers' heartbeats (ZooKeeper); SIGTERM or Ctrl-C stops it."""
    conf = command_conf(config_file, overrides)
    try:
        from stormpy.ui._server import run_ui
    except ImportError as exc:
        error(f"the UI needs the 'ui' extra (pip install 'stormpy-runtime[ui]'): {exc}")
        sys.exit(2)
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = run_ui(conf, nimbus_address=nimbus_address, echo=click.echo, stop=stop)
    except (OSError, ValueError, RuntimeError) as exc:
        error(f"cannot start the UI: {exc}")
        sys.exit(1)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    sys.exit(code)
