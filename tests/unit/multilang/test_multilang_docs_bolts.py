"""The complete minimal shell bolts of docs/multilang.md, run as written: the Python one and the
Node.js one each upper-case the words of a topology (every tuple acked); and a shell bolt that
crashes is reported by ``stormpy local`` (through click's runner) with the tail of its stderr,
its own traceback, not only its exit code."""

from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from mlkit import no_subprocess_left_behind

from stormpy import TopologyBuilder  # noqa: E402
from stormpy.cli.main import cli  # noqa: E402
from stormpy.multilang import ShellBolt  # noqa: E402
from stormpy.testing import Capture, FeederSpout, LocalCluster, wait_for  # noqa: E402

DOC = Path(__file__).resolve().parents[3] / "docs" / "multilang.md"


@pytest.fixture(autouse=True)
def _no_subprocess_left_behind() -> Iterator[None]:
    yield from no_subprocess_left_behind()


def doc_program(name: str) -> str:
    """The fenced code block of docs/multilang.md whose first line names ``name``."""
    for block in re.findall(r"```\w+\n(.*?)```", DOC.read_text(), re.S):
        first = block.splitlines()[0]
        if first.lstrip("#/ ").startswith(f"{name}:"):
            return str(block)
    raise AssertionError(f"docs/multilang.md has no program {name}")


def need(program: str) -> str:
    path = shutil.which(program)
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{program} is not installed (CI must have it)")
        pytest.skip(f"{program} is not installed")
    return path


@pytest.mark.parametrize(("interpreter", "name"), [("python3", "upper.py"), ("node", "upper.js")])
def test_the_documented_shell_bolt_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   interpreter: str, name: str) -> None:
    command = sys.executable if interpreter == "python3" else need(interpreter)
    (tmp_path / name).write_text(doc_program(name))
    monkeypatch.chdir(tmp_path)  # in local mode the code dir is the current directory
    words, sink = FeederSpout(["word"]), Capture()
    b = TopologyBuilder()
    b.set_spout("words", words)
    b.set_bolt("upper", ShellBolt(command, name).declare(["word"])
               ).shuffle_grouping("words")
    b.set_bolt("sink", sink).shuffle_grouping("upper")
    with LocalCluster() as cluster:
        cluster.submit_topology("docs", {"topology.subprocess.timeout.secs": 30},
                                b.create_topology())
        for i, word in enumerate(["storm", "in", "python"]):
            words.feed([word], msg_id=i)
        wait_for(lambda: sorted(words.acked) == [0, 1, 2], 60, "every word upper-cased and acked")
        assert sorted(v[0] for v in sink.values) == ["IN", "PYTHON", "STORM"]
        assert cluster.errors("docs") == []


CRASHING = '''
from stormpy.multilang import ShellBolt
from stormpy.topology import Spout, TopologyBuilder


class Numbers(Spout):
    outputs = ["word"]

    def open(self, conf, context):
        self.left = 1

    def next_tuple(self):
        if self.left:
            self.left -= 1
            self.emit([42], msg_id=1)


builder = TopologyBuilder()
builder.set_spout("numbers", Numbers)
builder.set_bolt("upper", ShellBolt(PYTHON, "upper.py").declare(["word"])).shuffle_grouping("numbers")
topology = builder.create_topology()
'''


def test_stormpy_local_reports_a_crashing_shell_bolt_with_the_tail_of_its_stderr(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own_import_path: None) -> None:
    (tmp_path / "upper.py").write_text(doc_program("upper.py"))
    (tmp_path / "crashing_shell.py").write_text(
        f"PYTHON = {sys.executable!r}\n" + textwrap.dedent(CRASHING))
    monkeypatch.chdir(tmp_path)  # stormpy local runs shell components in the current directory
    res = CliRunner().invoke(cli, ["local", str(tmp_path), "crashing_shell:topology",
                                   "--ttl", "4"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "last error of upper:" in res.output
    assert "subprocess exited (exit code 1); its stderr ended with:" in res.output
    assert "Traceback (most recent call last):" in res.output
    assert "AttributeError: 'int' object has no attribute 'upper'" in res.output
