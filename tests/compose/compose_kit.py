"""The docker-compose cluster of ``docker-compose.yml`` for the tests in this directory: one
``docker-compose up`` per test run (project ``stormpy-test-<pid>``, published ports chosen free
through the compose file's ``STORMPY_*_PORT`` variables), torn down with ``down -v``.

Docker (Debian's docker.io and docker-compose, a running dockerd) is installed and started by
``docker/ensure-docker.sh`` and the images built by ``make images`` (on every run, so they are of
this tree; Docker's layer cache keeps that to seconds when they exist, and a first build installs
the host's wheels and compiled tuple path instead of downloading and compiling them); when that
is not possible the tests skip, and fail under ``CI=true``. The fixture waits for the stormpy
services only; the Spark scenario waits for the Spark services, which start meanwhile.

A test override (written to the run's temp dir) mounts one host directory at the same path in both
supervisors and the Spark worker (``STORMPY_SHARED_DIR``): the ledger topology's SQLite ledger and
the flagship's output live there, readable by the test on the host."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from parts_kit import unavailable
from stormpy.host.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ["zookeeper", "nimbus", "nimbus2", "supervisor1", "supervisor2", "ui", "spark-master",
            "spark-worker"]
PORTS = ["STORMPY_ZOOKEEPER_PORT", "STORMPY_NIMBUS_PORT", "STORMPY_NIMBUS2_PORT", "STORMPY_UI_PORT",
         "STORMPY_SPARK_MASTER_PORT", "STORMPY_SPARK_UI_PORT", "STORMPY_LOGVIEWER1_PORT",
         "STORMPY_LOGVIEWER2_PORT"]
SHARED = ["supervisor1", "supervisor2", "spark-worker"]
#: what the stormpy scenarios need; the Spark services (their JVMs are the slowest to start on a
#: busy host) are waited for by the Spark scenario only, so the others run meanwhile
STORMPY_SERVICES = ["zookeeper", "nimbus", "nimbus2", "supervisor1", "supervisor2", "ui"]
SPARK_SERVICES = ["spark-master", "spark-worker"]


def _unavailable(why: str) -> NoReturn:
    unavailable("the docker-compose cluster", why)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(*argv: str, env: dict[str, str] | None = None, check: bool = True,
        timeout: float = 600) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(argv), cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stdout[-3000:]}"
                             f"\n{proc.stderr[-3000:]}")
    return proc


@dataclass
class ComposeCluster:
    """A running project of docker-compose.yml and how the host reaches it."""

    project: str
    env: dict[str, str]
    files: list[str]
    shared: Path

    def compose(self, *args: str, check: bool = True,
                timeout: float = 600) -> subprocess.CompletedProcess[str]:
        flags = [arg for f in self.files for arg in ("-f", f)]
        return run("docker-compose", "-p", self.project, *flags, *args, env=self.env, check=check,
                   timeout=timeout)

    def container(self, service: str) -> str:
        return self.compose("ps", "-q", service).stdout.strip()

    def port(self, variable: str) -> int:
        return int(self.env[variable])

    def nimbus(self, service: str) -> str:
        port = {"nimbus": "STORMPY_NIMBUS_PORT", "nimbus2": "STORMPY_NIMBUS2_PORT"}[service]
        return f"127.0.0.1:{self.port(port)}"

    def api(self, path: str) -> Any:
        url = f"http://127.0.0.1:{self.port('STORMPY_UI_PORT')}{path}"
        with urllib.request.urlopen(url, timeout=30) as response:
            return json.load(response)

    def stormpy(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        env = {**self.env, "STORMPY_CONF": str(self.shared / "client.yaml")}
        return run(sys.executable, "-m", "stormpy.cli", *args, env=env,
                   timeout=timeout)

    def health(self) -> dict[str, str]:
        """Service → its container's health status (one ``docker ps``: cheap on a busy host)."""
        out = dict.fromkeys(SERVICES, "missing")
        listed = run("docker", "ps", "-a", "--filter", f"label=com.docker.compose.project={self.project}",
                     "--format", '{{.Label "com.docker.compose.service"}} {{.Status}}')
        for line in listed.stdout.splitlines():
            service, _, status = line.partition(" ")
            out[service] = ("healthy" if "(healthy)" in status else
                            "unhealthy" if "(unhealthy)" in status else "starting")
        return out

    def wait_healthy(self, services: list[str], timeout: float) -> None:
        """Wait until every one of ``services`` is healthy; a service that stays unhealthy or
        missing fails the wait at its deadline, naming every service's state."""
        def ready() -> bool:
            states = self.health()
            last.update(states)
            return all(states[s] == "healthy" for s in services)
        last: dict[str, str] = {}
        try:
            wait_for(ready, timeout, f"{', '.join(services)} healthy", interval=2)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}; states: {last}") from None

    def project_leftovers(self) -> dict[str, list[str]]:
        label = f"label=com.docker.compose.project={self.project}"
        return {kind: run("docker", *cmd, "-q", "--filter", label).stdout.split()
                for kind, cmd in (("containers", ["ps", "-a"]), ("networks", ["network", "ls"]),
                                  ("volumes", ["volume", "ls"]))}


