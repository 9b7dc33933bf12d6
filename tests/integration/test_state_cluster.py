"""Checkpointed state on real processes: a stateful word count on a Nimbus + supervisors cluster,
its state in SQLite or in Redis (the provider for a cluster), the worker of a counting task
killed with SIGKILL mid-stream; after the rollback and the replay
the committed state has lost no input, and counts an input twice only where the guarantee
allows it (docs/windowing-state.md: an input whose effect was committed but whose ack did not
reach the spout before the kill is replayed)."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pytest
import statecount
from cluster_kit import attach_cluster_logs, cluster_fixture  # noqa: F401 - fixtures
from killed_worker_kit import TOPOLOGIES, failed_ids, kill_a_worker_mid_stream

from stormpy.bundle import build_bundle
from stormpy.local.redis_server import RedisServer
from stormpy.state import KeyValueState, SqliteDocStore
from stormpy.state.redis_store import open_redis_store, redis_config
from stormpy.testing.cluster import ProcessCluster
from stormpy.topology.layout import compute_layout

pytestmark = [pytest.mark.timeout(300), pytest.mark.zookeeper, pytest.mark.cluster]

PENDING = 40  # topology.max.spout.pending


def committed_counts(db: Path, tasks: list[int], redis: RedisServer | None = None
                     ) -> Counter[str]:
    total: Counter[str] = Counter()
    for task in tasks:
        store = (SqliteDocStore(db, prefix=f"statecount/count-{task}/") if redis is None else
                 open_redis_store(redis_config(redis.provider_config("cluster")), "statecount",
                                  f"count-{task}"))
        try:
            total.update(dict(KeyValueState(store).items()))
        finally:
            store.close()
    return total


@pytest.mark.parametrize("provider", ["sqlite", "redis"])
def test_kill9_stateful_worker_counts_stay_exact(cluster: ProcessCluster, tmp_path: Path,
                                                 provider: str,
                                                 request: pytest.FixtureRequest) -> None:
    n = 3000
    db = tmp_path / "state.sqlite"
    spec = statecount.build(str(db), n)
    bundle = build_bundle(TOPOLOGIES, tmp_path / "statecount.zip").path
    redis: RedisServer | None = None
    provider_config: dict[str, object] = {"path": str(db)}
    if provider == "redis":
        redis = request.getfixturevalue("redis_server")
        provider_config = redis.provider_config("cluster")
        # the spout's ack log alone in the file: WAL (as a SqliteStore would set), so that the
        # test's reads never hold the spout's writes (and its executor loop) back
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.close()
    conf = {"topology.workers": 2, "topology.message.timeout.secs": 6,
            "topology.max.spout.pending": PENDING, "topology.state.checkpoint.interval.ms": 200,
            "topology.state.provider": provider,
            "topology.state.provider.config": provider_config}
    tid = cluster.client().submit("statecount", bundle, spec.to_doc(), conf)
    layout = compute_layout(spec, conf)
    count_tasks = layout.component_tasks["count"]
    kill_a_worker_mid_stream(cluster, "statecount", tid, tasks=count_tasks,
                             spout_task=layout.component_tasks["words"][0], db=db, n=n, first=200,
                             what="words")
    expected = Counter(statecount.word(i).lower() for i in range(n))
    counted = committed_counts(db, count_tasks, redis)
    lost = expected - counted
    assert not lost, f"inputs lost from the committed state: {dict(lost)}"
    # a duplicate needs a replay of an input of that word (each replay follows one fail)
    replays: Counter[str] = Counter()
    for msg_id, fails in failed_ids(db).items():
        replays[statecount.word(msg_id).lower()] += fails
    twice = counted - expected
    assert not twice - replays, (f"counted twice beyond the replays: {dict(twice)} "
                                 f"with replays {dict(replays)}")
    # one commit's inputs are at most the spout's pending tuples
    assert sum(twice.values()) <= PENDING, dict(twice)
    print(f"stateful kill -9 ({provider}): {n} inputs, {sum(replays.values())} replayed, "
          f"{sum(twice.values())} counted twice")
