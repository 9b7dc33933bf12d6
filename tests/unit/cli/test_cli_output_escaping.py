"""User and error text reaches the terminal as written (``cli/output.py``), through click's
runner: ``stormpy info`` prints a component's traceback with its ``[...]`` and long paths
whole, a degraded reason and names with brackets are not read as rich markup, and error
lines keep their text."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from stormpy.cli import client_cmds
from stormpy.cli.main import cli

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
LONG_PATH = "/home/newcomer/projects/access-log-top-paths/topologies/access_log_topology.py"
TRACEBACK = (f'Traceback (most recent call last):\n  File "{LONG_PATH}", line 42, in execute\n'
             "    self.emit([ip, path, int(status)])\n"
             "ValueError: invalid literal for int() with base 10: '[bold]oops'")


class FakeNimbus:
    """Answers ``topology_info`` as Nimbus does, with user text full of markup characters."""

    def topology_info(self, name: str) -> dict[str, Any]:
        return {
            "name": name, "id": f"{name}-1-1700000000", "status": "ACTIVE", "num_workers": 1,
            "requested_workers": 1, "num_executors": 3, "uptime_secs": 54.0,
            "degraded": "worker [restarting] 3 times",
            "workers": [{"host": "127.0.0.1", "port": 6700, "node": "supervisor-[0]",
                         "executors": [[1, 1]], "uptime_secs": 50.0, "heartbeat_age_secs": 0.4}],
            "components": {"parse[v2]": {"tasks": 1, "executors": 1}},
            "stats": {}, "system_components": {}, "metrics": {},
            "errors": {"parse[v2]": [{"time": 1.0, "task": 3, "host": "127.0.0.1", "port": 6700,
                                      "message": TRACEBACK}]},
        }


@pytest.fixture
def fake_nimbus(monkeypatch: pytest.MonkeyPatch) -> None:
    @contextmanager
    def client(*_args: Any) -> Iterator[FakeNimbus]:
        yield FakeNimbus()
    monkeypatch.setattr(client_cmds, "nimbus_client", client)


def test_info_prints_a_traceback_and_names_as_written(fake_nimbus: None) -> None:
    res = CliRunner().invoke(cli, ["info", "logs"], env={"COLUMNS": "60"})
    assert res.exit_code == 0, res.output
    assert "    self.emit([ip, path, int(status)])" in res.output
    assert "'[bold]oops'" in res.output
    assert f'File "{LONG_PATH}", line 42' in res.output  # whole: not wrapped at 60 columns
    assert "degraded: worker [restarting] 3 times" in res.output
    assert "last error of parse[v2] (task 3, 127.0.0.1:6700):" in res.output
    assert "parse[v2]" in res.output.split("last error")[0]  # in the stats table too


def test_an_error_line_keeps_its_brackets() -> None:
    res = CliRunner().invoke(cli, ["local", str(EXAMPLES), "wordcount:topology", "-c", "[x]"])
    assert res.exit_code == 2
    assert ("error: config argument '[x]' is neither an existing file (YAML or JSON) nor "
            "KEY=VALUE") in res.output
