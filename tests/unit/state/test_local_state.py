"""Local mode needs nothing started by hand, like Storm's LocalCluster: a transactional topology's
coordinator state and stateful bolts' state live with the LocalCluster instance, fresh for each
one (two LocalClusters in one process share nothing, even with the same transactional id);
``stormpy local`` runs the transactional and the stateful examples as they are; the
``transactional.*`` settings are checked, each error naming its setting."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import stateful_wordcount
import transactional_global_count as global_count
from stormpy.config import SettingError
from stormpy.state import KeyValueState, MemoryBackend, SqliteStore
from stormpy.testing import LocalCluster
from stormpy.topology._state import TRANSACTIONAL
from stormpy.transactional import SqliteState
from stormpy.transactional._settings import transactional_settings
from stormpy.transactional._store import OWNER, open_store

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[3]
STORMPY = [sys.executable, "-m", "stormpy.cli"]
TX_ID = "global-count"  # the example's transactional id


def stored_count(db: Path) -> int | None:
    if not db.exists():
        return None
    state = SqliteState(db)
    try:
        value = state.get(global_count.GLOBAL_COUNT_KEY)
    finally:
        state.close()
    return None if value is None else value.value


def run_global_count(cluster: LocalCluster, db: Path, n: int) -> None:
    cluster.submit_topology("gc", {"topology.max.spout.pending": 3},
                            global_count.build(n, str(db), 7).create_topology())
    cluster.wait_for(lambda: stored_count(db) == n, 90, f"the count to reach {n}")
    cluster.wait_until_quiet("gc")


def test_two_local_clusters_do_not_share_transactional_state(tmp_path: Path) -> None:
    with LocalCluster() as first:
        run_global_count(first, tmp_path / "first.sqlite", 120)
        mine = first.state.named_store(TRANSACTIONAL, OWNER, TX_ID)
        assert int(mine.get("coordinator/current")) > 1  # the coordinator kept its state here
        with LocalCluster() as second:  # at the same time, same transactional id
            assert second.state is not first.state
            assert second.state.named_store(TRANSACTIONAL, OWNER, TX_ID).children() == []
            run_global_count(second, tmp_path / "second.sqlite", 90)
    with LocalCluster() as third:  # and after: a new LocalCluster starts fresh
        assert third.state.named_store(TRANSACTIONAL, OWNER, TX_ID).children() == []
        run_global_count(third, tmp_path / "third.sqlite", 60)
    # a shared coordinator would have gone on with the first run's txids and emitters' positions
    assert stored_count(tmp_path / "second.sqlite") == 90
    assert stored_count(tmp_path / "third.sqlite") == 60


@pytest.mark.parametrize(("conf", "setting", "problem"), [
    ({"transactional.store": "rediss"}, "transactional.store", "must be one of"),
    ({"transactional.zookeeper.servers": 5}, "transactional.zookeeper.servers", "host name"),
    ({"transactional.zookeeper.servers": []}, "transactional.zookeeper.servers", "host name"),
    ({"transactional.zookeeper.port": 0}, "transactional.zookeeper.port", "TCP port"),
    ({"transactional.zookeeper.port": "2181"}, "transactional.zookeeper.port", "TCP port"),
    ({"transactional.zookeeper.root": "tx"}, "transactional.zookeeper.root", "absolute"),
    ({"transactional.zookeeper.operation.timeout.secs": -1},
     "transactional.zookeeper.operation.timeout.secs", "positive"),
    ({"transactional.store": "memory", "transactional.zookeeper.servers": ["z"]},
     "transactional.store", "drop one"),
])
def test_transactional_settings_errors_name_the_setting(conf: dict[str, Any], setting: str,
                                                        problem: str) -> None:
    with pytest.raises(SettingError, match=problem) as err:
        transactional_settings(conf)
    assert err.value.setting == setting and str(err.value).startswith(setting)


def test_where_transactional_state_goes() -> None:
    assert transactional_settings({}).store is None  # the topology's backend
    assert transactional_settings({"transactional.zookeeper.servers": "zk"}).store == "zookeeper"
    assert transactional_settings({"transactional.zookeeper.root": "/tx/"}).root == "/tx"
    backend = MemoryBackend()
    context: Any = type("Ctx", (), {"state_backend": backend})()
    default = open_store({}, context, "my-tx")
    assert default.location == "memory:transactional/tx:my-tx"
    memory = open_store({"transactional.store": "memory"}, context, "my-tx")
    assert memory.location == default.location  # a memory backend is its own memory


def test_a_bad_transactional_setting_fails_the_coordinator_naming_it() -> None:
    with LocalCluster() as cluster:
        cluster.submit_topology("bad", {"transactional.store": "rediss"},
                                global_count.build(10, ":memory:", 5).create_topology())
        with pytest.raises(Exception, match="SettingError: transactional.store: must be one of"):
            cluster.wait_for(lambda: False, 60, "the coordinator to fail")


def run_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([*STORMPY, "local", str(ROOT / "examples"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=240, env=env)


def stats_rows(stdout: str) -> dict[str, list[str]]:
    return {cells[1]: cells[1:] for line in stdout.splitlines() if line.count("│") > 5
            for cells in [[c.strip() for c in line.split("│")]]}


def test_stormpy_local_runs_the_transactional_example_with_nothing_started(
        tmp_path: Path) -> None:
    res = run_cli(tmp_path, "transactional_global_count:topology", "--idle-stop", "2")
    assert res.returncode == 0, res.stderr
    assert "spout-coordinator" in stats_rows(res.stdout)
    assert stored_count(tmp_path / "global-count.sqlite") == 1000  # the example's word count


def test_stormpy_local_runs_the_stateful_example_with_nothing_started(tmp_path: Path) -> None:
    # --idle-stop ends it: a --ttl far beyond run_cli's subprocess timeout would fail the test
    res = run_cli(tmp_path, "stateful_wordcount:topology", "--ttl", "3600", "--idle-stop", "2")
    assert res.returncode == 0, res.stderr
    rows = stats_rows(res.stdout)
    sentences = rows["sentences"]  # component, tasks, emitted, transferred, executed, acked...
    assert sentences[2] == "2000" and sentences[5] == "2000" and sentences[6] == "0"
    assert rows["count"][2] == rows["split"][2]  # a count emitted for every word split off
    assert int(rows["$checkpointspout"][5]) > 0


def test_the_stateful_example_with_sqlite_commits_exact_counts(tmp_path: Path) -> None:
    res = run_cli(tmp_path, "stateful_wordcount:topology", "--ttl", "3600", "--idle-stop", "2",
                  "-c", "topology.state.provider=sqlite",
                  "-c", 'topology.state.provider.config={"path": "wc.sqlite"}')
    assert res.returncode == 0, res.stderr
    expected = Counter(w for i in range(2000)
                       for w in stateful_wordcount.SENTENCES[i % 5].split())
    store = SqliteStore(tmp_path / "wc.sqlite")
    counts: Counter[str] = Counter()
    try:
        for task in store.children("stateful_wordcount"):
            if task.startswith("count-"):
                counts.update(dict(KeyValueState(store.sub("stateful_wordcount", task)).items()))
    finally:
        store.close()
    assert counts == expected
