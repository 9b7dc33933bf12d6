"""The off-loop seam (``context.off_loop``): results come back on the loop, pending jobs keep the
topology from counting as quiet, jobs not started can be cancelled, shutdown refuses new jobs."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import Bolt, TopologyBuilder, TopologyContext, Tuple
from stormpy.testing import FeederSpout, LocalCluster
from stormpy.topology._layout import compute_layout
from stormpy.topology._offloop import BackgroundJob

RELEASE = threading.Event()
EVENTS: list[Any] = []


class BlockingBolt(Bolt):
    """``["block", n]``: a job that waits for RELEASE; ``["cancel", n]``: a job submitted and at
    once cancelled (it never starts while a blocking job holds the only thread); ``["shut", n]``:
    shut the off-loop down, then try to submit."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.off_loop = context.off_loop
        self.loop_thread = threading.current_thread()

    def execute(self, tup: Tuple) -> None:
        action, n = tup.values

        def done(result: Any, error: BaseException | None) -> None:
            EVENTS.append(("done", n, result, error, threading.current_thread() is self.loop_thread))
            self.ack(tup)

        if action == "block":
            self.off_loop.submit(lambda: RELEASE.wait(30) and n * 10, done)
            EVENTS.append(("submitted", n))
        elif action == "cancel":
            job: BackgroundJob = self.off_loop.submit(lambda: EVENTS.append(("ran", n)), done)
            EVENTS.append(("cancelled", n, job.cancel(), job.started))
            self.ack(tup)
        elif action == "shut":
            self.off_loop.shutdown(5.0)
            try:
                self.off_loop.submit(lambda: None, done)
            except RuntimeError as exc:
                EVENTS.append(("refused", n, str(exc)))
            self.ack(tup)


def _topology(feeder: FeederSpout) -> Any:
    b = TopologyBuilder()
    b.set_spout("f", feeder)
    b.set_bolt("blocking", BlockingBolt).shuffle_grouping("f")
    return b.create_topology()


@pytest.fixture(autouse=True)
def _reset() -> Any:
    RELEASE.clear()
    EVENTS.clear()
    yield
    RELEASE.set()


def test_a_pending_job_keeps_the_topology_busy_and_its_result_comes_back_on_the_loop() -> None:
    feeder = FeederSpout(["action", "n"])
    with LocalCluster(conf={"topology.worker.background.threads": 1}) as cluster:
        worker = cluster.submit_topology("t", {}, _topology(feeder))
        feeder.feed(["block", 1], msg_id=1)
        # the job is submitted first: an idle loop alone may be the loop before the feed reached
        # the bolt (a busy machine), when nothing is pending yet
        cluster.wait_for(lambda: ("submitted", 1) in EVENTS, 10, "the blocking job submitted")
        cluster.wait_for(lambda: worker.quiet_rounds >= 10, 10, "an idle loop")
        assert not worker.is_quiet(), "a job is pending"
        feeder.feed(["cancel", 2], msg_id=2)
        cluster.wait_for(lambda: 2 in feeder.acked, 10, "the cancelled job's tuple")
        RELEASE.set()
        cluster.wait_until_quiet(timeout=10)
        assert sorted(feeder.acked) == [1, 2]
    assert ("cancelled", 2, True, False) in EVENTS
    assert ("done", 1, 10, None, True) in EVENTS  # on the loop thread
    assert not any(e[0] in ("ran", "done") and e[1] == 2 for e in EVENTS)  # never ran, no on_done


def test_after_shutdown_a_submit_is_refused_naming_the_component() -> None:
    feeder = FeederSpout(["action", "n"])
    with LocalCluster() as cluster:
        cluster.submit_topology("t", {}, _topology(feeder))
        feeder.feed(["shut", 1], msg_id=1)
        cluster.wait_for(lambda: feeder.acked == [1], 10, "the ack")
    (refused,) = [e for e in EVENTS if e[0] == "refused"]
    assert "'blocking'" in refused[2] and "shut down" in refused[2]


def test_a_context_outside_a_running_task_has_no_off_loop() -> None:
    spec = _topology(FeederSpout(["action", "n"]))
    layout = compute_layout(spec, {})
    task = layout.component_tasks["blocking"][0]
    context = TopologyContext("t-1", spec, layout, task, [task], {})
    with pytest.raises(RuntimeError, match="no off_loop"):
        _ = context.off_loop
