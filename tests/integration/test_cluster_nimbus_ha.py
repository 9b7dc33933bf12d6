"""Nimbus HA on real processes: two Nimbus hosts, the leader killed with SIGKILL while a topology
runs and the CLI submits another. The standby takes over, the running topology keeps running and
can be killed, the CLI's submit goes to the new leader, supervisors download the new code from it,
and nothing is lost or half-written. One cluster for the module."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_kit import (  # noqa: F401 - fixtures
    attach_cluster_logs,
    bundle_path_fixture,
    filewc,
    record_timing,
    running_cluster,
    submit,
    wait_for,
)

from stormpy.testing._cluster import ProcessCluster

pytestmark = [pytest.mark.timeout(240), pytest.mark.zookeeper, pytest.mark.cluster]


@pytest.fixture(scope="module")
def cluster(zookeeper: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    with running_cluster(zookeeper, tmp_path_factory.mktemp("ha-cluster"), "ha",
                         nimbuses=2) as c:
        yield c


def test_kill9_leader_while_running_and_submitting(cluster: ProcessCluster, tmp_path: Path,
                                                   bundle_path: Path) -> None:
    out1, out2 = tmp_path / "running", tmp_path / "submitted"
    out2.mkdir()
    tid1 = submit(cluster, bundle_path, "running", out1, count=0, rate=15, workers=2)
    wait_for(lambda: len(filewc.acked_ids(out1)) >= 10, 60, "the first acks", cluster)
    old = cluster.leader_index()
    assert old is not None
    new = 1 - old

    # The CLI (seeds from a supervisor's config: both Nimbus hosts) submits while the leader dies.
    env = {**os.environ, "FILEWC_OUT": str(out2), "FILEWC_COUNT": "50", "FILEWC_RATE": "100",
           "FILEWC_WORKERS": "1"}
    argv = [sys.executable, "-m", "stormpy.cli", "jar", str(Path(filewc.__file__).parent), "filewc:topology",
            "--name", "submitted", "--config", str(cluster.supervisors[0].conf_path), "--timeout", "5"]
    cli = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                           stdin=subprocess.DEVNULL)
    try:
        cluster.nimbuses[old].proc.send_signal(signal.SIGKILL)  # type: ignore[union-attr]
        killed_at = time.monotonic()
        acked = len(filewc.acked_ids(out1))
        wait_for(lambda: cluster.leader_index() == new, 60, "the standby to take over", cluster)
        record_timing("Nimbus leader kill -9 -> standby leads", time.monotonic() - killed_at)
        stdout, stderr = cli.communicate(timeout=90)
        record_timing("Nimbus leader kill -9 -> CLI submit answered", time.monotonic() - killed_at)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.communicate()
    assert cli.returncode == 0, stderr + stdout
    tid2 = stdout.split(" as ")[1].split()[0]

    wait_for(lambda: len(filewc.acked_ids(out1)) >= acked + 20, 60, "the running topology to keep going",
             cluster)
    wait_for(lambda: filewc.acked_ids(out2) == set(range(50)), 90,
             "the topology submitted during the failover to run (code downloaded from the new leader)",
             cluster)
    assert cluster.state.submitting() == []
    assert sorted(cluster.state.storm_bases()) == sorted([tid1, tid2])
    for tid in (tid1, tid2):
        assert cluster.state.assignment(tid) is not None  # nothing half-written

    client = cluster.client()  # starts at Nimbus 0 (maybe the dead one) and follows the leader
    for name, tid in (("running", tid1), ("submitted", tid2)):
        client.kill(name, 0)
        wait_for(lambda t=tid: not cluster.worker_processes(t), 40, f"the workers of {tid} to exit", cluster)
        wait_for(lambda t=tid: t not in cluster.state.topologies(), 40, f"the state of {tid} to go", cluster)
    assert client.address == f"{cluster.host}:{cluster.nimbus_ports[new]}"
