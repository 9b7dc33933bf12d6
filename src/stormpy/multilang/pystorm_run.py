"""The subprocess side of a pystorm component run through the shell host (as streamparse's
``streamparse_run`` is on Storm)::

    python -m stormpy.multilang.pystorm_run package.module:ClassName [--serializer json|msgpack]

builds the class (a pystorm ``Bolt``/``Spout`` subclass) with the serializer (default: the one
the host names in ``STORMPY_MULTILANG_SERIALIZER``, else JSON) and calls its ``run()``, which
speaks the multilang protocol on stdin/stdout.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

__all__: list[str] = []  # a command (``python -m``), part of every shell component's spec: nothing to import

SERIALIZER_ENV = "STORMPY_MULTILANG_SERIALIZER"


def load(path: str) -> type:
    """``module:Class`` (or ``module.Class``) imported."""
    module, sep, name = path.partition(":")
    if not sep:
        module, _, name = path.rpartition(".")
    obj: object = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise TypeError(f"{path!r} is not a class")
    return obj


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m stormpy.multilang.pystorm_run")
    parser.add_argument("component", help="module:Class of a pystorm Bolt or Spout subclass")
    parser.add_argument("--serializer", default=os.environ.get(SERIALIZER_ENV) or "json",
                        choices=["json", "msgpack"])
    args = parser.parse_args(argv)
    sys.path.insert(0, os.getcwd())
    load(args.component)(serializer=args.serializer).run()


if __name__ == "__main__":
    main()
