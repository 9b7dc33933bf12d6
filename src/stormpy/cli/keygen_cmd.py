"""``stormpy curve-keygen PATH``: a Nimbus RPC key pair (docs/security.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from stormpy.cli.output import error
from stormpy.rpc.curve import write_secret_key_file


@click.command("curve-keygen")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
def curve_keygen(path: Path) -> None:
    """Write a fresh CURVE secret key to PATH (mode 0600, never overwriting) and print the
    public key.

    On the Nimbus host set nimbus.rpc.curve.secret.key.file to PATH; everywhere else (CLI,
    supervisors, UI) set nimbus.rpc.curve.public.key to the printed key."""
    write_key_pair(path)


def write_key_pair(path: Path) -> None:
    """Write a fresh secret key to ``path`` and print the two settings that use it (the secret
    key file for Nimbus, the public key for everyone else). An existing file is never
    overwritten; it, or a path that cannot be written, ends the command with exit 2."""
    try:
        public = write_secret_key_file(path)
    except FileExistsError:
        error(f"{path} exists; remove it first to make a new key")
        sys.exit(2)
    except OSError as exc:
        error(f"cannot write {path}: {exc.strerror or exc}")
        sys.exit(2)
    click.echo(f"nimbus.rpc.curve.secret.key.file: {path}")
    click.echo(f"nimbus.rpc.curve.public.key: {public.decode()}")
