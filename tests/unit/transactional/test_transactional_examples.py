"""The transactional examples end with exact results (local mode, in-memory coordinator state)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import transactional_global_count as global_count
import transactional_wordcount as wordcount
from stormpy.testing import LocalCluster
from stormpy.transactional import SqliteState

pytestmark = pytest.mark.timeout(90)
CONF = {"transactional.store": "memory", "topology.max.spout.pending": 3}


def read_all(db: Path) -> dict[str, object]:
    if not db.exists():
        return {}
    state = SqliteState(db)
    try:
        keys = list(state.keys())
        return {k: state.get(k).value for k in keys}  # type: ignore[union-attr]
    finally:
        state.close()


def test_word_count_commits_exact_per_word_counts(tmp_path: Path) -> None:
    n = 800
    db = tmp_path / "wc.sqlite"
    expected = Counter(w for i in range(n) for w in wordcount.SENTENCES[i % 5].split())
    with LocalCluster() as cluster:
        cluster.submit_topology("wc", CONF, wordcount.build(n, str(db), take_per_batch=30)
                                .create_topology())
        cluster.wait_for(lambda: read_all(db) == dict(expected), 60, "the exact word counts")
        cluster.wait_until_quiet("wc")
    assert read_all(db) == dict(expected)


def test_global_count_example_in_memory(tmp_path: Path) -> None:
    db = tmp_path / "gc.sqlite"
    with LocalCluster() as cluster:
        cluster.submit_topology("gc", CONF, global_count.build(250, str(db), 9).create_topology())
        cluster.wait_for(lambda: read_all(db).get(global_count.GLOBAL_COUNT_KEY) == 250, 60,
                         "the count")
        cluster.wait_until_quiet("gc")
    assert read_all(db) == {global_count.GLOBAL_COUNT_KEY: 250}
