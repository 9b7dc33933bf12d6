"""What the Nimbus client commands print (``cli/client_cmds.py``), called in-process against a
fake Nimbus: ``stormpy list`` and ``stormpy info`` exactly (tables, degraded reasons, warnings,
metrics, the last error with its traceback; system components only with ``--system``), the lines
of kill/activate/deactivate/rebalance and what they ask Nimbus, ``-e`` refusals, the config ``jar``
submits with a topology, the shared options of every client command and their exit codes."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from stormpy.cli import client_cmds
from stormpy.cli.client_cmds import (
    EXIT_REFUSED,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    _executor_counts,
    _UploadSpeed,
    _user,
    client_options,
    default_topology_name,
    fail,
    kill_topology,
    print_wide,
    rebalance_topology,
    set_active,
    show_cluster,
    show_topology,
    submitted_overrides,
)
from stormpy.cli.main import cli


def lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


class FakeNimbus:
    """Answers ``cluster_info`` and ``topology_info`` as Nimbus does; records the other calls."""

    def __init__(self, topologies: bool = True) -> None:
        self.topologies = topologies
        self.calls: list[tuple[Any, ...]] = []

    def cluster_info(self) -> dict[str, Any]:
        return {"topologies": [
            {"name": "wc", "id": "wc-1-1700000000", "status": "ACTIVE", "num_workers": 2,
             "requested_workers": 3, "num_executors": 7, "uptime_secs": 12.6, "worker_restarts": 1,
             "degraded": "worker h1:6700 restarting"},
            {"name": "top[x]", "id": "top-2-1700000001", "status": "INACTIVE", "num_workers": 1,
             "requested_workers": 1, "num_executors": 3, "uptime_secs": 3.4}] if self.topologies else [],
            "supervisors": [{"slots_used": 2, "slots_total": 4}, {"slots_used": 1, "slots_total": 4}],
            "nimbus": {"host": "n1", "port": 6627}}

    def topology_info(self, name: str) -> dict[str, Any]:
        return {"name": name, "id": "wc-1-17", "status": "ACTIVE", "num_workers": 1, "requested_workers": 2,
                "num_executors": 4, "uptime_secs": 54.4, "degraded": "slots short", "warnings": ["w1 [x]"],
                "workers": [{"host": "h1", "port": 6700, "node": "s1", "executors": [[1, 1], [2, 2]],
                             "uptime_secs": 50.4, "heartbeat_age_secs": 0.44, "restarts": 2,
                             "last_exit": "exit 1"},
                            {"host": "h2", "port": 6701, "node": "s2", "executors": [[3, 3]],
                             "uptime_secs": None, "heartbeat_age_secs": None}],
                "components": {"__acker": {"tasks": 1}, "split": {"tasks": 2}, "count": {"tasks": 1}},
                "stats": {"split": {"emitted": 10, "transferred": 9, "executed": 8, "acked": 7, "failed": 1,
                                    "complete_latency_ms": 2.5}},
                "system_components": {"__acker": {"emitted": 3, "transferred": 3, "executed": 3,
                                                  "acked": 0, "failed": 0}},
                "metrics": {"split": {"1": {"m": {"b": 2, "a": 1}}, "2": {"n": 0.5}}},
                "errors": {"count": [{"message": "old", "task": 3, "host": "h1", "port": 6700},
                                     {"message": "Traceback\n  boom", "task": 3, "host": "h1",
                                      "port": 6700}]}}

    def kill(self, name: str, wait_secs: float | None) -> None:
        self.calls.append(("kill", name, wait_secs))

    def activate(self, name: str) -> None:
        self.calls.append(("activate", name))

    def deactivate(self, name: str) -> None:
        self.calls.append(("deactivate", name))

    def rebalance(self, name: str, wait_secs: float | None, num_workers: int | None,
                  executors: dict[str, int] | None) -> None:
        self.calls.append(("rebalance", name, wait_secs, num_workers, executors))


LIST = """\
                                          topologies
