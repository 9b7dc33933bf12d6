"""What the CLI says about a topology's config (through click's runner): a value the submit check
refuses is one ``error:`` line (no traceback, no "cannot import module" unless the import
failed), its warnings are printed, ``--config`` and ``-c`` take a file or KEY=VALUE alike, and a
rebalance beyond a component's tasks is refused."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from nimbus_fakes import FakeClusterState, SimClock, staged_bundle

from stormpy.cli.main import cli
from stormpy.nimbus.info import topology_info
from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.store import BundleStore
from stormpy.nimbus.topologies import TopologyManager
from stormpy.rpc import RpcServer, rpc_method
from wordcount import build

WINDOWED = """
from stormpy.topology import Spout, TopologyBuilder
from stormpy.windowing import Duration, WindowedBolt


class Source(Spout):
    outputs = ["v"]

    def next_tuple(self):
        pass


class Report(WindowedBolt):
    def execute(self, window):
        pass


def topology():
    b = TopologyBuilder()
    b.set_spout("src", Source)
    b.set_bolt("top", Report.with_tumbling_window(Duration(seconds=10))).shuffle_grouping("src")
    return b
"""


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own_import_path: None) -> Iterator[None]:
    """The import path, the signal handlers `local` installs, and the leader memo stay this
    test's."""
    monkeypatch.setenv("STORMPY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("STORMPY_CONF", raising=False)
    monkeypatch.chdir(tmp_path)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in handlers.items():
        signal.signal(sig, handler)


def project(tmp_path: Path, source: str = WINDOWED) -> tuple[Path, str]:
    """A user's project directory holding one topology module (a fresh module name)."""
    name = f"usertopo_{uuid.uuid4().hex[:8]}"
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    (root / f"{name}.py").write_text(textwrap.dedent(source))
    return root, name


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def error_lines(result: Result) -> list[str]:
    return [line for line in result.output.splitlines() if line.strip()]


# -- local ------------------------------------------------------------------------------------------
def test_local_a_timeout_shorter_than_the_window_is_one_error_line(tmp_path: Path) -> None:
    root, module = project(tmp_path)
    result = run("local", str(root), module, "-c", "topology.message.timeout.secs=5")
    assert result.exit_code == 2
    assert error_lines(result) == [
        "error: topology.message.timeout.secs: must be >= 20 for component 'top' (its window "
        "holds tuples un-acked that long), got 5; raise the timeout or shorten the window"]


NO_HOST = ("-c", "topology.state.provider=redis",
           "-c", 'topology.state.provider.config={"jedisPoolConfig": {"port": 6379}}')
NO_HOST_ERROR = ("error: topology.state.provider.config: jedisPoolConfig names no host: give the "
                 "Redis server's host (or leave jedisPoolConfig out for 127.0.0.1:6379)")


def test_local_a_bad_state_provider_config_is_one_error_line_before_anything_runs(
        tmp_path: Path) -> None:
    root, module = project(tmp_path)
    result = run("local", str(root), module, *NO_HOST)
    assert result.exit_code == 2
    assert error_lines(result) == [NO_HOST_ERROR]
    result = run("local", str(root), module, "-c", "topology.state.provider=org.apache.storm.X")
    assert result.exit_code == 2
    assert error_lines(result)[0].startswith("error: topology.state.provider: must be one of ")


def test_local_prints_the_submit_warnings(tmp_path: Path) -> None:
    root, module = project(tmp_path)
    result = run("local", str(root), module, "--ttl", "0.2", "-c", "topology.max.spout.pending=1000")
    assert result.exit_code == 0, result.output
    assert ("warning: component 'top' holds each tuple un-acked for up to 20 s (its time window); "
            "with topology.max.spout.pending 1000 (every spout) a spout task stalls at 1000 "
            "pending tuples, so the window sees at most 50 tuples/s per spout task; raise or unset "
            "topology.max.spout.pending if the spouts emit faster") in result.output.splitlines()


def test_the_stormpy_command_prints_a_warning_once_not_also_as_a_log_record(
        tmp_path: Path) -> None:
    root, module = project(tmp_path)
    src = Path(__file__).resolve().parents[3] / "src"
    res = subprocess.run([sys.executable, "-m", "stormpy.cli", "local", str(root), module, "--ttl",
                          "0.2", "-c", "topology.max.spout.pending=1000"],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(src), "COLUMNS": "200"})
    assert res.returncode == 0, res.stderr
    shown = [line for line in res.stderr.splitlines() if "holds each tuple un-acked" in line]
    assert len(shown) == 1 and shown[0].startswith("warning: component 'top'"), res.stderr


