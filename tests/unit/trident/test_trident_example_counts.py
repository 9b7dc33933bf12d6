"""The Trident example prints its counts (``stormpy local`` through click's runner) and
``read_state`` reads the SQLite state it left back as plain values; ``read_state`` refuses what it
cannot read with the backend or file named."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from stormpy.cli.main import cli
from stormpy.config import SettingError
from stormpy.trident import StateFactory, read_state

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_the_trident_example_prints_its_counts_and_read_state_reads_them_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the example's SQLite file is relative to the current directory
    try:
        res = CliRunner().invoke(cli, ["local", str(EXAMPLES), "trident_wordcount:topology",
                                       "--idle-stop", "2", "--ttl", "120"], env={"COLUMNS": "200"})
    finally:
        sys.modules.pop("trident_wordcount", None)
    assert res.exit_code == 0, res.output
    assert "batch 1: the=100, and=50, ago=25, apples=25, bought=25" in res.output
    assert "batch 20: the=2000, and=1000, ago=500, apples=500, bought=500" in res.output
    counts = read_state(StateFactory.sqlite(str(tmp_path / "trident-wordcount.sqlite"), "counts"))
    assert counts[("the",)] == 2000 and counts[("cow",)] == 500 and len(counts) == 24
    assert all(isinstance(v, int) for v in counts.values())


def test_read_state_names_what_it_cannot_read(tmp_path: Path) -> None:
    with pytest.raises(SettingError, match="no SQLite file"):
        read_state(StateFactory.sqlite(str(tmp_path / "typo.sqlite"), "counts"))
    assert not (tmp_path / "typo.sqlite").exists()
    with pytest.raises(SettingError, match="not 'memory'"):
        read_state(StateFactory.memory("counts"))
