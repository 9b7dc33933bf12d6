"""Trident state in a real ZooKeeper: the word count with opaque and transactional state, a batch
failed after its state update in the commit, counts exact in ZooKeeper."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from trident_kit import FAILS, FailOnWord

from stormpy.cluster.zkserver import ZooKeeperServer
from stormpy.state import open_zk_store
from stormpy.testing import LocalCluster
from stormpy.trident import (
    OPAQUE,
    TRANSACTIONAL,
    Count,
    FixedBatchSpout,
    MapState,
    StateFactory,
    TridentTopology,
)

UNIT = Path(__file__).resolve().parents[1] / "unit"


pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(120)]
WORDS = [[w] for w in ["a", "b", "a", "c", "boom", "b", "a", "c", "d", "a", "b", "c"]]


def zk_counts(zookeeper: ZooKeeperServer, root: str, name: str, kind: str) -> dict[str, int]:
    state = MapState(open_zk_store(zookeeper.connect_string, root, f"{root}/{name}"), kind)
    try:
        return {key[0]: value for key, value in state.items()}
    finally:
        state.close()


@pytest.mark.parametrize("kind", [TRANSACTIONAL, OPAQUE])
def test_word_count_in_zookeeper_is_exact_after_a_failed_commit(
        zookeeper: ZooKeeperServer, zk_root: str, kind: str) -> None:
    factory = StateFactory.zookeeper("counts", kind, servers=zookeeper.connect_string,
                                     root=zk_root)
    t = TridentTopology()
    t.new_stream("zk-words", FixedBatchSpout(["word"], 4, WORDS)).group_by(["word"]) \
        .persistent_aggregate(factory, Count(), ["count"]).parallelism_hint(2) \
        .new_values_stream().filter(FailOnWord(f"zk-{kind}", "boom"))
    conf = {"topology.max.spout.pending": 1}
    expected = dict(Counter(w for (w,) in WORDS))
    with LocalCluster() as cluster:
        cluster.submit_topology("zk-wc", conf, t.build())
        cluster.wait_for(lambda: zk_counts(zookeeper, zk_root, "counts", kind) == expected, 60,
                         "the exact counts in ZooKeeper")
        cluster.wait_until_quiet("zk-wc")
    assert FAILS[f"zk-{kind}"] == 1
    assert zk_counts(zookeeper, zk_root, "counts", kind) == expected
