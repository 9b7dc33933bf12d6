"""A committer whose commit breaks: the error is reported naming the component, the step, the
transaction and the attempt; the transaction is replayed and then committed once, in order."""

from __future__ import annotations

import pytest

from stormpy.testing import LocalCluster
from stormpy.transactional import TransactionalTopologyBuilder
from transactional_kit import SizedSpout, Splitter, SumCommitter, events, new_log

pytestmark = pytest.mark.timeout(60)


def test_a_commit_that_raises_is_reported_by_step_and_attempt_then_replayed() -> None:
    log = new_log()
    b = TransactionalTopologyBuilder("tx-broken-commit", "spout", SizedSpout, 1,
                                     kwargs={"sizes": [2, 3, 4]})
    b.set_bolt("split", Splitter).shuffle_grouping("spout")
    b.set_bolt("sum", SumCommitter, kwargs={"log": log, "fail_txids": [2]}) \
        .global_grouping("split")
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("tx-broken-commit", {"transactional.store": "memory"},
                                         b.create_topology())
        cluster.wait_for(lambda: len(events(log, "commit")) >= 3, 30, "three commits")
        cluster.wait_until_quiet("tx-broken-commit")
        reported = [e["error"] for e in worker.errors.get("sum", [])]
    (broken,) = [e for e in events(log, "commit-error")]
    attempt = broken[2]
    assert len(reported) == 1
    assert (f"component 'sum' finish_batch failed for transaction 2 attempt {attempt}: "
            "RuntimeError: commit of 2 broke on purpose") in reported[0]
    assert [txid for _k, txid, _a, _s in events(log, "commit")] == [1, 2, 3]