┏━━━━━━━━┳━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━┳━━━━━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━━━━┓
┃ name   ┃ id               ┃ status            ┃ workers ┃ executors ┃ uptime (s) ┃ restarts ┃
┡━━━━━━━━╇━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━╇━━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━━━━┩
│ wc     │ wc-1-1700000000  │ ACTIVE (degraded) │     2/3 │         7 │         13 │        1 │
│ top[x] │ top-2-1700000001 │ INACTIVE          │     1/1 │         3 │          3 │          │
└────────┴──────────────────┴───────────────────┴─────────┴───────────┴────────────┴──────────┘
degraded: wc: worker h1:6700 restarting
2 supervisor(s), 3/8 slots used; Nimbus n1:6627
"""

INFO = """\
wc (wc-1-17): ACTIVE, 1/2 workers, 4 executors, up 54 s
degraded: slots short
                                         workers
┏━━━━━━┳━━━━━━┳━━━━━━┳━━━━━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━┳━━━━━━━━━━━┓
┃ host ┃ port ┃ node ┃ executors ┃ uptime (s) ┃ heartbeat age (s) ┃ restarts ┃ last exit ┃
┡━━━━━━╇━━━━━━╇━━━━━━╇━━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━━━━┩
│ h1   │ 6700 │ s1   │ 2         │ 50         │ 0.4               │ 2        │ exit 1    │
│ h2   │ 6701 │ s2   │ 1         │            │                   │          │           │
└──────┴──────┴──────┴───────────┴────────────┴───────────────────┴──────────┴───────────┘
                                           topology wc
┏━━━━━━━━━━━┳━━━━━━━┳━━━━━━━━━┳━━━━━━━━━━━━━┳━━━━━━━━━━┳━━━━━━━┳━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━┓
┃ component ┃ tasks ┃ emitted ┃ transferred ┃ executed ┃ acked ┃ failed ┃ complete latency (ms) ┃
┡━━━━━━━━━━━╇━━━━━━━╇━━━━━━━━━╇━━━━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━╇━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━┩
│ count     │     1 │       0 │           0 │        0 │     0 │      0 │                       │
│ split     │     2 │      10 │           9 │        8 │     7 │      1 │                  2.50 │
└───────────┴───────┴─────────┴─────────────┴──────────┴───────┴────────┴───────────────────────┘
split task 1 metric m: {"a": 1, "b": 2}
split task 2 metric n: 0.5
last error of count (task 3, h1:6700):
Traceback
  boom
"""

LIST_NARROW = """\
                         topologies
