"""The smaller commands' logic, called in-process: what ``stormpy debug`` says it turned on or off,
``stormpy curve-keygen``'s two settings and its refusals, the logging ``-v`` sets up (and the
records it leaves to the commands), the daemons' config refusals (exit 2, one ``error:`` line),
and ``stormpy dev-cluster``'s config, port blocks, what it serves and the exits it reports once."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import zmq
from click.testing import CliRunner

from stormpy.cli.client_cmds import command_conf
from stormpy.cli.debug_cmd import say_sampling
from stormpy.cli.dev_cmds import (
    HA_SESSION_TIMEOUT_MS,
    daemon_conf,
    describe_cluster,
    report_exits,
    slot_port_blocks,
)
from stormpy.cli.dev_cmds import (
    _conf as dev_conf,
)
from stormpy.cli.keygen_cmd import write_key_pair
from stormpy.cli.main import cli, configure_logging
from stormpy.config import DEFAULTS

SESSION = "storm.zookeeper.session.timeout"


def test_debug_says_what_it_samples_and_where_to_read_it(capsys: pytest.CaptureFixture[str]) -> None:
    say_sampling("wc", "split", True, 12.5)
    say_sampling("wc", None, True, 10.0)
    say_sampling("wc", "split", False, 10.0)
    say_sampling("wc", None, False, 10.0)
    assert capsys.readouterr().out.splitlines() == [
        "sampling 12.5% of the tuples of component split of wc; see them with "
        "`stormpy logs wc --events -c split` or on the UI's events page",
        "sampling 10% of the tuples of every component of wc; see them with "
        "`stormpy logs wc --events` or on the UI's events page",
        "no longer sampling the tuples of component split of wc",
        "no longer sampling the tuples of every component of wc"]


def test_keygen_prints_the_two_settings_of_a_fresh_key(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nimbus.key"
    write_key_pair(path)
    out = capsys.readouterr().out.splitlines()
    secret = path.read_text().strip()
    assert out == [f"nimbus.rpc.curve.secret.key.file: {path}",
                   f"nimbus.rpc.curve.public.key: {zmq.curve_public(secret.encode()).decode()}"]
    assert path.stat().st_mode & 0o777 == 0o600


def test_keygen_never_overwrites_a_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nimbus.key"
    path.write_text("old\n")
    with pytest.raises(SystemExit) as exit_info:
        write_key_pair(path)
    assert exit_info.value.code == 2 and path.read_text() == "old\n"
    assert capsys.readouterr() == ("", f"error: {path} exists; remove it first to make a new key\n")


def test_keygen_names_a_path_it_cannot_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "missing" / "nimbus.key"
    with pytest.raises(SystemExit) as exit_info:
        write_key_pair(path)
    assert exit_info.value.code == 2
    assert capsys.readouterr() == ("", f"error: cannot write {path}: No such file or directory\n")


@contextmanager
def bare_root() -> Iterator[logging.Logger]:
    """The root logger without handlers (as in a fresh ``stormpy`` process), restored after."""
    root = logging.getLogger()
    saved, level = root.handlers[:], root.level
    root.handlers = []
    try:
        yield root
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers = saved
        root.setLevel(level)


@pytest.mark.parametrize(("verbose", "level"), [(True, logging.INFO), (False, logging.WARNING)])
def test_logging_goes_to_stderr_at_the_chosen_level(verbose: bool, level: int) -> None:
    with bare_root() as root:
        configure_logging(verbose)
        chosen, handlers = root.level, root.handlers[:]
    assert chosen == level
    [handler] = handlers
    assert type(handler) is logging.StreamHandler
    record = logging.LogRecord("stormpy.x", logging.WARNING, __file__, 1, "slow %s", ("worker",), None)
    text = handler.format(record)
    assert text.endswith(" WARNING stormpy.x: slow worker") and text[:4].isdigit()
    assert handler.filter(record)
    for flag in ("submit_warning", "summarized"):
        printed = logging.makeLogRecord({"msg": "x", flag: True})
        assert not handler.filter(printed)
        assert handler.filter(logging.makeLogRecord({"msg": "x", flag: False}))


def test_a_bad_config_ends_a_command_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert command_conf((), ("nimbus.host=n1",))["nimbus.host"] == "n1"
    with pytest.raises(SystemExit) as exit_info:
        command_conf((str(tmp_path / "nope.yaml"),), ())
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "nope.yaml" in err and err.count("\n") == 1


@pytest.mark.parametrize("command", ["nimbus", "supervisor", "ui", "logviewer"])
def test_each_daemon_refuses_a_bad_config_before_starting(command: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, [command, "--config", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert result.output.startswith("error: ") and "nope.yaml" in result.output


def test_several_nimbuses_get_a_short_session_unless_one_is_set() -> None:
    conf = {SESSION: DEFAULTS[SESSION]}
    assert daemon_conf(conf, {"a": 1}, 2) == {"a": 1, SESSION: HA_SESSION_TIMEOUT_MS}
    assert HA_SESSION_TIMEOUT_MS == 6000
    assert daemon_conf(conf, {"a": 1}, 1) == {"a": 1}
    assert daemon_conf({SESSION: 9000}, {}, 3) == {}  # set in a config file the daemons read
    assert daemon_conf(conf, {SESSION: DEFAULTS[SESSION]}, 2) == {SESSION: DEFAULTS[SESSION]}
    given = {"a": 1}
    daemon_conf(conf, given, 2)
    assert given == {"a": 1}


def test_each_supervisor_gets_its_block_of_ports() -> None:
    assert slot_port_blocks(6700, 3, 2) == [[6700, 6701], [6702, 6703], [6704, 6705]]
    assert slot_port_blocks(7000, 1, 4) == [[7000, 7001, 7002, 7003]]


def daemon(name: str, running: bool = True, code: int | None = None, out: str = "") -> Any:
    return SimpleNamespace(name=name, running=running, out_path=Path(out or f"/d/{name}.out"),
                           proc=SimpleNamespace(returncode=code) if code is not None else None)


class FakeCluster:
    host = "127.0.0.1"
    nimbus_ports = [6627, 6628]
    nimbus_address = "127.0.0.1:6627,127.0.0.1:6628"
    ui_url = "http://127.0.0.1:8080"

    def __init__(self, ui: bool = True) -> None:
        self.nimbuses = [SimpleNamespace(name="nimbus-0", workdir=Path("/d/n0")),
                         SimpleNamespace(name="nimbus-1", workdir=Path("/d/n1"))]
        self.supervisors = [SimpleNamespace(workdir=Path("/d/s0")), SimpleNamespace(workdir=Path("/d/s1"))]
        self.ui = object() if ui else None
        self.running: list[Any] = []

    def leader_index(self) -> int:
        return 1

    def supervisor_infos(self) -> dict[int, Any]:
        return {0: SimpleNamespace(logviewer_port=8000), 1: SimpleNamespace(logviewer_port=0)}

    def daemons(self) -> list[Any]:
        return self.running


def test_the_dev_cluster_says_what_it_serves(capsys: pytest.CaptureFixture[str]) -> None:
    describe_cluster(FakeCluster(), [[6700, 6701], [6702, 6703], [6704, 6705]][:2])  # type: ignore[arg-type]
    assert capsys.readouterr().out.splitlines() == [
        "nimbus-0 (standby) serving on 127.0.0.1:6627 (logs /d/n0/logs)",
        "nimbus-1 (leader) serving on 127.0.0.1:6628 (logs /d/n1/logs)",
        "UI serving on http://127.0.0.1:8080 (REST http://127.0.0.1:8080/api/v1/cluster/summary, "
        "metrics http://127.0.0.1:8080/metrics)",
        "supervisor-0: slots 6700-6701 (logs /d/s0/logs, log server http://127.0.0.1:8000)",
        "supervisor-1: slots 6702-6703 (logs /d/s1/logs, log server none)",
        "submit with: stormpy jar DIR MODULE:ATTR --nimbus 127.0.0.1:6627,127.0.0.1:6628 (DIR holds "
        "your code; from the stormpy repository: stormpy jar examples wordcount:topology)",
        "Ctrl-C stops the cluster"]


def test_a_dev_cluster_without_ui_or_a_supervisors_record(capsys: pytest.CaptureFixture[str]) -> None:
    cluster = FakeCluster(ui=False)
    cluster.supervisor_infos = lambda: {}  # type: ignore[method-assign]
    describe_cluster(cluster, [[6700], [6701]])  # type: ignore[arg-type]
    out = capsys.readouterr().out
    assert "UI serving" not in out
    assert "supervisor-0: slots 6700-6700 (logs /d/s0/logs, log server none)" in out.splitlines()


def test_each_exit_is_reported_once(capsys: pytest.CaptureFixture[str]) -> None:
    cluster = FakeCluster()
    cluster.running = [daemon("nimbus-0"), daemon("supervisor-1", running=False, code=3),
                       daemon("ui", running=False)]
    spark = SimpleNamespace(base_dir=Path("/d/spark"), dead_daemons=lambda: ["worker-0"])
    reported: set[str] = set()
    report_exits(cluster, spark, reported)  # type: ignore[arg-type]
    report_exits(cluster, spark, reported)  # type: ignore[arg-type]
    assert capsys.readouterr() == ("", "Spark worker-0 exited; see /d/spark\n"
                                       "supervisor-1 exited (code 3); see /d/supervisor-1.out\n"
                                       "ui exited (code ?); see /d/ui.out\n")
    assert reported == {"spark-worker-0", "supervisor-1", "ui"}
    cluster.running.append(daemon("nimbus-1", running=False, code=0))
    report_exits(cluster, None, reported)  # type: ignore[arg-type]
    assert capsys.readouterr().err == "nimbus-1 exited (code 0); see /d/nimbus-1.out\n"


def test_a_spark_daemon_and_a_stormpy_daemon_of_one_name_are_both_reported(
        capsys: pytest.CaptureFixture[str]) -> None:
    cluster = FakeCluster()
    cluster.running = [daemon("master", running=False, code=1)]
    spark = SimpleNamespace(base_dir=Path("/d/spark"), dead_daemons=lambda: ["master"])
    report_exits(cluster, spark, set())  # type: ignore[arg-type]
    assert capsys.readouterr().err == ("Spark master exited; see /d/spark\n"
                                       "master exited (code 1); see /d/master.out\n")


def test_dev_commands_read_the_config_and_keep_what_was_given_apart(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf_file = tmp_path / "dev.yaml"
    conf_file.write_text("supervisor.slots.ports: [7100, 7101]\n")
    conf, given = dev_conf((str(conf_file),), ("storm.zookeeper.port=2200",))
    assert conf["supervisor.slots.ports"] == [7100, 7101] and conf["storm.zookeeper.port"] == 2200
    assert conf[SESSION] == DEFAULTS[SESSION]
    assert given == {"supervisor.slots.ports": [7100, 7101], "storm.zookeeper.port": 2200}
    with pytest.raises(SystemExit) as exit_info:
        dev_conf((str(tmp_path / "nope.yaml"),), ())
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "nope.yaml" in err and err.count("\n") == 1