def _images_ready() -> None:
    ensure = run(str(ROOT / "docker" / "ensure-docker.sh"), check=False, timeout=900)
    if ensure.returncode != 0:
        _unavailable(f"Docker could not be installed or started: {ensure.stdout[-500:]}"
                     f"{ensure.stderr[-500:]}")
    # always built: an image left from an older tree would test old code; Docker's layer cache
    # makes this a few seconds when nothing changed (`make test-compose` has just built them)
    built = run("make", "images", check=False, timeout=3600)
    if built.returncode != 0:
        _unavailable(f"`make images` failed: {built.stdout[-1500:]}{built.stderr[-1500:]}")


def _override(shared: Path) -> str:
    lines = ["services:"]
    for service in SHARED:
        lines += [f"  {service}:", "    volumes:", f"      - {shared}:{shared}"]
    path = shared.parent / "compose-test.yml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _up_on_free_ports(cluster: ComposeCluster, attempts: int = 3) -> None:
    """``up -d`` with every published port free when chosen; a port taken meanwhile by another
    process of the host (the error names the address in use) gets the project down and up again
    on new ports."""
    for attempt in range(1, attempts + 1):
        cluster.env.update({name: str(_free_port()) for name in PORTS})
        up = cluster.compose("up", "-d", "--no-build", timeout=900, check=False)
        if up.returncode == 0:
            return
        taken = "address already in use" in up.stderr or "port is already allocated" in up.stderr
        if not taken or attempt == attempts:
            raise AssertionError(f"docker-compose up exited {up.returncode}:\n{up.stderr[-3000:]}")
        cluster.compose("down", "-v", "--remove-orphans", "-t", "10", check=False)


@pytest.fixture(scope="session")
def compose_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComposeCluster]:
    if shutil.which("make") is None:
        _unavailable("make is required to build the images")
    base = tmp_path_factory.mktemp("compose")
    shared = base / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # the containers' user (stormpy, uid 10001) writes there
    started = time.monotonic()
    _images_ready()  # first: building takes minutes, long enough for a chosen port to be taken
    phases = [f"images ready {time.monotonic() - started:.0f} s"]
    env = {**os.environ,
           "COMPOSE_HTTP_TIMEOUT": "600",  # docker-compose's 60 s default is short on a busy host
           "STORMPY_SHARED_DIR": str(shared)}
    cluster = ComposeCluster(f"stormpy-test-{os.getpid()}", env,
                             [str(ROOT / "docker-compose.yml"), _override(shared)], shared)
    (shared / "client.yaml").write_text("{}\n")  # the host's CLI: --nimbus says where
    try:
        _up_on_free_ports(cluster)
        phases.append(f"up {time.monotonic() - started:.0f} s")
        cluster.wait_healthy(STORMPY_SERVICES, 900)
        phases.append(f"stormpy services healthy {time.monotonic() - started:.0f} s")
        print("compose cluster set up:", ", ".join(phases))  # shown with -s
        yield cluster
    finally:
        logs = cluster.compose("logs", "--no-color", "--tail", "200", check=False)
        (base / "compose.log").write_text(logs.stdout + logs.stderr)
        cluster.compose("down", "-v", "--remove-orphans", "-t", "10", check=False)


def wait_acked(cluster: ComposeCluster, name: str, spout: str, count: int, timeout: float,
               window: str = ":all-time") -> dict[str, Any]:
    """Wait until the UI shows ``count`` tuples acked (in ``window``) by ``spout`` of topology
    ``name``; return the spout's row."""
    def figures() -> dict[str, Any] | None:
        tops = [t for t in cluster.api("/api/v1/topology/summary")["topologies"] if t["name"] == name]
        if not tops:
            return None
        doc = cluster.api(f"/api/v1/topology/{tops[0]['id']}?window={window}")
        row = next(s for s in doc["spouts"] if s["spoutId"] == spout)
        return row if int(row["acked"]) >= count else None
    found = wait_for(figures, timeout, f"{count} tuples of {name}/{spout} acked", interval=1,
                     ignore=(OSError, KeyError, StopIteration))
    assert found is not None
    return found

