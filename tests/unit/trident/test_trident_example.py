"""``stormpy local`` runs examples/trident_wordcount.py as a subprocess with nothing else
started, and the counts in SQLite are exact."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from stormpy.state import SqliteStore
from stormpy.trident import TRANSACTIONAL, MapState

pytestmark = pytest.mark.timeout(240)
ROOT = Path(__file__).resolve().parents[3]
SENTENCES = ["the cow jumped over the moon", "the man went to the store and bought some candy",
             "four score and seven years ago", "how many apples can you eat"]


def test_stormpy_local_runs_the_trident_word_count(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    res = subprocess.run([sys.executable, "-m", "stormpy.cli", "local", str(ROOT / "examples"),
                          "trident_wordcount:topology", "--idle-stop", "2"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=200, env=env)
    assert res.returncode == 0, res.stderr
    state = MapState(SqliteStore(tmp_path / "trident-wordcount.sqlite", "trident_state",
                                 segments=("counts",)), TRANSACTIONAL)
    try:
        counts = {key[0]: value for key, value in state.items()}
    finally:
        state.close()
    assert counts == dict(Counter(w for i in range(2000) for w in SENTENCES[i % 4].split()))
