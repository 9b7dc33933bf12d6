"""Printing for the CLI: the one place where text reaches the terminal.

Contract: every command prints through :func:`say`, :func:`error`, :func:`warning`,
:func:`detail` and tables whose cells come from :func:`cell`. The command's own words are rich
markup (colours, bold); every piece of user or error text (names, paths, messages, tracebacks)
is passed as a separate value and escaped here (``rich.markup.escape``), so text such as
``self.emit([ip, path, int(status)])`` is printed as written, never read as markup. Messages are
soft-wrapped: a long path or traceback line is never broken mid-word by the CLI (the terminal
folds it), and piped output keeps it whole.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

__all__ = ["cell", "console", "detail", "err_console", "error", "say", "stats_table", "warning"]

# Piped output (CI logs, `make run | tee`) keeps full-width tables instead of rich's 80 columns.
_WIDTH = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 120
console = Console(width=_WIDTH)
err_console = Console(stderr=True, width=_WIDTH)


def cell(value: Any) -> str:
    """``value`` as text safe to print or put in a table: its markup characters escaped."""
    return escape(str(value))


def say(template: str, *values: Any, err: bool = False) -> None:
    """Print ``template`` (rich markup, ``{}`` placeholders) with each of ``values`` escaped
    into it, to stdout (stderr with ``err``), soft-wrapped."""
    text = template.format(*(cell(v) for v in values)) if values else template
    (err_console if err else console).print(text, soft_wrap=True, highlight=False)


def error(message: Any, label: str = "error") -> None:
    """``label: message`` on stderr, the label in red, the message printed as written."""
    say(f"[red]{cell(label)}:[/red] {{}}", message, err=True)


def warning(message: Any) -> None:
    """``warning: message`` on stderr, the label in yellow, the message printed as written."""
    say("[yellow]warning:[/yellow] {}", message, err=True)


def detail(heading: str, body: Any, *values: Any, err: bool = True) -> None:
    """A heading (markup template filled with escaped ``values``, as :func:`say`) and, on the
    lines below, ``body`` verbatim: a traceback or a multi-line message (stderr by default)."""
    say(heading + "\n{}", *values, body, err=err)


def stats_table(title: str, stats: Mapping[str, Mapping[str, Any]]) -> Table:
    """Per-component emitted/transferred/executed/acked/failed/complete latency."""
    table = Table(title=cell(title))
    for col in ("component", "tasks", "emitted", "transferred", "executed", "acked", "failed",
                "complete latency (ms)"):
        table.add_column(col, justify="left" if col == "component" else "right",
                         overflow="fold")
    for comp in sorted(stats):
        s = stats[comp]
        lat = s.get("complete_latency_ms")
        table.add_row(cell(comp), str(s.get("tasks", "")), str(s["emitted"]), str(s["transferred"]),
                      str(s["executed"]), str(s["acked"]), str(s["failed"]),
                      "" if lat is None else f"{lat:.2f}")
    return table


#: The help of every command's ``--config`` (``-c`` takes the same two forms).
CONFIG_HELP = ("Config file (YAML/JSON; default: $STORMPY_CONF, else ./stormpy.yaml if present), or "
               "KEY=VALUE (repeatable). Files apply in order, KEY=VALUE pairs over them.")