FAILING = WINDOWED.replace("class Report(WindowedBolt):", """class Boom(Spout):
    outputs = ["v"]

    def next_tuple(self):
        raise KeyError("unknown field 'temp'")


class Report(WindowedBolt):""").replace('b.set_spout("src", Source)', 'b.set_spout("src", Boom)')


def test_the_error_that_stops_a_local_run_is_printed_once_with_its_traceback(
        tmp_path: Path) -> None:
    """The summary prints the error and its traceback; the worker's log records of it are not
    printed too."""
    root, module = project(tmp_path, FAILING)
    src = Path(__file__).resolve().parents[3] / "src"
    res = subprocess.run([sys.executable, "-m", "stormpy.cli", "local", str(root), module, "--ttl",
                          "30"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(src), "COLUMNS": "200"})
    assert res.returncode == 1, res.stderr
    assert res.stderr.count("Traceback (most recent call last)") == 1, res.stderr
    assert res.stderr.count("raised KeyError") == 1, res.stderr
    assert res.stderr.startswith("topology failed: component 'src' task "), res.stderr


def test_local_a_check_failing_while_the_module_is_imported_is_not_an_import_error(
        tmp_path: Path) -> None:
    root, module = project(tmp_path, WINDOWED + "\nfrom stormpy.config import SettingError\n"
                                                "raise SettingError('my.app.limit', 'must be > 0, "
                                                "got -1')\n")
    result = run("local", str(root), module)
    assert result.exit_code == 2
    assert error_lines(result) == ["error: my.app.limit: must be > 0, got -1"]


def test_local_a_real_import_failure_still_says_so(tmp_path: Path) -> None:
    root, module = project(tmp_path, "import no_such_dependency_here\n")
    result = run("local", str(root), module)
    assert result.exit_code == 2
    assert f"cannot import module '{module}'" in result.output
    assert "ModuleNotFoundError: No module named 'no_such_dependency_here'" in result.output


def test_local_takes_a_config_file_and_key_value_pairs_win(tmp_path: Path) -> None:
    root, module = project(tmp_path)
    conf = tmp_path / "topo.yaml"
    conf.write_text("topology.message.timeout.secs: 5\ntopology.workers: 0\n")
    result = run("local", str(root), module, "-c", str(conf), "-c", "topology.workers=1")
    assert result.exit_code == 2
    assert "topology.message.timeout.secs: must be >= 20" in result.output  # from the file
    json_conf = tmp_path / "topo.json"
    json_conf.write_text('{"topology.message.timeout.secs": 5}')
    result = run("local", str(root), module, "--config", str(json_conf),
                 "-c", "topology.message.timeout.secs=60", "--ttl", "0.1")
    assert result.exit_code == 0, result.output  # the pair won over the file
    result = run("local", str(root), module, "-c", "missing.yaml")
    assert error_lines(result) == ["error: config argument 'missing.yaml' is neither an existing "
                                   "file (YAML or JSON) nor KEY=VALUE"]


# -- jar and rebalance against a Nimbus stand-in -------------------------------------------------------
class Nimbus:
    """Leads; refuses uploads (none may happen); rebalances through a real TopologyManager."""

    def __init__(self, manager: TopologyManager) -> None:
        self.manager = manager
        self.address = ""
        self.uploads = 0

    @rpc_method
    def get_leader(self) -> dict[str, Any]:
        return {"leader": self.address, "is_leader": True, "self": self.address}

    @rpc_method
    def begin_upload(self, size: Any = None) -> dict[str, Any]:
        self.uploads += 1
        raise RuntimeError("no upload expected")

    @rpc_method
    def get_topology_info(self, name: Any) -> dict[str, Any]:
        base = self.manager.base_by_name(name)
        tid = base.topology_id
        return topology_info(base, self.manager.state.assignment(tid), self.manager.layout(base),
                             {}, {}, time.time(), warnings=self.manager.describe(tid)[1].get(
                                 "topology.submit.warnings", []))

    @rpc_method
    def rebalance(self, name: Any, wait_secs: Any = None, num_workers: Any = None,
                  executors: Any = None) -> dict[str, Any]:
        self.manager.rebalance(name, wait_secs, num_workers, executors)
        return {}


