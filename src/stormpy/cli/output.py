"""Printing tables and errors for the CLI."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

# Piped output (CI logs, `make run | tee`) keeps full-width tables instead of rich's 80 columns.
_WIDTH = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 120
console = Console(width=_WIDTH)
err_console = Console(stderr=True, width=_WIDTH)


def stats_table(title: str, stats: Mapping[str, Mapping[str, Any]]) -> Table:
    """Per-component emitted/transferred/executed/acked/failed/complete latency."""
    table = Table(title=title)
    for col in ("component", "tasks", "emitted", "transferred", "executed", "acked", "failed",
                "complete latency (ms)"):
        table.add_column(col, justify="left" if col == "component" else "right")
    for comp in sorted(stats):
        s = stats[comp]
        lat = s.get("complete_latency_ms")
        table.add_row(comp, str(s.get("tasks", "")), str(s["emitted"]), str(s["transferred"]),
                      str(s["executed"]), str(s["acked"]), str(s["failed"]),
                      "" if lat is None else f"{lat:.2f}")
    return table


#: The help of every command's ``--config`` (``-c`` takes the same two forms).
CONFIG_HELP = ("Config file (YAML/JSON; default: $STORMPY_CONF, else ./stormpy.yaml if present), or "
               "KEY=VALUE (repeatable). Files apply in order, KEY=VALUE pairs over them.")
