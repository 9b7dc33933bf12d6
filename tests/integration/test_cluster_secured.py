"""A secured cluster end to end (docs/security.md): CURVE worker links with per-topology keys,
Nimbus RPC over CURVE with the token on top, ZooKeeper ACLs; real Nimbus (two: the standby copies
the bundle over the same secured RPC), supervisor, UI and worker processes. The word count
crosses two workers and completes; keys reach the workers only through files their user alone
may read; strangers cannot inject, call Nimbus or write the cluster's nodes, and the daemons keep
running."""

from __future__ import annotations

import os
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import msgpack
import pytest
import zmq
from cluster_kit import TOPOLOGIES, filewc, wait_for
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from stormpy.bundle import build_bundle
from stormpy.client import NimbusClient
from stormpy.cluster import ZkStorage
from stormpy.cluster.zk_acls import zk_identity
from stormpy.rpc.curve import write_secret_key_file
from stormpy.rpc.errors import AuthorizationError, NotFoundError
from stormpy.testing._cluster import FAST_TIMEOUTS, ProcessCluster

pytestmark = [pytest.mark.timeout(240), pytest.mark.zookeeper, pytest.mark.cluster]

TOKEN = "cluster-token-1b7e"
COUNT = 60


@pytest.fixture(scope="module")
def secured(zookeeper: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    base = tmp_path_factory.mktemp("secured")
    key_file = base / "nimbus.key"
    public = write_secret_key_file(key_file)
    conf = {**FAST_TIMEOUTS, "nimbus.rpc.auth.token": TOKEN,
            "nimbus.rpc.curve.secret.key.file": str(key_file),
            "nimbus.rpc.curve.public.key": public.decode(),
            "storm.messaging.curve.enabled": True,
            "storm.zookeeper.auth.payload": "stormpy:zk-daemons-secret"}
    cluster = ProcessCluster(zookeeper.connect_string, supervisors=2, slots_per_supervisor=1,
                             base_dir=base, zk_root=f"/stormpy-tests/secured-{uuid.uuid4().hex[:8]}",
                             conf=conf, ui=True, nimbuses=2)
    cluster.start(timeout_secs=90)
    try:
        yield cluster
    finally:
        cluster.stop()
        strays = cluster.worker_processes()
        with ZkStorage(zookeeper.connect_string, cluster.zk_root,
                       identity=zk_identity(conf)).start() as daemons:
            daemons.delete(cluster.zk_root)  # only the daemons' identity may
        assert strays == [], "stray worker processes"


@pytest.fixture
def anonymous(zookeeper: Any) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zookeeper.connect_string, timeout=10.0)
    client.start(timeout=30)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def _request_dump(client: NimbusClient, host: str, port: int) -> str | None:
    """A jstack request's id, or None while the worker has not opened its control channel."""
    try:
        return str(client.rpc.call("request_worker_action", name="secured-wc", host=host, port=port,
                                   action="jstack")["request"])
    except NotFoundError:
        return None


def acked(out: Path) -> int:
    return sum(len(filewc.read_ids(p)) for p in out.glob("acked-*.txt"))