┏━━━┳━━━━━━━━━━━━━┳━━━━━━━━━━━━━━┳━━━━┳━━━━━━┳━━━━━━━┳━━━━━┓
┃ … ┃ id          ┃ status       ┃ w… ┃ exe… ┃ upti… ┃ re… ┃
┡━━━╇━━━━━━━━━━━━━╇━━━━━━━━━━━━━━╇━━━━╇━━━━━━╇━━━━━━━╇━━━━━┩
│ … │ wc-1-17000… │ ACTIVE (deg… │ 2… │    7 │    13 │   1 │
│ … │ top-2-1700… │ INACTIVE     │ 1… │    3 │     3 │     │
└───┴─────────────┴──────────────┴────┴──────┴───────┴─────┘
"""


def test_list_prints_the_topologies_table_degraded_reasons_and_slots(
        capsys: pytest.CaptureFixture[str]) -> None:
    show_cluster(FakeNimbus())  # type: ignore[arg-type]
    out, err = capsys.readouterr()
    assert lines(out) == lines(LIST) and err == ""


def test_list_without_topologies(capsys: pytest.CaptureFixture[str]) -> None:
    show_cluster(FakeNimbus(topologies=False))  # type: ignore[arg-type]
    assert capsys.readouterr().out == ("No topologies running.\n"
                                       "2 supervisor(s), 3/8 slots used; Nimbus n1:6627\n")


def test_list_on_an_empty_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    class Empty:
        def cluster_info(self) -> dict[str, Any]:
            return {}

    show_cluster(Empty())  # type: ignore[arg-type]
    assert capsys.readouterr().out == ("No topologies running.\n"
                                       "0 supervisor(s), 0/0 slots used; Nimbus None:None\n")


def test_list_on_a_narrow_terminal_keeps_each_row_on_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    buf = io.StringIO()
    narrow = Console(file=buf, width=60, force_terminal=True, color_system=None)
    monkeypatch.setattr(client_cmds, "console", narrow)
    show_cluster(FakeNimbus())  # type: ignore[arg-type]
    assert lines(buf.getvalue()) == lines(LIST_NARROW)


def test_a_wide_table_is_printed_160_columns_wide_when_piped(capsys: pytest.CaptureFixture[str]) -> None:
    table = Table(title="t")
    table.add_column("id", no_wrap=True)
    table.add_row("x" * 150)
    print_wide(table)
    assert "x" * 150 in capsys.readouterr().out
    wider = Table(title="t")
    wider.add_column("id", no_wrap=True)
    wider.add_row("y" * 300)
    print_wide(wider)
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) == 160


def test_info_prints_status_workers_stats_metrics_and_the_last_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    show_topology(FakeNimbus(), "wc", False)  # type: ignore[arg-type]
    out, err = capsys.readouterr()
    assert lines(out) == lines(INFO)
    assert err == "warning: w1 [x]\n"


def test_info_with_system_components(capsys: pytest.CaptureFixture[str]) -> None:
    show_topology(FakeNimbus(), "wc", True)  # type: ignore[arg-type]
    rows = [line for line in lines(capsys.readouterr().out) if line.startswith("│ ")]
    assert rows[-3:] == [
        "│ __acker   │     1 │       3 │           3 │        3 │     0 │      0 │                       │",
        "│ count     │     1 │       0 │           0 │        0 │     0 │      0 │                       │",
        "│ split     │     2 │      10 │           9 │        8 │     7 │      1 │                  2.50 │"]


def test_info_of_a_quiet_topology(capsys: pytest.CaptureFixture[str]) -> None:
    class Quiet:
        def topology_info(self, name: str) -> dict[str, Any]:
            return {"name": name, "id": "q-1", "status": "INACTIVE", "num_workers": 0, "requested_workers": 1,
                    "num_executors": 0, "uptime_secs": 0.4, "workers": [], "warnings": None,
                    "components": {"s": {"tasks": 1}}, "stats": {}}

    show_topology(Quiet(), "q", False)  # type: ignore[arg-type]
    out, err = capsys.readouterr()
    assert lines(out)[0] == "q (q-1): INACTIVE, 0/1 workers, 0 executors, up 0 s"
    assert "degraded" not in out and "metric" not in out and "last error" not in out and err == ""
    row = "│ s         │     1 │       0 │           0 │        0 │     0 │      0 │                       │"
    assert row in lines(out)


def test_info_of_a_topology_without_any_figures(capsys: pytest.CaptureFixture[str]) -> None:
    class Bare:
        def topology_info(self, name: str) -> dict[str, Any]:
            return {"name": name, "id": "b-1", "status": "ACTIVE", "num_workers": 1, "requested_workers": 1,
                    "num_executors": 1, "uptime_secs": 1.0, "workers": [],
                    "metrics": {"s": {"1": {"raw": b"\x01", "ids": {3}}}}}

    show_topology(Bare(), "b", True)  # type: ignore[arg-type]
    out = lines(capsys.readouterr().out)
    assert out[0] == "b (b-1): ACTIVE, 1/1 workers, 1 executors, up 1 s"
    assert out[-2:] == ["s task 1 metric raw: \"b'\\\\x01'\"", 's task 1 metric ids: "{3}"']


def test_info_of_a_component_nimbus_has_stats_of_but_does_not_list(
        capsys: pytest.CaptureFixture[str]) -> None:
    class Partial:
        def topology_info(self, name: str) -> dict[str, Any]:
            return {"name": name, "id": "p-1", "status": "ACTIVE", "num_workers": 1, "requested_workers": 1,
                    "num_executors": 1, "uptime_secs": 1.0, "workers": [], "components": {},
                    "stats": {"s": {"emitted": 4}},
                    "system_components": {"__metrics": {"emitted": 2, "transferred": 2, "executed": 2,
                                                        "acked": 0, "failed": 0}}}

    show_topology(Partial(), "p", True)  # type: ignore[arg-type]
    rows = [line for line in lines(capsys.readouterr().out) if line.startswith("│ ")]
    assert rows == [
        "│ __metrics │       │       2 │           2 │        2 │     0 │      0 │                       │",
        "│ s         │       │       4 │           0 │        0 │     0 │      0 │                       │"]


def test_kill_activate_deactivate_rebalance_say_what_they_asked(capsys: pytest.CaptureFixture[str]) -> None:
    nimbus = FakeNimbus()
    kill_topology(nimbus, "wc", None)  # type: ignore[arg-type]
    kill_topology(nimbus, "wc", 2.50)  # type: ignore[arg-type]
    set_active(nimbus, "wc", True)  # type: ignore[arg-type]
    set_active(nimbus, "wc", False)  # type: ignore[arg-type]
    rebalance_topology(nimbus, "wc", 5.0, 3, ("split=4", "count=2"))  # type: ignore[arg-type]
    rebalance_topology(nimbus, "wc", None, None, ())  # type: ignore[arg-type]
    assert lines(capsys.readouterr().out) == [
        "killing topology wc; it is removed after its message timeout",
        "killing topology wc; it is removed after 2.5 s",
        "activated topology wc", "deactivated topology wc",
        "rebalancing topology wc", "rebalancing topology wc"]
    assert nimbus.calls == [("kill", "wc", None), ("kill", "wc", 2.5), ("activate", "wc"),
                            ("deactivate", "wc"),
                            ("rebalance", "wc", 5.0, 3, {"split": 4, "count": 2}),
                            ("rebalance", "wc", None, None, None)]


@pytest.mark.parametrize("item", ["split", "=3", "split=", "split=0", "split=-1", "split=x", "split:3",
                                  "split=x=3"])
def test_a_bad_executor_count_names_the_option(item: str) -> None:
    with pytest.raises(click.BadParameter) as err:
        _executor_counts(("count=1", item))
    assert err.value.message == f"{item!r} must look like component=N with N >= 1"
    assert err.value.param_hint == "-e"


def test_executor_counts() -> None:
    assert _executor_counts(("a=1", "b=12", "a=3")) == {"a": 3, "b": 12}
    assert _executor_counts(()) == {}


def test_jar_submits_the_topology_keys_of_files_and_every_pair_but_the_token(tmp_path: Path) -> None:
    conf = tmp_path / "c.yaml"
    conf.write_text("topology.workers: 3\nnimbus.host: n1\nnimbus.rpc.auth.token: t\n"
                    "topology.debug: true\n")
    given = submitted_overrides((str(conf),), ("topology.workers=5", "my.key=1", "nimbus.rpc.auth.token=u"))
    assert given == {"topology.workers": 5, "topology.debug": True, "my.key": 1}
    assert submitted_overrides((), ()) == {}


def test_jar_refuses_a_bad_config_argument(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        submitted_overrides((str(tmp_path / "missing.yaml"),), ())
    assert exit_info.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "missing.yaml" in err


def test_the_default_topology_name_is_the_modules_last_part() -> None:
    assert default_topology_name("topologies.word_count") == "word_count"
    assert default_topology_name("wc") == "wc"
    assert default_topology_name("a.b.c") == "c"


def test_the_submitter_is_the_login_user_or_nobody(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_cmds.getpass, "getuser", lambda: "alice")
    assert _user() == "alice"

    def no_user() -> str:
        raise OSError("no login name")

    monkeypatch.setattr(client_cmds.getpass, "getuser", no_user)
    assert _user() == ""


def test_fail_prints_one_error_line_and_exits_with_the_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        fail("topology [wc] is not running", EXIT_REFUSED)
    assert exit_info.value.code == 1
    assert capsys.readouterr().err == "error: topology [wc] is not running\n"
    assert (EXIT_REFUSED, EXIT_USAGE, EXIT_UNREACHABLE) == (1, 2, 3)


@click.command("probe")
@client_options
def probe(nimbus_address: str | None, config_file: tuple[str, ...], overrides: tuple[str, ...],
          timeout: float | None) -> None:
    click.echo(json.dumps([nimbus_address, config_file, overrides, timeout]))


def test_the_client_options_of_every_command() -> None:
    result = CliRunner().invoke(probe, ["--nimbus", "n1:6627", "--config", "a.yaml", "--config", "k=v",
                                       "-c", "x=1", "--conf", "y=2", "--timeout", "2.5"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == ["n1:6627", ["a.yaml", "k=v"], ["x=1", "y=2"], 2.5]
    assert json.loads(CliRunner().invoke(probe, []).output) == [None, [], [], None]


def test_the_client_options_help() -> None:
    text = " ".join(CliRunner().invoke(cli, ["kill", "--help"], terminal_width=400).output.split())
    assert "--nimbus HOST:PORT Nimbus to talk to (default: nimbus.host:nimbus.thrift.port)." in text
    assert ("--config FILE|KEY=VALUE Config file (YAML/JSON; default: $STORMPY_CONF or ./stormpy.yaml), "
            "or KEY=VALUE (repeatable). KEY=VALUE pairs win over files.") in text
    assert "-c, --conf KEY=VALUE|FILE Config override (repeatable): KEY=VALUE, or a YAML/JSON file." in text
    assert ("--timeout FLOAT Seconds to wait for each Nimbus answer "
            "(default: nimbus.rpc.timeout.secs).") in text
    logs = " ".join(CliRunner().invoke(cli, ["logs", "--help"], terminal_width=400).output.split())
    assert "--conf KEY=VALUE|FILE Config override (repeatable)" in logs and "-c, --conf" not in logs
    assert "-c, --component TEXT" in logs


def test_commands_reach_nimbus_through_the_shared_client(monkeypatch: pytest.MonkeyPatch) -> None:
    nimbus = FakeNimbus()
    seen: list[tuple[Any, ...]] = []

    class Client:
        def __init__(self, *args: Any) -> None:
            seen.append(args)

        def __enter__(self) -> FakeNimbus:
            return nimbus

        def __exit__(self, *exc: Any) -> None:
            return None

    monkeypatch.setattr(client_cmds, "nimbus_client", Client)
    result = CliRunner().invoke(cli, ["kill", "wc", "-w", "3", "--nimbus", "n:1", "-c", "a=1",
                                      "--timeout", "4"])
    assert result.exit_code == 0, result.output
    assert seen == [("n:1", (), ("a=1",), 4.0)]
    assert nimbus.calls == [("kill", "wc", 3.0)]
    assert result.output == "killing topology wc; it is removed after 3 s\n"


def test_the_upload_speed_once_known() -> None:
    now = [0.0]
    column = _UploadSpeed()
    with Progress(column, disable=True, get_time=lambda: now[0]) as progress:
        task = progress.add_task("uploading", total=10 * 1024 * 1024)
        assert column.render(progress.tasks[task]).plain == ""
        for second in range(1, 4):
            now[0] = float(second)
            progress.update(task, completed=second * 1024 * 1024)
        assert column.render(progress.tasks[task]).plain == "1.0 MB/s"


WORKERS_90 = """\
                                         workers
┏━━━━━━┳━━━━━━┳━━━━━━━━━┳━━━━━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━┳━━━━━━━━┓
┃      ┃      ┃         ┃           ┃            ┃                   ┃          ┃ last   ┃
┃ host ┃ port ┃ node    ┃ executors ┃ uptime (s) ┃ heartbeat age (s) ┃ restarts ┃ exit   ┃
┡━━━━━━╇━━━━━━╇━━━━━━━━━╇━━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━┩
│ h1   │ 6700 │ supervi │ 2         │ 50         │ 0.4               │ 2        │ exit 1 │
│      │      │ sor-7f3 │           │            │                   │          │ (kille │
│      │      │ a9c21   │           │            │                   │          │ d by   │
│      │      │         │           │            │                   │          │ SIGKIL │
│      │      │         │           │            │                   │          │ L)     │
│ h2   │ 6701 │ s2      │ 1         │            │                   │          │        │
└──────┴──────┴─────────┴───────────┴────────────┴───────────────────┴──────────┴────────┘
"""


def test_info_on_a_narrow_terminal_folds_only_the_node_and_last_exit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class LongNames(FakeNimbus):
        def topology_info(self, name: str) -> dict[str, Any]:
            info = super().topology_info(name)
            info["workers"][0].update(node="supervisor-7f3a9c21", last_exit="exit 1 (killed by SIGKILL)")
            return info

    buf = io.StringIO()
    narrow = Console(file=buf, width=90, force_terminal=True, color_system=None)
    monkeypatch.setattr(client_cmds, "console", narrow)
    show_topology(LongNames(), "wc", False)  # type: ignore[arg-type]
    assert lines(buf.getvalue())[:12] == lines(WORKERS_90)
