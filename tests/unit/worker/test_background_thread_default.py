"""A worker whose ``topology.worker.background.threads`` is unset (None) runs its components'
background jobs on 4 threads, the key table's default; 0 is refused at submit."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import Bolt, TopologyBuilder, Tuple
from stormpy.testing import FeederSpout
from stormpy.worker import Worker, WorkerConfig

#: the running test's: released by each job as it starts, set once all six are submitted, and
#: set to let the jobs end
STARTED = [threading.Semaphore(0)]
SUBMITTED = [threading.Event()]
RELEASE = [threading.Event()]


def job() -> None:
    started, release = STARTED[0], RELEASE[0]
    started.release()
    release.wait(30)


class SixJobs(Bolt):
    """Submits six jobs that wait for the test at prepare."""

    def prepare(self, conf: Mapping[str, Any], context: Any) -> None:
        self.done: list[Any] = []
        for _ in range(6):
            self.run_in_background(job, lambda result, error: self.done.append(error))
        SUBMITTED[0].set()

    def execute(self, tup: Tuple) -> None:
        pass


def background_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("stormpy-bg")}


@pytest.mark.parametrize("threads", [None])
def test_unset_background_threads_default_to_four(threads: Any) -> None:
    STARTED[0], SUBMITTED[0], RELEASE[0] = threading.Semaphore(0), threading.Event(), \
        threading.Event()
    before = background_threads()
    b = TopologyBuilder()
    b.set_spout("feeder", FeederSpout(["n"]))
    b.set_bolt("jobs", SixJobs).shuffle_grouping("feeder")
    worker = Worker(WorkerConfig("t", b.create_topology(),
                                 {"topology.worker.background.threads": threads,
                                  "topology.worker.gc.threshold": 0}))
    worker.start()
    bolt = next(r for r in worker.tasks.values() if r.component_id == "jobs").instance
    try:
        assert SUBMITTED[0].wait(30), "the jobs were not submitted"
        for _ in range(4):  # four jobs run at once; the other two wait for a thread
            assert STARTED[0].acquire(timeout=30), "a background job did not start"
        assert len(background_threads() - before) == 4
    finally:
        RELEASE[0].set()
        deadline = time.monotonic() + 30
        while len(bolt.done) < 6 and time.monotonic() < deadline:  # finishers run on the loop
            threading.Event().wait(0.01)
        worker.stop(30)
    assert not worker.running
    assert bolt.done == 6 * [None]  # all six ran, none failed


def test_zero_background_threads_are_refused_at_submit() -> None:
    from stormpy.config import SettingError
    from stormpy.testing import LocalCluster

    b = TopologyBuilder()
    b.set_spout("feed", FeederSpout(["x"]))
    with LocalCluster() as cluster, pytest.raises(
            SettingError, match=r"^topology.worker.background.threads: must be an integer >= 1, got 0"):
        cluster.submit_topology("t", {"topology.worker.background.threads": 0}, b.create_topology())
