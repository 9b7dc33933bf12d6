"""``stormpy supervisor`` as a real process: it runs the assigned workers and, on SIGTERM, stops
them, unregisters and exits 0 leaving no process behind."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
import yaml
from supervisor_kit import (
    PACED_FILES,
    SupervisorEnv,
    paced_spec,
    processes_under,
    wait_for,
)

from stormpy.testing import free_ports

pytest_plugins = ["supervisor_fixtures"]
pytestmark = [pytest.mark.zookeeper, pytest.mark.cluster, pytest.mark.timeout(120)]


def test_sigterm_stops_workers_unregisters_and_leaves_no_process(supervisor_env: SupervisorEnv) -> None:
    env = supervisor_env
    ports = free_ports(2)
    conf_path = env.base / "stormpy.yaml"
    conf_path.write_text(yaml.safe_dump(env.conf("cli", ports)))
    out_path = env.base / "logs" / "supervisor-cli.out"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with open(out_path, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "stormpy.cli", "supervisor", "--config",
                                 str(conf_path), "-c", "supervisor.worker.shutdown.sleep.secs=2"],
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    try:
        infos = wait_for(lambda: env.state.supervisors(), 30, "the supervisor to register")
        (sid, info), = infos.items()
        assert sorted(info.ports) == sorted(ports)
        env.publish("cli-1", paced_spec(rate=50), {}, [(sid, ports[0]), (sid, ports[1])],
                    files=PACED_FILES)
        wait_for(lambda: len(env.worker_pids()) == 2 and env.total("cli-1", "sink", "acked") > 10,
                 60, "two workers processing tuples")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert processes_under(env.base) == []
    assert env.state.supervisors() == {}
    log = (env.log_dir / f"supervisor-{sid}.log").read_text()
    assert "received SIGTERM" in log and f"supervisor {sid} stopped" in log
