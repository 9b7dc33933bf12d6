"""A worker process under a supervisor survives bad frames sent to its port over ZeroMQ (it is
not restarted, acking goes on, the drops are logged with the sender), and its counters survive a
kill -9 (the restarted worker continues them in its ZooKeeper heartbeat)."""

from __future__ import annotations

import os
import signal

import msgpack
import pytest
import zmq
from supervisor_kit import PACED_FILES, SupervisorEnv, paced_spec, wait_for

from stormpy.testing import free_ports
from stormpy.topology._layout import compute_layout

pytestmark = [pytest.mark.zookeeper, pytest.mark.cluster, pytest.mark.timeout(120)]
pytest_plugins = ["supervisor_fixtures"]


def test_bad_frames_to_a_worker_port_do_not_stop_it(supervisor_env: SupervisorEnv) -> None:
    env = supervisor_env
    port, = free_ports(1)
    sup = env.start_supervisor("sup", [port])
    assert sup.supervisor_id is not None
    env.publish("bad-input", paced_spec(rate=20), {}, [(sup.supervisor_id, port)], files=PACED_FILES)
    wait_for(lambda: env.total("bad-input", "pace", "acked") > 0, 60, "the worker to ack tuples")
    pid, = env.worker_pids()
    tasks = compute_layout(paced_spec(), {"topology.workers": 1, "topology.acker.executors": 1}
                           ).component_tasks
    (acker,), (spout, _), (sink, _) = tasks["__acker"], tasks["pace"], tasks["sink"]
    bad = [b"garbage", msgpack.packb({"not": "a batch"}),
           msgpack.packb([[sink, "nope", spout, 0, 0, None, [1]]]),          # unknown stream
           msgpack.packb([[sink, "default", spout, 0, 0, None, [1, 2, 3]]]),  # wrong value count
           msgpack.packb([[77, "default", spout, 0, 0, None, [1]]]),          # unknown task
           msgpack.packb([[acker, "__ack_ack", -1, 0, 0, None, [1, 2, 3]]]),  # odd ack pairs
           msgpack.packb([[acker, "__ack_init", spout, 0, 0, None, ["a", "b", 1]]]),
           msgpack.packb([[acker, "__ack_fail", spout, 0, 0, None, []]]),
           msgpack.packb([[spout, "__ack_ack", acker, 0, 0, None, [[1]]]])]
    ctx = zmq.Context()
    push = ctx.socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 2000)
    push.connect(f"tcp://127.0.0.1:{port}")
    try:
        for _ in range(20):
            for frame in bad:
                push.send(frame)
    finally:
        push.close()
        ctx.term()
    log_path = env.log_dir / f"worker-bad-input-{port}.log"
    wait_for(lambda: "invalid inbound" in log_path.read_text(), 30, "the worker to log the drops")
    acked = env.total("bad-input", "pace", "acked")
    wait_for(lambda: env.total("bad-input", "pace", "acked") > acked + 20, 60, "acking to go on")
    assert env.worker_pids() == [pid], "the worker was restarted"
    text = log_path.read_text()
    assert "latest from 127.0.0.1" in text, text
    assert "worker stopped" not in text and "Traceback" not in text, text
    assert env.total("bad-input", "pace", "failed") == 0


def test_counters_survive_a_kill_9_of_the_worker(supervisor_env: SupervisorEnv) -> None:
    env = supervisor_env
    port, = free_ports(1)
    sup = env.start_supervisor("sup", [port])
    assert sup.supervisor_id is not None
    env.publish("kill-9", paced_spec(rate=20), {}, [(sup.supervisor_id, port)], files=PACED_FILES)
    wait_for(lambda: env.total("kill-9", "pace", "acked") > 20, 60, "the worker to ack tuples")
    pid, = env.worker_pids()
    os.kill(pid, signal.SIGKILL)
    before = env.total("kill-9", "pace", "acked")
    seen: list[float] = []

    def restarted_and_counting() -> bool:
        seen.append(env.total("kill-9", "pace", "acked"))
        pids = env.worker_pids()
        beat = env.heartbeats("kill-9").get((sup.supervisor_id, port))  # type: ignore[arg-type]
        return bool(pids) and pids != [pid] and beat is not None and beat.uptime < 30 and \
            beat.process.get("counters_carried") == 1.0 and seen[-1] > before + 20
    wait_for(restarted_and_counting, 90, "the restarted worker to continue the counters")
    assert min(seen) >= before, f"acked dropped from {before} to {min(seen)}"
