"""A worker whose bolt task's latency sampling is set by hand, for the sampling tests: the
gap table and the countdown decide which tuples are timed, ``clock`` is what the timed path
reads."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from stormpy import Bolt, TopologyBuilder
from stormpy.testing import FeederSpout
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig
from stormpy.worker.stats import GAP_TABLE
from stormpy.worker.tasks import TaskRunner


def sampled_runner(bolt: type[Bolt], conf: Mapping[str, Any], gaps: list[int], countdown: int,
                   clock: Callable[[], float]) -> tuple[Worker, TaskRunner]:
    """An opened worker with ``bolt`` (component "bolt") behind a feeder of ``["n"]``, sample
    rate 0.5 and ``conf``; the bolt task's gaps are ``gaps`` (taken in turn from the first, then
    1s) and its countdown ``countdown``; its sample clock is ``clock``."""
    b = TopologyBuilder()
    b.set_spout("feeder", FeederSpout(["n"]))
    b.set_bolt("bolt", bolt).shuffle_grouping("feeder")
    worker = Worker(WorkerConfig("t", b.create_topology(),
                                 {"topology.acker.executors": 1, "topology.stats.sample.rate": 0.5,
                                  **conf}), clock=SimulatedClock())
    worker.open()
    runner = next(r for r in worker.tasks.values() if r.component_id == "bolt")
    runner.sampler.clock = clock
    stats = runner.stats
    stats.gaps = gaps + [1] * (GAP_TABLE - len(gaps))
    stats.gap_index = 0
    stats.sample_countdown = countdown
    return worker, runner
