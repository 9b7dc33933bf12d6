"""KinesisSpout on a real cluster (Nimbus, supervisors and worker processes): 2 spout tasks over
4 shards on moto, a spout worker killed with SIGKILL twice while records keep arriving and some
records fail once (acks out of order, replays). Every record is processed at least once, and no
checkpoint stored in ZooKeeper ever passes a record that was not processed yet."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import kinesis_recorder
import pytest
from cluster_kit import (  # noqa: F401 - fixtures
    attach_cluster_logs,
    cluster_fixture,
    kill_and_check_gone,
    run_cli,
    wait_for,
)
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, SessionExpiredError
from kazoo.handlers.threading import KazooTimeoutError
from kinesis_kit import KinesisEndpoint, aws_env_fixture, moto_fixture  # noqa: F401 - fixtures

from stormpy.bundle import build_bundle
from stormpy.cluster import paths
from stormpy.connectors.kinesis import KinesisSpoutConfig
from stormpy.testing._cluster import ProcessCluster
from stormpy.topology._layout import compute_layout
from stormpy.topology._state import decode_state

TOPOLOGIES = Path(__file__).resolve().parent / "kinesis_topologies"


pytestmark = [pytest.mark.timeout(300), pytest.mark.zookeeper, pytest.mark.cluster]


def port_of(argv: list[str]) -> int:
    return int(argv[argv.index("--port") + 1])


class CheckpointAuditor(threading.Thread):
    """Polls the stored checkpoints, then the processed records: every put record of a shard at or
    before its checkpoint must already be processed (the bolt writes before it acks), and no
    checkpoint moves backwards. A ZooKeeper hiccup (the machine is busy) skips one audit; anything
    else ends the thread with ``error`` set, which :meth:`audited` reports."""

    def __init__(self, zk_connect: str, config: KinesisSpoutConfig, puts: list[tuple[str, str, str]],
                 out_dir: Path) -> None:
        super().__init__(daemon=True)
        self.zk = KazooClient(hosts=zk_connect)
        self.base = paths.ZkPaths(
            config.zookeeper_prefix or paths.DEFAULT_ROOT).connector_checkpoints(
            "kinesis", config.name, config.stream)
        self.puts, self.out_dir = puts, out_dir
        self.stop_event = threading.Event()
        self.violations: list[str] = []
        self.audits = 0  # audits that found stored checkpoints to check
        self.highest: dict[str, int] = {}
        self.error: BaseException | None = None

    def checkpoints(self) -> dict[str, int]:
        out = {}
        if self.zk.exists(self.base) is not None:
            for child in self.zk.get_children(self.base):
                data = self.zk.get(f"{self.base}/{child}")[0]
                seq = decode_state(f"{self.base}/{child}", data)["sequence_number"]
                if seq is not None:
                    out[paths.decode_segment(child)] = int(seq)
        return out

    def audited(self, audits: int) -> bool:
        """True once ``audits`` audits found stored checkpoints (for ``wait_for``); raises when
        the auditor failed, so a wait on it never outlives it."""
        if self.error is not None:
            raise AssertionError(f"the checkpoint auditor failed: {self.error!r}") from self.error
        return self.audits >= audits

    def audit(self) -> None:
        checkpoints = self.checkpoints()
        done = kinesis_recorder.processed(self.out_dir)
        for shard, cp in checkpoints.items():
            if cp < self.highest.get(shard, -1):
                self.violations.append(f"{shard}: checkpoint moved back to {cp}")
            self.highest[shard] = max(cp, self.highest.get(shard, -1))
            for s, seq, pk in list(self.puts):
                if s == shard and int(seq) <= cp and (pk, seq) not in done:
                    self.violations.append(f"{shard}: checkpoint {cp} passes unprocessed {seq}")
        self.audits += bool(checkpoints)

    def run(self) -> None:
        try:
            self.zk.start(timeout=30)
            while not self.stop_event.is_set():
                try:
                    self.audit()
                except (ConnectionLoss, SessionExpiredError, KazooTimeoutError):
                    pass  # kazoo reconnects; the next audit reads again
                self.stop_event.wait(0.1)
        except BaseException as exc:  # noqa: BLE001 - reported by audited() and the test
            self.error = exc
        finally:
            self.zk.stop()
            self.zk.close()


def test_kill9_spout_workers_twice_loses_nothing(cluster: ProcessCluster, moto_kinesis: KinesisEndpoint,
                                                 zookeeper: Any, zk_root: str, tmp_path: Path) -> None:
    stream = moto_kinesis.create_stream(4)
    puts: list[tuple[str, str, str]] = []  # (shard, sequence number, partition key)

    def put(n: int, offset: int) -> None:
        items = [(f"user-{i % 41}", b"click-%d" % i) for i in range(offset, offset + n)]
        for (shard, seq), (pk, _) in zip(moto_kinesis.put(stream, items), items):
            puts.append((shard, seq, pk))

    put(1000, 0)
    config = KinesisSpoutConfig(
        name="clicks", stream=stream, endpoint_url=moto_kinesis.url, region=moto_kinesis.region,
        zookeeper_servers=zookeeper.connect_string, zookeeper_prefix=zk_root, max_retries=1000,
        checkpoint_interval_ms=200, shard_list_refresh_ms=1000, empty_record_sleep_ms=50)
    out = tmp_path / "out"
    out.mkdir()
    bundle = build_bundle(TOPOLOGIES, tmp_path / "kinesis.zip").path
    spec = kinesis_recorder.build(config, str(out), fail_every=7)
    conf = {"topology.workers": 2, "topology.message.timeout.secs": 6,
            "topology.max.spout.pending": 200}
    spout_tasks = compute_layout(spec, conf).component_tasks["kinesis"]
    tid = cluster.client().submit("kinesis-kill9", bundle, spec.to_doc(), conf, active=True)
    auditor = CheckpointAuditor(zookeeper.connect_string, config, puts, out)
    auditor.start()
    stop = threading.Event()

    def produce() -> None:
        offset = 1000
        while not stop.is_set():
            put(25, offset)
            offset += 25
            time.sleep(0.1)

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    try:
        moved_since: dict[str, int] = {}
        for round_ in range(2):
            target = 300 * (round_ + 1)
            wait_for(lambda t=target: len(kinesis_recorder.processed(out)) >= t,  # type: ignore[misc]
                     90, f"records processed before kill {round_ + 1}", cluster)
            # each kill hits a spout whose checkpoints are stored and audited (the first ones are
            # written a checkpoint interval after the first acks, whatever the machine's speed),
            # and the second one only after a checkpoint moved past the first kill
            wait_for(lambda m=dict(moved_since), r=round_: auditor.audited(r + 1) and any(  # type: ignore[misc]
                cp > m.get(shard, -1) for shard, cp in auditor.highest.items()),
                120, f"stored checkpoints audited (and moved) before kill {round_ + 1}", cluster)
            moved_since = dict(auditor.highest)
            assignment = cluster.state.assignment(tid)
            assert assignment is not None
            spout_ports = sorted({port for (start, end), (_, port) in assignment.executors.items()
                                  if any(start <= t <= end for t in spout_tasks)})
            port = spout_ports[round_ % len(spout_ports)]
            victim = next(pid for pid, argv in cluster.worker_processes(tid) if port_of(argv) == port)
            os.kill(victim, signal.SIGKILL)
            wait_for(lambda v=victim, p=port: any(pid != v and port_of(a) == p  # type: ignore[misc]
                                                  for pid, a in cluster.worker_processes(tid)),
                     60, f"the worker on port {port} to be restarted", cluster)
    finally:
        stop.set()
        producer.join(timeout=30)
        if sys.exc_info()[0] is not None:
            auditor.stop_event.set()
    try:
        expected = {(pk, seq) for _, seq, pk in puts}
        wait_for(lambda: expected <= kinesis_recorder.processed(out), 120,
                 "every record to be processed after the kills", cluster)
        wait_for(lambda: auditor.highest and all(
            auditor.highest.get(shard, -1) >= max(int(s) for sh, s, _ in puts if sh == shard)
            for shard in {sh for sh, _, _ in puts}), 60, "the checkpoints to reach the end", cluster)
        # at least one more audit after the kills, however slow the machine (a busy one may
        # reach the end within the auditor's first few polls)
        wait_for(lambda: auditor.audited(3), 60, "three audits of stored checkpoints", cluster)
    finally:
        auditor.stop_event.set()
        auditor.join(timeout=30)
    assert auditor.error is None, repr(auditor.error)
    assert auditor.audits >= 3
    assert auditor.violations == []
    # the spout's metrics reach topology info (heartbeats) and `stormpy info`
    ends = {shard: max(int(s) for sh, s, _ in puts if sh == shard) for shard, _, _ in puts}

    def shard_metrics() -> dict[str, dict[str, Any]]:
        info = cluster.client().topology_info("kinesis-kill9")
        return {shard: m for task in info.get("metrics", {}).get("kinesis", {}).values()
                for shard, m in task.get("kinesisShards", {}).items()}

    wait_for(lambda: set(shard_metrics()) == set(ends) and all(
        m["stored"] is not None and int(m["stored"]) >= ends[shard] and m["in_flight"] == 0
        for shard, m in shard_metrics().items()), 60, "every shard's metrics in topology info",
        cluster)
    assert all(m["millis_behind_latest"] is not None for m in shard_metrics().values())
    shown = run_cli(cluster, "info", "kinesis-kill9", env={"COLUMNS": "200"})
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "metric kinesisShards" in shown.stdout and "metric kinesisSpout" in shown.stdout, \
        shown.stdout
    kill_and_check_gone(cluster, "kinesis-kill9", tid)
