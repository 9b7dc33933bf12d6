"""ZooKeeper going away must never wedge a daemon: ZkStorage operations are bounded, and the
supervisor, its worker processes and Nimbus exit 0 promptly on SIGTERM while ZooKeeper is down,
leaving no process behind.

Each test runs its own ZooKeeper (so it can stop it) and sets the session (= operation) timeout
far above the wait it allows for the exit, so a pass shows the stop path does not sit out
ZooKeeper timeouts.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
import yaml
from supervisor_kit import PACED_FILES, SupervisorEnv, paced_spec, processes_under, wait_for

from parts_kit import running_zookeeper
from stormpy.client import NimbusClient
from stormpy.cluster import ZkConnectionError, ZkStorage
from stormpy.cluster.zkserver import ZooKeeperServer
from stormpy.nimbus.leadership import Leadership
from stormpy.testing import free_ports, stays_unchanged
from stormpy.testing._cluster import FAST_TIMEOUTS

pytestmark = [pytest.mark.zookeeper, pytest.mark.cluster, pytest.mark.timeout(90)]

#: ZooKeeper session timeout of the daemons under test (ms); operations may wait this long.
SESSION_TIMEOUT_MS = 40000
#: How long a daemon may take to exit after SIGTERM with ZooKeeper down (well below the above).
EXIT_WAIT_SECS = 15.0
#: ``supervisor.worker.shutdown.sleep.secs`` here: a worker must exit within it after SIGTERM,
#: or its supervisor SIGKILLs it.
WORKER_GRACE_SECS = 4
ZK_ROOT = "/stormpy-outage"


@pytest.fixture
def private_zookeeper() -> Iterator[ZooKeeperServer]:
    """A ZooKeeper of this test alone (the test stops it); skipped like the shared one."""
    with running_zookeeper(heap_mb=128) as server:
        yield server


@pytest.fixture
def outage_env(private_zookeeper: ZooKeeperServer,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[SupervisorEnv]:
    """A SupervisorEnv (fake Nimbus, cluster state, process cleanup) on the private ZooKeeper."""
    base = tmp_path_factory.mktemp("zk-outage")
    env = SupervisorEnv(private_zookeeper.connect_string, ZK_ROOT, base)
    try:
        yield env
    finally:
        env.close()
        shutil.rmtree(base, ignore_errors=True)


def daemon_conf(env: SupervisorEnv, name: str, ports: list[int], **extra: Any) -> dict[str, Any]:
    return env.conf(name, ports, **{"storm.zookeeper.session.timeout": SESSION_TIMEOUT_MS,
                                    "supervisor.worker.shutdown.sleep.secs": WORKER_GRACE_SECS,
                                    **extra})


def run_stormpy(env: SupervisorEnv, command: str, conf: dict[str, Any]) -> subprocess.Popen[bytes]:
    """``python -m stormpy.cli <command> --config <file>`` in its own session, output to a file."""
    conf_path = env.base / f"{command}.yaml"
    conf_path.write_text(yaml.safe_dump(conf))
    out_path = env.log_dir / f"{command}.out"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with open(out_path, "wb") as out:
        # PYTHONFAULTHANDLER: a SIGABRT prints every thread's stack (see sigterm_and_wait)
        return subprocess.Popen([sys.executable, "-m", "stormpy.cli", command, "--config", str(conf_path)],
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=dict(os.environ, PYTHONFAULTHANDLER="1"))


def sigterm_and_wait(proc: subprocess.Popen[bytes], what: str, env: SupervisorEnv, command: str) -> int:
    """SIGTERM ``proc`` and return its exit code; fail naming ``what`` if it outlives the wait,
    with the stacks of its threads (SIGABRT, faulthandler) and the end of its output."""
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(EXIT_WAIT_SECS)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
        out = (env.log_dir / f"{command}.out").read_text(errors="replace")[-6000:]
        pytest.fail(f"{what} still runs {EXIT_WAIT_SECS:g} s after SIGTERM with ZooKeeper down; "
                    f"its stacks and output:\n{out}")


def kill_quietly(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def start_one_worker(env: SupervisorEnv, sid: str, port: int, topology_id: str) -> None:
    """Assign a paced topology to ``(sid, port)`` and wait until its worker heartbeats."""
    env.publish(topology_id, paced_spec(rate=20), {}, [(sid, port)], files=PACED_FILES)
    wait_for(lambda: len(env.worker_pids()) == 1 and env.total(topology_id, "sink", "acked") > 0,
             60, "the worker to run and heartbeat")


def test_storage_operations_are_bounded_while_zookeeper_is_down(
        private_zookeeper: ZooKeeperServer) -> None:
    hosts = private_zookeeper.connect_string
    quick = ZkStorage(hosts, ZK_ROOT, operation_timeout_secs=1).start()
    patient = ZkStorage(hosts, ZK_ROOT, session_timeout_secs=SESSION_TIMEOUT_MS / 1000).start()
    try:
        quick.set(f"{ZK_ROOT}/node", b"x")
        private_zookeeper.stop()

        with pytest.raises(ZkConnectionError, match=rf"ZooKeeper get {ZK_ROOT}/node failed: .* within 1 s"):
            quick.get(f"{ZK_ROOT}/node")

        # An operation waiting for the connection is woken by begin_shutdown, long before its timeout.
        outcome: list[BaseException | bytes | None] = []
        caller = threading.Thread(target=lambda: outcome.append(_call(patient.get, f"{ZK_ROOT}/node")))
        caller.start()
        caller.join(0.5)
        assert caller.is_alive(), f"get returned while ZooKeeper was down: {outcome}"
        patient.begin_shutdown()
        caller.join(EXIT_WAIT_SECS)
        assert not caller.is_alive(), "a get kept waiting for ZooKeeper after begin_shutdown"
        assert isinstance(outcome[0], ZkConnectionError) and "stopping" in str(outcome[0])
        # ... and later calls fail at once; the delete of an unregistering daemon included.
        with pytest.raises(ZkConnectionError, match="no connection"):
            patient.delete(f"{ZK_ROOT}/node")
    finally:
        closers = [threading.Thread(target=s.close) for s in (quick, patient)]
        for closer in closers:
            closer.start()
        for closer in closers:
            closer.join(EXIT_WAIT_SECS)
    assert not any(c.is_alive() for c in closers), "close() blocked with ZooKeeper down"


def test_leader_election_reads_are_bounded_while_zookeeper_is_down(
        private_zookeeper: ZooKeeperServer) -> None:
    """The leader lock read with the storage's bounded operations (what kazoo's recipe reads,
    in the same order), and a Nimbus start waiting for the election to settle gives up as soon
    as a stop is requested (SIGTERM during start), ZooKeeper down or not."""
    path = f"{ZK_ROOT}/leader-lock"
    storage = ZkStorage(private_zookeeper.connect_string, ZK_ROOT,
                        session_timeout_secs=SESSION_TIMEOUT_MS / 1000).start()
    holder = storage.lock(path, "127.0.0.1:6627")
    waiter = storage.lock(path, "127.0.0.1:6628")
    try:
        assert holder.acquire(timeout=10)
        # it waits in line until ZooKeeper goes away below (then kazoo raises: ignored)
        queued = threading.Thread(target=_call, args=(waiter.acquire, True, 30), daemon=True)
        queued.start()
        wait_for(lambda: len(storage.lock_contenders(path)) == 2, 10, "the second contender")
        assert storage.lock_contenders(path) == holder.contenders() == ["127.0.0.1:6627", "127.0.0.1:6628"]
        assert storage.lock_contenders(f"{ZK_ROOT}/no-lock") == []

        election = Leadership(storage, path, "127.0.0.1:6629", on_elected=lambda: None,
                              on_deposed=lambda: None)  # not started: only its queries
        assert election.leader_address() == "127.0.0.1:6627"
        private_zookeeper.stop()
        wait_for(lambda: not storage.connected, 20, "the storage to notice ZooKeeper is gone")
        assert election.leader_address() is None  # at once: no connection, no wait
        settled: list[bool] = []
        caller = threading.Thread(target=lambda: settled.append(election.wait_settled(60)))
        caller.start()
        caller.join(0.5)
        assert caller.is_alive(), "wait_settled returned with no leader known"
        storage.begin_shutdown()  # what Nimbus.request_stop does
        caller.join(EXIT_WAIT_SECS)
        assert not caller.is_alive() and settled == [False]
        with pytest.raises(ZkConnectionError, match="stopping"):
            storage.lock_contenders(path)
    finally:
        waiter.cancel()
        closer = threading.Thread(target=storage.close)
        closer.start()
        closer.join(EXIT_WAIT_SECS)


def _call(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except BaseException as exc:  # noqa: BLE001 - handed to the test thread
        return exc


def test_supervisor_with_a_worker_exits_on_sigterm_while_zookeeper_is_down(
        private_zookeeper: ZooKeeperServer, outage_env: SupervisorEnv) -> None:
    env = outage_env
    port, = free_ports(1)
    proc = run_stormpy(env, "supervisor", daemon_conf(env, "sup", [port]))
    try:
        (sid, _), = wait_for(lambda: env.state.supervisors(), 30, "the supervisor to register").items()
        start_one_worker(env, sid, port, "outage-1")
        private_zookeeper.stop()
        assert sigterm_and_wait(proc, "the supervisor", env, "supervisor") == 0
    finally:
        kill_quietly(proc)
    assert processes_under(env.base) == [], "the supervisor left processes behind"
    log = (env.log_dir / f"supervisor-{sid}.log").read_text()
    assert "received SIGTERM" in log and f"supervisor {sid} stopped" in log
    assert "not unregistering" in log
    # The worker stopped on its SIGTERM within the grace period (it was not SIGKILLed).
    assert re.search(rf"worker outage-1:{port} \(pid \d+\) stopped \(exit code 0\)", log), log


def test_worker_process_exits_on_sigterm_while_zookeeper_is_down(
        private_zookeeper: ZooKeeperServer, outage_env: SupervisorEnv) -> None:
    env = outage_env
    port, = free_ports(1)
    sup = env.start_supervisor("sup", [port], **{"storm.zookeeper.session.timeout": SESSION_TIMEOUT_MS})
    assert sup.supervisor_id is not None
    start_one_worker(env, sup.supervisor_id, port, "outage-2")
    handle = sup.workers()[port]
    assert handle.proc is not None
    sup.stop(stop_workers=False)  # the worker keeps running; this test signals it directly
    try:
        private_zookeeper.stop()
        handle.signal(signal.SIGTERM)
        try:
            code = handle.proc.wait(WORKER_GRACE_SECS)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the worker still runs {WORKER_GRACE_SECS:g} s (a supervisor's grace period) "
                        "after SIGTERM with ZooKeeper down")
        assert code == 0
    finally:
        handle.kill_group()
        with contextlib.suppress(subprocess.TimeoutExpired):
            handle.proc.wait(10)
    assert processes_under(env.base) == []
    worker_log = env.log_dir / f"worker-outage-2-{port}.log"
    assert "worker stopped cleanly: received SIGTERM" in worker_log.read_text()


def test_nimbus_exits_on_sigterm_while_zookeeper_is_down(
        private_zookeeper: ZooKeeperServer, outage_env: SupervisorEnv) -> None:
    env = outage_env
    nimbus_port, = free_ports(1)
    conf = daemon_conf(env, "nimbus", [], **{"nimbus.thrift.port": nimbus_port,
                                             "nimbus.monitor.freq.secs": 0.2})
    proc = run_stormpy(env, "nimbus", conf)
    try:
        with NimbusClient("127.0.0.1", nimbus_port, timeout_secs=2, retries=0) as client:
            wait_for(lambda: client.ping(2), 30, "Nimbus to answer")
            assert "supervisors" in client.cluster_info()
        private_zookeeper.stop()
        assert sigterm_and_wait(proc, "Nimbus", env, "nimbus") == 0
    finally:
        kill_quietly(proc)
    assert processes_under(env.base) == []
    log = Path(conf["storm.log.dir"], "nimbus.log").read_text()
    assert re.search(r"Nimbus \S+ stopped", log), log


def test_a_stalled_zookeeper_does_not_get_a_running_worker_restarted(
        private_zookeeper: ZooKeeperServer, outage_env: SupervisorEnv) -> None:
    """SIGSTOP ZooKeeper for twice the supervisor's worker timeout (FAST_TIMEOUTS) while a worker
    runs under a supervisor: its local heartbeat goes on (it never waits for ZooKeeper), so the
    supervisor keeps it; it keeps processing, and after SIGCONT every tuple is acked."""
    env = outage_env
    port, = free_ports(1)
    worker_timeout = float(FAST_TIMEOUTS["supervisor.worker.timeout.secs"])
    timeouts = {k: FAST_TIMEOUTS[k] for k in ("supervisor.worker.timeout.secs",
                                              "worker.heartbeat.frequency.secs",
                                              "supervisor.monitor.frequency.secs")}
    sup = env.start_supervisor("sup", [port], **timeouts,
                               **{"storm.zookeeper.session.timeout": SESSION_TIMEOUT_MS})
    assert sup.supervisor_id is not None
    rate = 20.0  # per spout task; two tasks
    start_one_worker(env, sup.supervisor_id, port, "stall-1")
    pid, = env.worker_pids()
    acked_before = env.total("stall-1", "pace", "acked")
    assert sup.dirs is not None
    beat_file = sup.dirs.heartbeat_file("stall-1", port)
    zk_pid = private_zookeeper.pid
    assert zk_pid is not None
    stall = 2 * worker_timeout
    os.kill(zk_pid, signal.SIGSTOP)
    stopped_at = time.time()
    try:
        # the worker heartbeats locally past the supervisor's timeout, and is not replaced
        wait_for(lambda: local_beat_time(beat_file) > stopped_at + worker_timeout, 3 * stall,
                 "the local heartbeat to go on while ZooKeeper is stopped")
        stays_unchanged(env.worker_pids, max(0.0, stopped_at + stall - time.time()),
                        "the worker processes while ZooKeeper is stopped")
    finally:
        os.kill(zk_pid, signal.SIGCONT)
    stalled_for = time.time() - stopped_at
    # It processed during the stall: once ZooKeeper is back, its counts cover the stall.
    wait_for(lambda: env.total("stall-1", "pace", "acked") >= acked_before + rate * stall, 60,
             "the worker's ZooKeeper heartbeat to show the tuples acked during the stall")
    env.set_status("stall-1", "inactive")
    wait_for(lambda: (lambda s: s.get("acked", 0) + s.get("failed", 0) >= s.get("emitted", 1))(
        env.heartbeats("stall-1")[(sup.supervisor_id, port)].stats.get("pace", {})), 60,
        "every emitted tuple to be acked or failed after deactivation")
    stats = env.heartbeats("stall-1")[(sup.supervisor_id, port)].stats["pace"]
    assert env.worker_pids() == [pid], "the worker was restarted"
    assert stats["failed"] == 0 and stats["acked"] == stats["emitted"], stats
    log = (env.log_dir / f"supervisor-{sup.supervisor_id}.log").read_text()
    assert "restart" not in log.lower(), log
    print(f"\nFAULT zookeeper SIGSTOP {stalled_for:.1f}s: emitted {stats['emitted']:.0f}, "
          f"acked {stats['acked']:.0f}, failed {stats['failed']:.0f}, lost "
          f"{stats['emitted'] - stats['acked'] - stats['failed']:.0f}, worker restarts 0")


def local_beat_time(path: Path) -> float:
    try:
        return float(msgpack.unpackb(path.read_bytes())["time"])
    except (OSError, ValueError, KeyError):
        return 0.0


def test_nimbus_started_before_its_zookeeper_waits_for_it_and_then_serves(
        outage_env: SupervisorEnv) -> None:
    """A Nimbus whose ZooKeeper does not answer yet (docker-compose starts them together) logs
    each wait and keeps trying (Storm's ``storm.zookeeper.retry.*``), then serves once ZooKeeper
    is up, instead of exiting."""
    env = outage_env
    zk_port, nimbus_port = free_ports(2)
    conf = daemon_conf(env, "nimbus", [], **{
        "storm.zookeeper.port": zk_port, "nimbus.thrift.port": nimbus_port,
        "storm.zookeeper.connection.timeout": 1000, "storm.zookeeper.retry.times": -1,
        "storm.zookeeper.retry.interval": 200, "storm.zookeeper.retry.intervalceiling.millis": 1000})
    log_path = Path(conf["storm.log.dir"], "nimbus.log")
    proc = run_stormpy(env, "nimbus", conf)
    try:
        wait_for(lambda: log_path.exists() and
                 f"waiting for ZooKeeper at 127.0.0.1:{zk_port}: attempt 2 failed" in log_path.read_text(),
                 60, "Nimbus to log its second wait for ZooKeeper")
        assert proc.poll() is None, "Nimbus exited instead of waiting for ZooKeeper"
        with running_zookeeper(heap_mb=128, port=zk_port), \
                NimbusClient("127.0.0.1", nimbus_port, timeout_secs=2, retries=0) as client:
            wait_for(lambda: client.ping(2), 120, "Nimbus to answer once ZooKeeper is up")
            assert re.search(rf"connected to ZooKeeper at 127\.0\.0\.1:{zk_port} after \d+ attempts",
                             log_path.read_text())
            assert sigterm_and_wait(proc, "Nimbus", env, "nimbus") == 0
    finally:
        kill_quietly(proc)
    assert processes_under(env.base) == []
