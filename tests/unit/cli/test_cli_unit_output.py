"""What the CLI's printing (``cli/output.py``) puts on the terminal, exactly: user text escaped into
markup templates, errors and warnings on stderr with their labels, a heading with a verbatim body,
long lines never broken by the CLI, numbers not coloured by rich's highlighter, and the stats table
with its columns, order and latency figures."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from rich.console import Console

from stormpy.cli import output
from stormpy.cli.output import cell, detail, error, say, stats_table, warning

ESC = "\x1b["


class Terminals:
    """Stdout and stderr consoles that write to buffers: plain text, or a colour terminal."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, width: int = 40, colour: bool = False) -> None:
        self.out, self.err = io.StringIO(), io.StringIO()
        kwargs = {"force_terminal": True, "color_system": "standard"} if colour else {"no_color": True}
        monkeypatch.setattr(output, "console", Console(file=self.out, width=width, **kwargs))  # type: ignore[arg-type]
        monkeypatch.setattr(output, "err_console", Console(file=self.err, width=width, **kwargs))  # type: ignore[arg-type]


@pytest.fixture
def term(monkeypatch: pytest.MonkeyPatch) -> Iterator[Terminals]:
    yield Terminals(monkeypatch)


def test_cell_escapes_markup_and_takes_any_value() -> None:
    assert cell("[bold]x[/bold]") == "\\[bold]x\\[/bold]"
    assert cell(12) == "12"
    assert cell(None) == "None"


def test_say_fills_the_template_with_escaped_values_on_stdout(term: Terminals) -> None:
    say("[bold]topology {}[/bold] has {} workers", "wc[1]", 3)
    assert term.out.getvalue() == "topology wc[1] has 3 workers\n"
    assert term.err.getvalue() == ""


def test_say_without_values_prints_the_template_as_markup(term: Terminals) -> None:
    say("[bold]{}[/bold] stays")  # no values: the braces are not a placeholder
    assert term.out.getvalue() == "{} stays\n"


def test_say_err_goes_to_stderr(term: Terminals) -> None:
    say("on {}", "stderr", err=True)
    assert (term.out.getvalue(), term.err.getvalue()) == ("", "on stderr\n")


def test_error_and_warning_lines_keep_their_text(term: Terminals) -> None:
    error("bad [value] for x")
    error("port taken", label="nimbus [main] cannot start")
    warning("topology.[x] is unknown")
    assert term.err.getvalue().splitlines() == [
        "error: bad [value] for x", "nimbus [main] cannot start: port taken",
        "warning: topology.[x] is unknown"]
    assert term.out.getvalue() == ""


def test_detail_prints_a_heading_and_the_body_verbatim_on_stderr_by_default(term: Terminals) -> None:
    detail("[red]last error of {}[/red] (task {}):", "Traceback\n  [x]\nValueError: [bold]", "split", 3)
    assert term.err.getvalue() == "last error of split (task 3):\nTraceback\n  [x]\nValueError: [bold]\n"
    detail("heading {}", "body", "h", err=False)
    assert term.out.getvalue() == "heading h\nbody\n"


def test_a_long_line_is_not_broken_by_the_cli(term: Terminals) -> None:
    path = "/home/user/" + "x" * 80 + "/topology.py"
    say("cannot load {} now", path)
    error(path + " is missing")
    assert term.out.getvalue() == f"cannot load {path} now\n"
    assert term.err.getvalue() == f"error: {path} is missing\n"


def test_numbers_and_values_are_not_coloured_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    colour = Terminals(monkeypatch, width=100, colour=True)
    say("submitted {} as {} with 4 workers", "wc", "wc-1-1700000000")
    warning("took 12.5 s")
    assert ESC not in colour.out.getvalue()
    assert colour.out.getvalue() == "submitted wc as wc-1-1700000000 with 4 workers\n"
    assert colour.err.getvalue() == f"{ESC}33mwarning:{ESC}0m took 12.5 s\n"
    error("x", label="stop")
    assert colour.err.getvalue().endswith(f"{ESC}31mstop:{ESC}0m x\n")


def rendered(table: object, width: int = 120) -> list[str]:
    console = Console(file=io.StringIO(), width=width, no_color=True)
    console.print(table)
    return [line.rstrip() for line in console.file.getvalue().splitlines()]  # type: ignore[attr-defined]


def test_stats_table_rows_sorted_with_latency_and_blank_cells() -> None:
    stats = {
        "split": {"tasks": 2, "emitted": 100, "transferred": 90, "executed": 80, "acked": 70,
                  "failed": 1, "complete_latency_ms": None},
        "count[x]": {"emitted": 5, "transferred": 4, "executed": 3, "acked": 2, "failed": 0},
        "a-spout": {"tasks": 1, "emitted": 7, "transferred": 7, "executed": 0, "acked": 7,
                    "failed": 0, "complete_latency_ms": 12.345},
    }
    lines = rendered(stats_table("topology wc[1]", stats))
    assert lines[0].strip() == "topology wc[1]"
    header = lines[2].split("┃")[1:-1]
    assert [h.strip() for h in header] == ["component", "tasks", "emitted", "transferred", "executed",
                                           "acked", "failed", "complete latency (ms)"]
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in lines[4:-1]]
    assert rows == [["a-spout", "1", "7", "7", "0", "7", "0", "12.35"],
                    ["count[x]", "", "5", "4", "3", "2", "0", ""],
                    ["split", "2", "100", "90", "80", "70", "1", ""]]
    # the component is left-justified, every figure right-justified
    first = lines[4].split("│")[1:-1]
    assert first[0].startswith(" a-spout ") and first[0].rstrip().endswith("a-spout")
    assert all(c.endswith(" ") and c.rstrip() == c.rstrip() and c[-2] != " " for c in first[1:])


def test_stats_table_folds_a_long_name_instead_of_cutting_it() -> None:
    name = "a-component-with-a-very-long-name"
    stats = {name: {"tasks": 1, "emitted": 1, "transferred": 1, "executed": 1, "acked": 1, "failed": 0,
                    "complete_latency_ms": 1.0}}
    text = "".join(c.strip() for line in rendered(stats_table("t", stats), width=70)[4:-1]
                   for c in line.split("│")[1:2])
    assert text == name
