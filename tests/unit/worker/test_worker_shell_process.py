"""The worker process's start, judged in-process: a topology file that is missing or damaged is a
startup error naming the file, and a daemon configuration that cannot be read exits with the
documented startup code before anything starts."""

from __future__ import annotations

from pathlib import Path

import msgpack
import pytest

from stormpy.worker.process import EXIT_STARTUP_FAILED, StartupError, main, read_topology_file


def test_a_missing_topology_file_is_a_startup_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "topology.msgpack"
    with pytest.raises(StartupError) as caught:
        read_topology_file(path)
    assert str(caught.value) == f"{path} does not exist (was the topology downloaded?)"


def test_a_damaged_topology_file_is_a_startup_error_naming_it_and_the_defect(tmp_path: Path) -> None:
    path = tmp_path / "topology.msgpack"
    path.write_bytes(msgpack.packb({"conf": {}}))
    with pytest.raises(StartupError) as caught:
        read_topology_file(path)
    assert str(caught.value) == f"cannot read {path}: KeyError: 'spec'"


def test_an_unreadable_daemon_configuration_exits_with_the_startup_code(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "storm.yaml"
    code = main(["--topology-id", "t-1", "--supervisor-id", "s", "--port", "6700",
                 "--local-dir", str(tmp_path), "--conf-file", str(missing)])
    assert code == EXIT_STARTUP_FAILED == 2
    err = capsys.readouterr().err
    assert err.startswith("stormpy worker: cannot read configuration: ") and str(missing) in err
