"""KafkaSpout on a real cluster (Nimbus, supervisors, worker processes) under faults.

A 4-partition topic is written while the topology runs. The spout's worker is killed with SIGKILL
twice mid-stream; in a second topology the spout is rebalanced from 2 to 3 executors mid-stream
(declared with 3 tasks: as in Storm, a rebalance changes executors, never the task count, so the
tasks move between workers, committing on close and resuming from their commits). In both: every
record is counted at least once, and no committed offset sampled during the run or at its end
ever passes a record that was not counted (the bolt writes a record before acking it, so "not
counted" covers "not acked"). Figures (sent, counted, duplicates, restarts) are printed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kafka_fault
import pytest
from cluster_kit import running_cluster
from test_kafka_spout_local import committed as committed_offsets

from stormpy.bundle import build_bundle
from stormpy.cluster.zkserver import ZooKeeperServer
from stormpy.testing._cluster import ProcessCluster
from stormpy.testing._kafka import KafkaBroker

HERE = Path(__file__).resolve().parent
TOPOLOGIES = HERE / "cluster_topologies"


pytestmark = [pytest.mark.timeout(300), pytest.mark.zookeeper, pytest.mark.cluster, pytest.mark.kafka]

PARTITIONS = 4
RECORDS = 3000


@pytest.fixture(scope="module")
def cluster(zookeeper: ZooKeeperServer, kafka_broker: KafkaBroker,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    with running_cluster(zookeeper, tmp_path_factory.mktemp("kafka-cluster"), "kafka") as c:
        yield c


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_bundle(TOPOLOGIES, tmp_path_factory.mktemp("bundle") / "kafka_fault.zip").path


def committed(broker: KafkaBroker, group: str, topic: str) -> list[int]:
    return committed_offsets(broker, group, topic, PARTITIONS)


class Run:
    """One topology's run: a writer thread producing RECORDS records (r0, r1, ... round robin over
    the partitions) at a steady pace, and the invariant checks."""

    def __init__(self, broker: KafkaBroker, cluster: ProcessCluster, topic: str, out: Path) -> None:
        self.broker, self.cluster, self.topic, self.out = broker, cluster, topic, out
        self.group = f"g-{uuid.uuid4().hex[:8]}"
        self.sent = 0
        self.violations: list[str] = []
        self.samples = 0
        self.events: list[str] = []
        self._stop = threading.Event()
        self.writer = threading.Thread(target=self._write, daemon=True)

    def _write(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.broker.bootstrap_servers, "linger.ms": 5})
        for i in range(RECORDS):
            if self._stop.is_set():
                break
            producer.produce(self.topic, value=b"r%d" % i, partition=i % PARTITIONS)
            producer.poll(0)
            self.sent = i + 1
            if i % 20 == 19:
                time.sleep(0.05)  # pacing: about 400 records/s, so the faults land mid-stream
        assert producer.flush(30) == 0

    def check_commits(self) -> None:
        """Every offset below each committed offset was counted (sampled: commits first)."""
        offsets = committed(self.broker, self.group, self.topic)
        seen: dict[int, set[int]] = {}
        for p, off, _ in kafka_fault.counted(self.out):
            seen.setdefault(p, set()).add(off)
        self.samples += 1
        for p, c in enumerate(offsets):
            missing = [o for o in range(max(c, 0)) if o not in seen.get(p, set())]
            if missing:
                self.violations.append(f"partition {p} committed {c} but {missing[:5]} not counted")

    def values(self) -> list[str]:
        return [v for _, _, v in kafka_fault.counted(self.out)]

    def wait(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        def checked() -> bool:
            self.check_commits()
            return condition()
        self.cluster.wait_for(checked, timeout, what, interval=0.3)

    def finish(self, name: str) -> dict[str, Any]:
        self.writer.join(60)
        every = {f"r{i}" for i in range(RECORDS)}
        self.wait(lambda: every <= set(self.values()), 120, "every record counted")
        ends = [RECORDS // PARTITIONS] * PARTITIONS
        self.wait(lambda: committed(self.broker, self.group, self.topic) == ends, 60, "everything committed")
        info = self.cluster.client().topology_info(name)
        values = self.values()
        return {"sent": self.sent, "counted": len(values), "distinct": len(set(values)),
                "lost": len(every - set(values)), "duplicates": len(values) - len(set(values)),
                "commit samples": self.samples, "violations": self.violations,
                "spout opens": len(kafka_fault.opens(self.out)), "events": self.events,
                "metrics": info.get("metrics", {})}


def spout_pids(out: Path, cluster: ProcessCluster, tid: str) -> set[int]:
    live = {pid for pid, _ in cluster.worker_processes(tid)}
    return {pid for _, pid in kafka_fault.opens(out) if pid in live}


def start(broker: KafkaBroker, cluster: ProcessCluster, bundle: Path, tmp_path: Path, name: str,
          spout_executors: int, spout_tasks: int) -> tuple[Run, str]:
    topic = broker.create_topic(f"{name}-{uuid.uuid4().hex[:6]}", PARTITIONS)
    out = tmp_path / name
    out.mkdir()
    run = Run(broker, cluster, topic, out)
    spec = kafka_fault.build(broker.bootstrap_servers, topic, run.group, spout_executors, spout_tasks)
    conf = {"topology.workers": 2, "topology.message.timeout.secs": 5, kafka_fault.OUT_KEY: str(out),
            "topology.max.spout.pending": 500}
    tid = cluster.client().submit(name, bundle, spec.to_doc(), conf)
    run.writer.start()
    return run, tid


def test_kill9_of_the_spout_worker_twice_loses_nothing_and_commits_only_counted_records(
        kafka_broker: KafkaBroker, cluster: ProcessCluster, bundle: Path, tmp_path: Path) -> None:
    run, tid = start(kafka_broker, cluster, bundle, tmp_path, "kafka-kill", 2, 2)
    try:
        for round_, at_least in enumerate((RECORDS // 5, RECORDS // 2)):
            run.wait(lambda n=at_least: len(run.values()) >= n, 90, f"{at_least} records counted")
            victims = spout_pids(run.out, cluster, tid)
            assert victims, "no live worker hosts a spout task"
            victim = min(victims)
            os.kill(victim, signal.SIGKILL)
            run.events.append(f"kill {round_ + 1} at {run.sent} sent")
            opened = len(kafka_fault.opens(run.out))
            run.wait(lambda o=opened: len(kafka_fault.opens(run.out)) > o, 90,
                     f"the spout task reopened after kill {round_ + 1}")
        result = run.finish("kafka-kill")
        shown = subprocess.run([sys.executable, "-m", "stormpy.cli", "info", "kafka-kill", "--nimbus",
                                cluster.nimbus_address], capture_output=True, text=True, timeout=60,
                               env={**os.environ, "COLUMNS": "200"}, stdin=subprocess.DEVNULL)
        assert shown.returncode == 0 and "metric kafkaOffset" in shown.stdout, shown.stdout + shown.stderr
    finally:
        run._stop.set()
        cluster.client().kill("kafka-kill", 0)
        cluster.wait_for(lambda: not cluster.worker_processes(tid), 60, "the workers to exit")
    print(f"\nkill -9 x2: { {k: v for k, v in result.items() if k != 'metrics'} }")
    assert result["lost"] == 0 and not result["violations"]
    assert result["spout opens"] >= 4  # two tasks, each killed one reopened
    lags = [p["lag"] for m in result["metrics"].get("kafka", {}).values()
            for p in m["kafkaOffset"]["partitions"].values()]
    assert lags, f"no spout metrics in topology info: {result['metrics']}"


def test_rebalancing_the_spout_from_2_to_3_executors_mid_stream_loses_nothing(
        kafka_broker: KafkaBroker, cluster: ProcessCluster, bundle: Path, tmp_path: Path) -> None:
    run, tid = start(kafka_broker, cluster, bundle, tmp_path, "kafka-rebalance", 2, 3)
    try:
        run.wait(lambda: len(run.values()) >= RECORDS // 4, 90, "the first records counted")
        opened = len(kafka_fault.opens(run.out))
        cluster.client().rebalance("kafka-rebalance", 0, None, {"kafka": 3})
        run.events.append(f"rebalance at {run.sent} sent")
        run.wait(lambda: len(kafka_fault.opens(run.out)) >= opened + 3, 90,
                 "the spout's three tasks reopened in three executors")
        result = run.finish("kafka-rebalance")
        info = cluster.client().topology_info("kafka-rebalance")
        assert info["components"]["kafka"]["executors"] == 3
    finally:
        run._stop.set()
        cluster.client().kill("kafka-rebalance", 0)
        cluster.wait_for(lambda: not cluster.worker_processes(tid), 60, "the workers to exit")
    print(f"\nrebalance 2 -> 3: { {k: v for k, v in result.items() if k != 'metrics'} }")
    assert result["lost"] == 0 and not result["violations"]
