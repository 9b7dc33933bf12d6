"""Stand-in worker processes for the supervisor's unit tests.

:func:`fake_python` writes an executable that :func:`stormpy.supervisor.launcher.launch_worker`
runs in place of the Python interpreter (its ``python`` argument): it starts a small real
process that takes the worker's command line (``-m stormpy.worker.process --topology-id ...``),
so the supervisor launches, watches, judges, adopts and stops it exactly as a worker, in a
fraction of a worker's start-up time. What it does is chosen by ``FAKE_WORKER`` in its
environment:

* ``beat`` (default): writes its local heartbeat (executors: ``FAKE_EXECUTORS``, JSON) every
  50 ms until it is signalled;
* ``stale``: writes one heartbeat 1000 s old, then sleeps;
* ``silent``: never writes a heartbeat;
* ``fail``: logs an ERROR line in the worker log format (``worker stopped: boom in <pid>``) and
  exits with code 3;
* ``fail-once``: fails like ``fail`` on its first run in its worker directory, then beats;
* ``die``: exits with code 3 at once, logging nothing;
* ``fail-with-child``: starts a ``sleep`` in its process group (its pid in ``child-pid`` of the
  worker directory), then fails like ``fail``;
* ``stubborn``: ignores SIGTERM, writes heartbeats.

Once up (all but ``fail``), it prints ``fake worker up`` to stdout and ``fake worker stderr`` to
stderr.

Every run writes ``fake-run.json`` into its worker directory: its argv, cwd, the open file
descriptors, its process group and a few environment variables.

:func:`stand_in_nimbus` serves the RPC methods a supervisor calls (:class:`StandInNimbus`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil

from stormpy.bundle import build_bundle
from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.rpc import NotFoundError, RpcServer, rpc_method
from stormpy.testing import wait_for

FAKE_WORKER = r'''
import json, os, signal, subprocess, sys, time
import msgpack

args = sys.argv[1:]
assert args[:2] == ["-m", "stormpy.worker.process"], args
opts = dict(zip(args[2::2], args[3::2]))
tid, sid, port = opts["--topology-id"], opts["--supervisor-id"], int(opts["--port"])
wdir = os.path.join(opts["--local-dir"], "supervisor", sid, "workers", f"{tid}-{port}")
mode = os.environ.get("FAKE_WORKER", "beat")

def beat(at):
    tmp = os.path.join(wdir, ".heartbeat.tmp")
    with open(tmp, "wb") as f:
        f.write(msgpack.packb({"time": at, "pid": os.getpid(), "topology_id": tid, "port": port,
                               "executors": json.loads(os.environ.get("FAKE_EXECUTORS", "[]"))}))
    os.replace(tmp, os.path.join(wdir, "heartbeat"))

if mode == "stale":  # before the run record: a test that saw the record sees this heartbeat
    beat(time.time() - 1000)
with open(os.path.join(wdir, "fake-run.json"), "w") as f:
    json.dump({"argv": sys.argv, "cwd": os.getcwd(),
               "fds": sorted(int(n) for n in os.listdir("/proc/self/fd")),
               "pgid": os.getpgid(0), "stdin": os.path.realpath("/proc/self/fd/0"),
               "env": {k: os.environ.get(k) for k in ("FAKE_WORKER", "PYTHONUNBUFFERED", "FAKE_MARK")}}, f)

if mode == "fail-once":  # fails on its first run in this worker directory, then beats
    marker = os.path.join(wdir, "failed-once")
    mode = "beat" if os.path.exists(marker) else "fail"
    open(marker, "a").close()
if mode == "die":
    os._exit(3)
if mode in ("fail", "fail-with-child"):
    if mode == "fail-with-child":
        child = subprocess.Popen(["sleep", "300"])
        with open(os.path.join(wdir, "child-pid"), "w") as f:
            f.write(str(child.pid))
    print(f"2026-01-01 00:00:00,000 ERROR [worker {tid}:{port} pid {os.getpid()}] MainThread "
          f"stormpy.worker.process: worker stopped: boom in {os.getpid()}", flush=True)
    os._exit(3)
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("fake worker up", flush=True)
print("fake worker stderr", file=sys.stderr, flush=True)
deadline = time.monotonic() + 300
while time.monotonic() < deadline:
    if mode in ("beat", "stubborn"):
        beat(time.time())
    time.sleep(0.05)
'''


def fake_python(tmp_path: Path) -> str:
    """An executable standing in for the interpreter in ``launch_worker(..., python=...)``."""
    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE_WORKER)
    wrapper = tmp_path / "fake-python"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


def make_dirs(tmp_path: Path, supervisor_id: str = "sup-1") -> SupervisorDirs:
    dirs = SupervisorDirs(tmp_path / "local", supervisor_id, tmp_path / "logs")
    dirs.root.mkdir(parents=True)
    return dirs


def downloaded(dirs: SupervisorDirs, topology_id: str) -> None:
    """Lay out ``topology_id``'s code as a finished download would."""
    dirs.code_dir(topology_id).mkdir(parents=True)
    dirs.topology_file(topology_id).write_bytes(b"\x80")


def run_record(dirs: SupervisorDirs, topology_id: str, port: int) -> dict[str, Any]:
    """The fake worker's ``fake-run.json`` (waits for it)."""
    path = dirs.worker_dir(topology_id, port) / "fake-run.json"

    def read() -> dict[str, Any] | None:
        try:
            return json.loads(path.read_text())  # type: ignore[no-any-return]
        except (OSError, ValueError):
            return None

    return wait_for(read, 30, f"the fake worker of {topology_id}:{port} to start")  # type: ignore[no-any-return]


def gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (a zombie counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def kill_left(*pids: int) -> None:
    """SIGKILL whatever of ``pids`` (and their process groups) a failed test left running."""
    for pid in pids:
        if not gone(pid):
            for kill, target in ((os.killpg, pid), (os.kill, pid)):
                with contextlib.suppress(OSError):
                    kill(target, 9)


class StandInNimbus:
    """A Nimbus over real RPC (:class:`~stormpy.rpc.RpcServer` on loopback) serving what a
    supervisor asks: who leads, a topology's files and bundle download, and taking a lost bundle
    back (upload and ``restore_bundle``). ``leader``: the address it names as leader (None: itself);
    ``files_error``: raised by ``get_topology_files``; ``announce``: fields that ``begin_download``
    announces instead of the real ones; ``chunk``: bytes per download chunk; ``before_chunk``:
    called before each chunk is served."""

    def __init__(self) -> None:
        self.address = ""
        self.leader: str | None = None
        self.topologies: dict[str, dict[str, Any]] = {}
        self.files_error: Exception | None = None
        self.announce: dict[str, Any] = {}
        self.chunk = 1 << 20
        #: called before each download chunk is served (a test holds a download there)
        self.before_chunk: Callable[[], object] = lambda: None
        self.calls: list[str] = []
        self.uploaded: dict[str, bytes] = {}
        self.restored: list[dict[str, Any]] = []
        self.restore_answer = True
        #: (supervisor id, heartbeat document) of every worker heartbeat sent
        self.beats: list[tuple[str, Any]] = []
        #: raised by ``send_supervisor_worker_heartbeats`` when set
        self.beats_error: Exception | None = None

    def add(self, topology_id: str, bundle: bytes, spec: dict[str, Any], conf: dict[str, Any] | None) -> None:
        self.topologies[topology_id] = {"bundle": bundle, "spec": spec, "conf": conf}

    @rpc_method
    def get_leader(self) -> Any:
        self.calls.append("get_leader")
        return {"leader": self.leader or self.address, "is_leader": self.leader is None, "self": self.address}

    @rpc_method
    def get_topology_files(self, topology_id: str) -> Any:
        self.calls.append(f"get_topology_files {topology_id}")
        if self.files_error is not None:
            raise self.files_error
        if topology_id not in self.topologies:
            raise NotFoundError(f"no topology {topology_id} here")
        t = self.topologies[topology_id]
        return {"bundle_key": f"key-{topology_id}", "bundle_size": len(t["bundle"]),
                "bundle_sha256": hashlib.sha256(t["bundle"]).hexdigest(), "spec": t["spec"],
                "conf": t["conf"]}

    @rpc_method
    def begin_download(self, bundle_key: str) -> Any:
        self.calls.append(f"begin_download {bundle_key}")
        bundle = self.topologies[bundle_key.removeprefix("key-")]["bundle"]
        return {"download_id": bundle_key, "size": len(bundle), "sha256": hashlib.sha256(bundle).hexdigest(),
                **self.announce}

    @rpc_method
    def download_chunk(self, download_id: str, offset: int) -> Any:
        self.before_chunk()
        bundle = self.topologies[download_id.removeprefix("key-")]["bundle"]
        return {"data": bundle[offset:offset + self.chunk]}

    @rpc_method
    def send_supervisor_worker_heartbeats(self, supervisor_id: str, heartbeats: list[Any]) -> Any:
        if self.beats_error is not None:
            raise self.beats_error
        self.beats.extend((supervisor_id, beat) for beat in heartbeats)
        return {"recorded": len(heartbeats)}

    @rpc_method
    def begin_upload(self, size: int) -> Any:
        self.calls.append("begin_upload")
        upload_id = f"u{len(self.uploaded)}"
        self.uploaded[upload_id] = b""
        return {"upload_id": upload_id, "chunk_size": 1 << 20}

    @rpc_method
    def upload_chunk(self, upload_id: str, data: bytes, offset: int) -> Any:
        self.uploaded[upload_id] += data
        return {"received": len(self.uploaded[upload_id])}

    @rpc_method
    def finish_upload(self, upload_id: str, sha256: str) -> Any:
        assert hashlib.sha256(self.uploaded[upload_id]).hexdigest() == sha256
        return {"bundle_key": f"restored-{upload_id}"}

    @rpc_method
    def restore_bundle(self, topology_id: str, bundle_key: str, spec: Any, conf: Any) -> Any:
        self.calls.append(f"restore_bundle {topology_id}")
        self.restored.append({"topology_id": topology_id, "bundle_key": bundle_key, "spec": spec,
                              "conf": conf})
        return {"restored": self.restore_answer}


@contextlib.contextmanager
def stand_in_nimbus(auth_token: str | None = None) -> Iterator[StandInNimbus]:
    """A :class:`StandInNimbus` serving on a free loopback port (``.address``) while in the block."""
    nimbus = StandInNimbus()
    with RpcServer("127.0.0.1", 0, nimbus, name="nimbus", auth_token=auth_token) as server:
        nimbus.address = f"127.0.0.1:{server.port}"
        yield nimbus


def bundle_bytes(tmp_path: Path, files: dict[str, str]) -> bytes:
    """A real bundle holding ``files`` (relative path → text)."""
    src = tmp_path / f"bundle-src-{len(list(tmp_path.glob('bundle-src-*')))}"
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    out = src.with_suffix(".zip")
    build_bundle(src, out)
    return out.read_bytes()
