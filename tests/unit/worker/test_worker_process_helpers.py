"""Helpers of the cluster worker process: stats for heartbeats, conf layering, peers."""

from __future__ import annotations

from stormpy.cluster import Assignment
from stormpy.config import merged
from stormpy.connectors.spark._settings import SPARK_CONFIG
from stormpy.worker.heartbeats import component_stats
from stormpy.worker.peers import local_executors, peer_key, tasks_of, worker_peers
from stormpy.worker.process import parse_args, worker_conf


def task_doc(component: str, task: int, **counters: float) -> dict:
    doc = {"component": component, "task": task, "emitted": {"default": 3, "__ack_init": 3},
           "transferred": 3, "executed": 0, "acked": 0, "failed": 0, "latency_sum": 0.0,
           "latency_count": 0}
    doc.update(counters)
    return doc


def test_component_stats_sums_tasks_and_keeps_latency_parts() -> None:
    stats = component_stats([task_doc("spout", 1, acked=2, latency_sum=0.5, latency_count=2),
                             task_doc("spout", 2, acked=1, latency_sum=0.1, latency_count=1),
                             task_doc("bolt", 3, executed=6, emitted={})])
    assert stats["spout"]["tasks"] == 2
    assert stats["spout"]["emitted"] == 6  # system streams not counted
    assert stats["spout"]["acked"] == 3
    assert stats["spout"]["latency_count"] == 3
    assert stats["spout"]["complete_latency_ms"] == 200.0
    assert stats["bolt"]["executed"] == 6 and "complete_latency_ms" not in stats["bolt"]
    assert all(isinstance(v, int | float) for c in stats.values() for v in c.values())


def test_worker_conf_layers() -> None:
    daemon = {"storm.zookeeper.servers": ["zk"], "topology.message.timeout.secs": 7,
              "worker.heartbeat.frequency.secs": 2}
    topology = {"storm.zookeeper.servers": ["elsewhere"], "topology.message.timeout.secs": 9,
                "topology.workers": 3, "worker.heartbeat.frequency.secs": 60}
    conf = worker_conf(daemon, topology)
    assert conf["storm.zookeeper.servers"] == ["zk"]
    assert conf["worker.heartbeat.frequency.secs"] == 2
    assert conf["topology.message.timeout.secs"] == 9
    assert conf["topology.workers"] == 3
    assert conf["topology.transfer.batch.size"] == 500  # defaults underneath


def test_worker_conf_takes_the_topology_spark_settings_over_the_daemon_defaults() -> None:
    assert SPARK_CONFIG.prefix == "spark."  # registered by importing the connector
    daemon = merged({"spark.executor.memory": "2g"})  # defaults included, as a supervisor writes it
    topology = {"spark.master": "local[2]", "spark.app.name": "mine", "spark.driver.memory": "512m"}
    conf = worker_conf(daemon, topology)
    assert conf["spark.master"] == "local[2]" and conf["spark.app.name"] == "mine"
    assert conf["spark.driver.memory"] == "512m"
    assert conf["spark.executor.memory"] == "2g"  # the daemon's, when the topology does not set it
    assert worker_conf(daemon, {})["spark.master"] == "local[*]"


def test_worker_peers_and_local_tasks() -> None:
    a = Assignment(topology_id="t", bundle_key="t",
                   executors={(1, 2): ("n1", 1), (3, 3): ("n2", 1), (4, 5): ("n1", 2),
                              (6, 6): ("n3", 1)},
                   node_host={"n1": "h1", "n2": "h2"})
    mine = local_executors(a, "n1", 1)
    assert mine == ((1, 2),)
    assert tasks_of(mine) == [1, 2]
    peers = worker_peers(a, "n1", 1)
    assert peers.task_peers == {3: "n2:1", 4: "n1:2", 5: "n1:2"}  # n3 has no host: left out
    assert peers.addresses == {"n2:1": "h2:1", "n1:2": "h1:2"}
    assert peer_key("n", 6700) == "n:6700"


def test_parse_args() -> None:
    args = parse_args(["--topology-id", "t-1", "--supervisor-id", "s", "--port", "6700",
                       "--local-dir", "/x"])
    assert (args.topology_id, args.supervisor_id, args.port, args.local_dir, args.conf_file) == \
        ("t-1", "s", 6700, "/x", None)