@pytest.fixture
def nimbus(tmp_path: Path) -> Iterator[Nimbus]:
    state = FakeClusterState()
    state.add_supervisor("sup-a", [6700, 6701])
    manager = TopologyManager(state, BundleStore(NimbusDirs(tmp_path / "nimbus")),  # type: ignore[arg-type]
                              {}, clock=SimClock())
    manager.submit("wc", staged_bundle(tmp_path, "wc"), build(100).create_topology(),
                   {"topology.wrokers": 1, "topology.[red]x": 1}, "active")
    fake = Nimbus(manager)
    with RpcServer("127.0.0.1", 0, fake, name="nimbus") as server:
        fake.address = f"127.0.0.1:{server.port}"
        yield fake


def test_jar_a_refused_value_is_one_error_line_before_any_upload(tmp_path: Path,
                                                                 nimbus: Nimbus) -> None:
    root, module = project(tmp_path)
    result = run("jar", str(root), module, "--nimbus", nimbus.address,
                 "--config", "topology.message.timeout.secs=5")
    assert result.exit_code == 2
    assert error_lines(result)[-1] == (
        "error: topology.message.timeout.secs: must be >= 20 for component 'top' (its window "
        "holds tuples un-acked that long), got 5; raise the timeout or shorten the window")
    assert "Traceback" not in result.output and nimbus.uploads == 0


def test_jar_a_bad_state_provider_config_is_refused_before_any_upload(tmp_path: Path,
                                                                       nimbus: Nimbus) -> None:
    root, module = project(tmp_path)
    result = run("jar", str(root), module, "--nimbus", nimbus.address, *NO_HOST)
    assert result.exit_code == 2
    # refused before the directory is bundled and the upload's progress bar shows
    assert error_lines(result) == [NO_HOST_ERROR]
    assert nimbus.uploads == 0


def test_the_upload_progress_shows_no_question_mark_for_an_unknown_speed() -> None:
    from rich.progress import Progress

    from stormpy.cli.client_cmds import _UploadSpeed

    column = _UploadSpeed()
    with Progress(column, disable=True) as progress:
        task = progress.add_task("uploading", total=1024)
        assert column.render(progress.tasks[task]).plain == ""


def test_jar_takes_topology_keys_from_a_config_file(tmp_path: Path, nimbus: Nimbus) -> None:
    root, module = project(tmp_path)
    conf = tmp_path / "cluster.yaml"
    conf.write_text(f"nimbus.seeds: ['{nimbus.address}']\ntopology.workers: 0\n")
    result = run("jar", str(root), module, "-c", str(conf), "--nimbus", nimbus.address)
    assert result.exit_code == 2
    assert error_lines(result)[-1] == "error: topology.workers: must be an integer >= 1, got 0"
    assert nimbus.uploads == 0


def test_rebalance_beyond_the_task_count_is_refused_by_nimbus(nimbus: Nimbus,
                                                             tmp_path: Path) -> None:
    conf = tmp_path / "client.json"
    conf.write_text('{"nimbus.rpc.timeout.secs": 20}')
    result = run("rebalance", "wc", "-w", "0", "-e", "count=4", "--nimbus", nimbus.address,
                 "--config", str(conf))
    assert result.exit_code == 1
    assert error_lines(result) == [
        "error: InvalidRequestError: rebalance of 'wc': component 'count' has 3 tasks, so it "
        "cannot run 4 executors (an executor runs at least one task; the task count is fixed at "
        "submit, set it with set_num_tasks / topology.tasks)"]
    result = run("rebalance", "wc", "-w", "0", "-e", "count=3", "--nimbus", nimbus.address,
                 "--config", "nimbus.rpc.timeout.secs=20")
    assert result.exit_code == 0, result.output
    assert "rebalancing topology wc" in result.output


def test_info_shows_the_warnings_nimbus_kept(nimbus: Nimbus) -> None:
    result = run("info", "wc", "--nimbus", nimbus.address)
    assert result.exit_code == 0, result.output
    assert ("warning: unknown config key topology.wrokers (did you mean topology.workers?); it is "
            "passed on but stormpy does not read it") in result.output.splitlines()
    assert "unknown config key topology.[red]x" in result.output  # shown as written, not as markup
