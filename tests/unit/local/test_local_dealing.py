"""LocalCluster with several in-process workers deals executors to them the way Nimbus's even
scheduler deals them to worker slots (``scheduler.even.schedule_topology``, called by both)."""

from __future__ import annotations

from stormpy.local import LocalCluster
from stormpy.scheduler.even import schedule_topology
from stormpy.testing import FeederSpout
from stormpy.topology import BasicBolt, TopologyBuilder, Tuple


class Pass(BasicBolt):
    outputs = ["v"]

    def process(self, tup: Tuple) -> None:
        self.emit(tup.values)


def test_in_process_workers_get_the_executors_the_scheduler_deals() -> None:
    b = TopologyBuilder()
    b.set_spout("feed", FeederSpout(["v"]), 2)
    b.set_bolt("pass", Pass, 5).set_num_tasks(7).shuffle_grouping("feed")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {"topology.acker.executors": 2}, b.create_topology(), workers=3)
        workers = cluster.workers_of("t")
        layout = workers[0].layout
        dealt = schedule_topology([e.key for e in layout.executors], {"n": [0, 1, 2]}, 3)
        expected = [sorted(t for e in layout.executors if dealt[e.key] == ("n", port) for t in e.tasks)
                    for port in range(3)]
        assert [sorted(w.local_tasks) for w in workers] == expected
        # every task runs in exactly one worker, and each worker got some (9 executors, 3 workers)
        homes = [t for w in workers for t in w.local_tasks]
        assert sorted(homes) == sorted(layout.task_component) and all(expected)
