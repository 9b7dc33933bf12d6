"""docs/getting-started.md works as written: its topology, run with its ``stormpy local`` command
(through click's runner), prints the top paths of its window and says why it stopped; its test,
run as the guide says, passes."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from stormpy.cli.main import cli

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "getting-started.md"


def guide_block(lang: str, starts: str) -> str:
    for block in re.findall(rf"```{lang}\n(.*?)```", GUIDE.read_text(), re.S):
        if block.startswith(starts):
            return str(block)
    raise AssertionError(f"the guide has no {lang} block starting {starts!r}")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own_import_path: None) -> Path:
    """The guide's project directory, the current directory as in the guide."""
    code = tmp_path / "first_topology"
    code.mkdir()
    (code / "toppaths.py").write_text(guide_block("python", '"""The top paths'))
    (code / "test_toppaths.py").write_text(guide_block("python", "from stormpy.testing"))
    monkeypatch.chdir(tmp_path)
    return code


def test_the_guide_local_command_prints_the_top_paths(project: Path) -> None:
    command = re.search(r"^stormpy local .*$", guide_block("sh", "stormpy local"), re.M)
    assert command is not None
    args = command.group(0).split()[1:]
    assert args == ["local", "first_topology", "toppaths:topology", "--idle-stop", "2"]
    res = CliRunner().invoke(cli, [*args, "--ttl", "120"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert re.search(r"window ending \d\d:\d\d:\d\d: /index.html 300 hits", res.output)
    assert "/about.html 200 hits" in res.output and "/missing 100 hits" in res.output
    assert "stopped: finished: idle for 2 s (--idle-stop); 0 spout tuple(s) still pending" \
        in res.output


def test_the_guide_test_passes(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(project)  # what pytest does for a test file outside a package
    importlib.import_module("test_toppaths").test_lines_are_parsed_and_the_top_paths_counted()