def test_a_secured_cluster_runs_the_word_count_and_keeps_strangers_out(
        secured: ProcessCluster, anonymous: KazooClient, tmp_path: Path) -> None:
    c = secured
    bundle = build_bundle(TOPOLOGIES, tmp_path / "filewc.zip").path
    out = tmp_path / "out"
    out.mkdir()
    client = c.client()
    spec = filewc.build(str(out), COUNT, 100.0).to_doc()
    tid = client.submit("secured-wc", bundle, spec,
                        {"topology.workers": 2, "topology.message.timeout.secs": 6}, active=True)
    try:
        wait_for(lambda: len(c.state.assignment(tid).workers()) == 2  # type: ignore[union-attr]
                 if c.state.assignment(tid) else False, 60, "two workers assigned", c)
        wait_for(lambda: acked(out) >= COUNT, 120, f"all {COUNT} sentences acked across two CURVE "
                 "workers", c)

        # the topology's keys reached the supervisors (and Nimbus's store) in files only their
        # user may read
        files = list(c.base_dir.rglob("topology.msgpack"))
        assert len(files) == 4  # the two Nimbuses' and the two supervisors'
        for path in files:
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
            conf = msgpack.unpackb(path.read_bytes(), raw=False)["conf"]
            assert len(conf["topology.messaging.curve.secret.key"]) == 40
            assert conf["storm.zookeeper.topology.auth.payload"].startswith(f"{tid}:")

        # a process without the keys cannot inject into a worker; the worker keeps running
        node, port = next(iter(c.state.assignment(tid).workers()))  # type: ignore[union-attr]
        ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        try:
            intruder = ctx.socket(zmq.PUSH)
            intruder.linger = 0
            intruder.connect(f"tcp://{c.host}:{port}")
            try:
                intruder.send(msgpack.packb([[1, "default", 1, 1, 1, None, ["injected"]]]),
                              zmq.NOBLOCK)
            except zmq.Again:  # the worker refused the handshake first: the pipe is gone
                pass
        finally:
            ctx.destroy(linger=0)
        assert len(c.worker_processes(tid)) == 2

        # ZooKeeper: readable, but not writable, without the daemons' identity
        paths = c.state.paths
        assert anonymous.exists(paths.assignment(tid))
        with pytest.raises(NoAuthError):
            anonymous.set(paths.assignment(tid), b"forged")
        # workers' heartbeats go to the leading Nimbus over RPC (CURVE, token), not to ZooKeeper
        assert not anonymous.exists(f"{paths.workerbeats_root()}/{tid}")

        # Nimbus: a wrong token, a missing or wrong CURVE key are refused; Nimbus keeps serving
        public = str(c.extra_conf["nimbus.rpc.curve.public.key"]).encode()
        for kwargs, message in (({"auth_token": "wrong", "curve_server_key": public}, "token"),
                                ({"auth_token": TOKEN, "curve_server_key": None}, "requires CURVE"),
                                ({"auth_token": TOKEN, "curve_server_key": zmq.curve_keypair()[0]},
                                 "CURVE handshake")):
            stranger = NimbusClient(c.host, c.nimbus_port, timeout_secs=20, retries=0,
                                    leader_wait_secs=0, **kwargs)  # type: ignore[arg-type]
            try:
                with pytest.raises(AuthorizationError, match=message):
                    stranger.rpc.call("get_cluster_info")
            finally:
                stranger.close()
        assert tid in [t["id"] for t in client.rpc.call("get_cluster_info")["topologies"]]

        # a secured topology's worker answers a stack dump request written by Nimbus, and takes
        # run-time log levels; the log servers ask for the token
        host = c.state.assignment(tid).node_host[node]  # type: ignore[union-attr]
        request = wait_for(lambda: _request_dump(client, host, port), 60, "the worker's control channel", c)
        requests = paths.worker_requests(tid, node, port)
        answered = wait_for(lambda: next((n for n in anonymous.get_children(requests)
                                          if n.endswith(".answer")), None), 60, "the worker's answer node", c)
        with pytest.raises(NoAuthError):  # written by the worker under the topology's own identity
            anonymous.set(f"{requests}/{answered}", b"forged")
        answer = wait_for(lambda: (lambda a: a if a["status"] != "pending" else None)(
            client.rpc.call("worker_action_result", name="secured-wc", request=request)), 60,
            "the worker's stack dump", c)
        assert answer["status"] == "done", answer
        levels = client.rpc.call("set_log_config", name="secured-wc", settings=["filewc=DEBUG:60"])
        assert levels["namedLoggerLevels"]["filewc"]["target_level"] == "DEBUG"
        lv = c.state.supervisor(node).logviewer_port  # type: ignore[union-attr]
        dump_url = f"http://{host}:{lv}/api/v1/log?file={answer['result']['file']}"
        assert httpx.get(dump_url, timeout=30).status_code == 401
        dumped = httpx.get(dump_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        assert dumped.status_code == 200 and "stack dump of pid" in dumped.json()["content"]

        # the UI talks to Nimbus over CURVE with the token
        summary = httpx.get(f"{c.ui_url}/api/v1/topology/summary", timeout=30)
        assert summary.status_code == 200
        assert tid in [t["id"] for t in summary.json()["topologies"]]
    finally:
        client.kill("secured-wc", 0)
        wait_for(lambda: not c.worker_processes(tid), 60, "the workers to exit", c)
    # the daemons remove the workers' nodes (written under the topology's identity)
    wait_for(lambda: tid not in c.state.topologies(), 60, "the topology's ZooKeeper state removed", c)
    assert not anonymous.exists(f"{c.state.paths.workerbeats_root()}/{tid}")
