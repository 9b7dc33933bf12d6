"""Nimbus in this process against a real ZooKeeper: bad input is refused with clear typed errors
while the daemon keeps serving; lifecycle, scheduling, downloads and resume-on-restart with
supervisors registered directly in ZooKeeper (no worker processes)."""

from __future__ import annotations

import os
import shutil
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zmq

from stormpy.bundle import build_bundle
from stormpy.cli.topology_loader import load_topology
from stormpy.client import NimbusClient
from stormpy.cluster import ClusterState, SupervisorInfo
from stormpy.nimbus import Nimbus
from stormpy.nimbus.uploads import UNPACKED_LIMIT_FACTOR
from stormpy.rpc.codec import decode_response
from stormpy.rpc.errors import (
    AlreadyExistsError,
    InvalidRequestError,
    NotFoundError,
    TopologyRefusedError,
    UnreachableError,
    UploadError,
)
from stormpy.testing import wait_for

pytestmark = [pytest.mark.timeout(120), pytest.mark.zookeeper]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MAX_BUNDLE = 300_000


class Env:
    """A running Nimbus, a client, the cluster state and a built word-count bundle."""

    def __init__(self, zk: str, root: str, tmp: Path) -> None:
        self.tmp = tmp
        self.conf = {"storm.zookeeper.servers": [zk], "storm.zookeeper.root": root,
                     "storm.local.dir": str(tmp / "local"), "nimbus.thrift.port": 0,
                     "nimbus.max.bundle.size.bytes": MAX_BUNDLE, "nimbus.monitor.freq.secs": 0.2,
                     "nimbus.supervisor.timeout.secs": 1, "nimbus.task.timeout.secs": 2,
                     "nimbus.task.launch.secs": 60, "nimbus.file.copy.expiration.secs": 3,
                     "nimbus.upload.chunk.size.bytes": 4096}
        self.nimbus = Nimbus(self.conf).start()
        self.client = NimbusClient("127.0.0.1", self.nimbus.port, timeout_secs=10)
        self.state = ClusterState.connect(zk, root)
        src = tmp / "src"
        src.mkdir()
        shutil.copy(EXAMPLES / "wordcount.py", src / "wordcount.py")
        self.bundle = build_bundle(src, tmp / "wc.zip")
        self.spec = load_topology(src, "wordcount:topology").spec.to_doc()

    def restart(self) -> None:
        self.client.close()
        self.nimbus.stop()
        self.nimbus = Nimbus(self.conf).start()
        self.client = NimbusClient("127.0.0.1", self.nimbus.port, timeout_secs=10)

    def close(self) -> None:
        self.client.close()
        self.nimbus.stop()
        self.state.close()

    def add_supervisor(self, sid: str, ports: list[int]) -> None:
        self.state.register_supervisor(SupervisorInfo(sid, "127.0.0.1", ports, time.time(), "test"))

    def submit(self, name: str = "wc", workers: int = 2, active: bool = True) -> str:
        return self.client.submit(name, self.bundle.path, self.spec, {"topology.workers": workers},
                                  active=active)

    def assert_killed(self, tid: str) -> None:
        """What ``kill`` with no wait promises when it returns: the topology's status and
        assignment are gone (it is not listed; its name is free); what a worker or a replica
        wrote after the removal (a last heartbeat, a late error) the monitor's cleanup removes
        on a later round, so the rest of its ZooKeeper state is awaited."""
        assert self.state.storm_base(tid) is None and self.state.assignment(tid) is None
        assert tid not in {t["id"] for t in self.client.cluster_info()["topologies"]}
        wait_for(lambda: tid not in self.state.topologies(), 30,
                 f"the monitor's cleanup to remove the rest of {tid}'s state")

    def assert_serving(self) -> None:
        """The daemon still answers and still accepts a whole upload."""
        assert "supervisors" in self.client.cluster_info()
        assert self.client.upload_bundle(self.bundle.path).startswith("b")


@pytest.fixture
def env(zookeeper: Any, zk_root: str, tmp_path: Path) -> Iterator[Env]:
    e = Env(zookeeper.connect_string, zk_root, tmp_path)
    try:
        yield e
    finally:
        e.close()


# -- bad input ---------------------------------------------------------------------------------------
def test_wrong_checksum(env: Env) -> None:
    data = env.bundle.path.read_bytes()
    begun = env.client.call("begin_upload", size=len(data))
    env.client.call("upload_chunk", upload_id=begun["upload_id"], data=data, offset=0)
    with pytest.raises(UploadError, match="sha256 mismatch"):
        env.client.call("finish_upload", upload_id=begun["upload_id"], sha256="ab" * 32)
    assert list((env.tmp / "local" / "nimbus" / "uploads").iterdir()) == []
    env.assert_serving()


def test_oversized_bundle(env: Env) -> None:
    with pytest.raises(UploadError, match="nimbus.max.bundle.size.bytes"):
        env.client.call("begin_upload", size=MAX_BUNDLE + 1)
    env.assert_serving()
    big = env.tmp / "big"
    big.mkdir()
    (big / "blob.bin").write_bytes(os.urandom(MAX_BUNDLE + 1000))  # incompressible
    bundle = build_bundle(big, env.tmp / "big.zip")
    with pytest.raises(UploadError, match="exceeds the limit"):
        env.client.upload_bundle(bundle.path)
    env.assert_serving()


def test_bundle_unpacking_past_the_limit_is_refused_at_upload(env: Env) -> None:
    """Guarantee: on the real upload path (client, RPC, Nimbus) a small bundle that unpacks past
    the unpacked-size limit is refused when the upload finishes and its file is removed: nothing
    is staged for a submit."""
    bomb = env.tmp / "bomb"
    bomb.mkdir()
    (bomb / "zeros.bin").write_bytes(bytes(MAX_BUNDLE * UNPACKED_LIMIT_FACTOR + 1))
    bundle = build_bundle(bomb, env.tmp / "bomb.zip")
    assert bundle.size < MAX_BUNDLE
    with pytest.raises(UploadError, match="unpacked size limit"):
        env.client.upload_bundle(bundle.path)
    assert list((env.tmp / "local" / "nimbus" / "uploads").iterdir()) == []
    env.assert_serving()


def test_path_traversal_entry(env: Env) -> None:
    evil = env.tmp / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../outside.py", "print('escaped')\n")
        zf.writestr("MANIFEST.json", '{"format": 1, "created": 0, "files": {}}')
    with pytest.raises(UploadError, match="escapes the bundle"):
        env.client.upload_bundle(evil)
    assert not (env.tmp / "local" / "nimbus" / "outside.py").exists()
    env.assert_serving()


def test_malformed_rpc_frames(env: Env) -> None:
    ctx = zmq.Context.instance()
    raw = ctx.socket(zmq.DEALER)
    raw.linger = 0
    try:
        raw.connect(f"tcp://127.0.0.1:{env.nimbus.port}")
        for frames in ([b"", b"\xc1 not msgpack"], [b"", msgpack.packb([1, 2, 3])],
                       [b"", msgpack.packb({"v": 1, "id": "x", "method": 7})], [b"", b"a", b"b"]):
            raw.send_multipart(frames)
            assert raw.poll(10_000), f"no answer to {frames!r}"
            reply = raw.recv_multipart()
            response = decode_response(reply[-1])
            assert not response.ok and response.error_type == "InvalidRequestError"
            assert "malformed request" in (response.error_message or "")
    finally:
        raw.close()
    env.assert_serving()


def test_unknown_method_and_bad_arguments(env: Env) -> None:
    with pytest.raises(InvalidRequestError, match="unknown method 'format_disk'"):
        env.client.call("format_disk")
    with pytest.raises(InvalidRequestError, match="bad arguments"):
        env.client.call("kill_topology", nom="wc")
    with pytest.raises(InvalidRequestError, match="wait_secs"):
        env.client.call("kill_topology", name="wc", wait_secs="soon")
    with pytest.raises(UploadError, match="offset"):
        begun = env.client.call("begin_upload", size=10)
        env.client.call("upload_chunk", upload_id=begun["upload_id"], data=b"abc", offset=5)
    env.assert_serving()


def test_invalid_topology_spec_name_and_conf(env: Env) -> None:
    key = env.client.upload_bundle(env.bundle.path)
    bad_spec = {"version": 1, "components": {
        "count": {"kind": "bolt", "class": "x.Y", "inputs": [
            {"component": "nowhere", "stream": "default", "grouping": {"type": "shuffle"}}]},
        "src": {"kind": "spout", "class": "x.Z", "streams": {"default": {"fields": ["w"]}}}}}
    with pytest.raises(TopologyRefusedError, match="unknown component 'nowhere'"):
        env.client.submit_topology("wc", key, bad_spec)
    with pytest.raises(TopologyRefusedError, match="no spouts"):
        env.client.submit_topology("wc", key, {"version": 1, "components": {}})
    with pytest.raises(TopologyRefusedError, match="must be a mapping"):
        env.client.call("submit_topology", name="wc", bundle_key=key, spec="garbage", conf={})
    with pytest.raises(TopologyRefusedError, match="invalid topology name"):
        env.client.submit_topology("../etc", key, env.spec)
    with pytest.raises(TopologyRefusedError, match="topology.workers"):
        env.client.submit_topology("wc", key, env.spec, {"topology.workers": 0})
    with pytest.raises(NotFoundError, match="no uploaded bundle"):
        env.client.submit_topology("wc", "bnope", env.spec)
    # the refused submits did not consume the upload: it is still usable
    assert env.client.submit_topology("wc", key, env.spec).startswith("wc-")
    env.assert_serving()


def test_unknown_topology_name(env: Env) -> None:
    for call in (lambda: env.client.kill("ghost", 0), lambda: env.client.activate("ghost"),
                 lambda: env.client.deactivate("ghost"), lambda: env.client.rebalance("ghost", 0, 2),
                 lambda: env.client.topology_info("ghost"), lambda: env.client.topology_files("ghost-1"),
                 lambda: env.client.call("begin_download", bundle_key="../../etc")):
        with pytest.raises(NotFoundError):
            call()
    env.assert_serving()


def outcome_of(call: Any) -> Any:
    """Run ``call`` on a thread of its own and return what it returned or raised, once it has
    ended (a call that hangs fails the test after a generous deadline instead of hanging it)."""
    result: list[Any] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            result.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    wait_for(lambda: not thread.is_alive(), 120, "the call to return instead of waiting on")
    return result[0]


def test_dead_nimbus_is_reported_as_unreachable_not_waited_on(env: Env) -> None:
    port = env.nimbus.port
    env.nimbus.stop()
    client = NimbusClient("127.0.0.1", port, timeout_secs=1.0, retries=1)
    try:
        assert isinstance(outcome_of(client.check_reachable), UnreachableError)
        assert isinstance(outcome_of(client.cluster_info), UnreachableError)
    finally:
        client.close()


# -- uploads -----------------------------------------------------------------------------------------
def test_concurrent_uploads_from_several_clients(env: Env) -> None:
    keys: list[str] = []
    errors: list[BaseException] = []

    def upload() -> None:
        try:
            with NimbusClient("127.0.0.1", env.nimbus.port) as client:
                keys.append(client.upload_bundle(env.bundle.path))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=upload) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == [] and len(set(keys)) == 5


def test_abandoned_upload_is_cleaned_up(env: Env) -> None:
    begun = env.client.call("begin_upload", size=100)
    env.client.call("upload_chunk", upload_id=begun["upload_id"], data=b"x" * 10, offset=0)
    uploads = env.tmp / "local" / "nimbus" / "uploads"
    assert len(list(uploads.iterdir())) == 1
    wait_for(lambda: not list(uploads.iterdir()), 10, "the abandoned upload to expire")
    with pytest.raises(UploadError, match="unknown upload id"):
        env.client.call("upload_chunk", upload_id=begun["upload_id"], data=b"x", offset=10)


# -- lifecycle with supervisors registered in ZooKeeper ----------------------------------------------
def test_submit_schedule_status_rebalance_kill(env: Env) -> None:
    env.add_supervisor("sup-a", [6700, 6701])
    env.add_supervisor("sup-b", [6700, 6701])
    tid = env.submit(active=False)
    assignment = env.state.assignment(tid)
    assert assignment is not None and assignment.bundle_key == tid
    assert {node for node, _ in assignment.executors.values()} == {"sup-a", "sup-b"}
    assert env.state.storm_base(tid).status == "inactive"  # type: ignore[union-attr]
    with pytest.raises(AlreadyExistsError):
        env.submit()
    env.client.activate("wc")
    assert env.state.storm_base(tid).status == "active"  # type: ignore[union-attr]
    env.client.deactivate("wc")
    assert env.state.storm_base(tid).status == "inactive"  # type: ignore[union-attr]

    info = env.client.topology_info("wc")
    assert info["id"] == tid and info["num_workers"] == 2 and len(info["workers"]) == 2
    assert info["components"]["count"] == {"tasks": 3, "executors": 3,
                                           "task_ids": info["components"]["count"]["task_ids"]}
    assert len(info["components"]["count"]["task_ids"]) == 3
    listed = env.client.cluster_info()
    assert [t["name"] for t in listed["topologies"]] == ["wc"]
    assert sum(s["slots_used"] for s in listed["supervisors"]) == 2

    files = env.client.topology_files(tid)
    assert files["bundle_key"] == tid and files["conf"]["topology.workers"] == 2
    dest = env.client.download_bundle(files["bundle_key"], env.tmp / "down.zip")
    assert dest.read_bytes() == env.bundle.path.read_bytes()

    env.client.rebalance("wc", 0, 3, {"count": 1})
    assignment = env.state.assignment(tid)
    assert assignment is not None and len(assignment.workers()) == 3
    base = env.state.storm_base(tid)
    assert base is not None and base.status == "inactive" and base.component_executors["count"] == 1

    env.client.kill("wc", 0)
    assert not (env.tmp / "local" / "nimbus" / "stormdist" / tid).exists()
    assert env.client.cluster_info()["topologies"] == []
    env.assert_killed(tid)


def test_kill_with_wait_deactivates_first(env: Env) -> None:
    env.add_supervisor("sup-a", [6700])
    tid = env.submit(workers=1)
    env.client.kill("wc", 1.0)
    assert env.state.storm_base(tid).status == "killed"  # type: ignore[union-attr]
    wait_for(lambda: tid not in env.state.topologies(), 10, "the killed topology to be removed")


def test_vanished_supervisor_executors_move(env: Env) -> None:
    env.add_supervisor("sup-a", [6700, 6701])
    env.add_supervisor("sup-b", [6700, 6701])
    tid = env.submit()
    env.state.unregister_supervisor("sup-b")
    wait_for(lambda: {n for n, _ in env.state.assignment(tid).executors.values()} == {"sup-a"},  # type: ignore[union-attr]
               15, "executors to leave the vanished supervisor")
    assert len(env.state.assignment(tid).workers()) == 2  # type: ignore[union-attr]


def test_topology_waits_for_free_slots(env: Env) -> None:
    tid = env.submit()
    assert env.state.assignment(tid) is None
    env.add_supervisor("sup-late", [6700, 6701])
    wait_for(lambda: env.state.assignment(tid), 10, "the topology to be scheduled")


def test_restarted_nimbus_resumes_and_can_kill(env: Env) -> None:
    env.add_supervisor("sup-a", [6700, 6701])
    tid = env.submit()
    before = env.state.assignment(tid)
    env.client.rebalance("wc", 30, 1)
    env.restart()
    assert env.client.topology_info("wc")["status"] == "rebalancing"
    assert env.state.assignment(tid) == before  # the restart moved nothing
    env.client.kill("wc", 0)
    env.assert_killed(tid)


# -- the CLI against this Nimbus -----------------------------------------------------------------------
def cli_run(*args: str) -> Any:
    from click.testing import CliRunner

    from stormpy.cli.main import cli

    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_cli_jar_prebuilt_bundle_list_info_kill(env: Env) -> None:
    env.add_supervisor("sup-a", [6700, 6701])
    addr = f"127.0.0.1:{env.nimbus.port}"
    result = cli_run("jar", str(env.bundle.path), "wordcount:topology", "--name", "pre", "--inactive",
                     "-c", "topology.workers=2", "--nimbus", addr)
    assert result.exit_code == 0, result.output
    assert "submitted topology pre as pre-" in result.output
    tid = result.output.split(" as ")[1].split()[0]
    assert env.state.storm_base(tid).status == "inactive"  # type: ignore[union-attr]
    assert env.client.topology_files(tid)["conf"]["topology.workers"] == 2
    listed = cli_run("list", "--nimbus", addr)
    assert listed.exit_code == 0 and tid in listed.output and "inactive" in listed.output
    info = cli_run("info", "pre", "--nimbus", addr)
    assert info.exit_code == 0 and "sentences" in info.output and "split" in info.output
    bad = cli_run("rebalance", "pre", "-e", "count", "--nimbus", addr)
    assert bad.exit_code == 2 and "component=N" in bad.output
    missing = cli_run("rebalance", "pre", "-e", "nope=2", "--nimbus", addr)
    assert missing.exit_code == 1 and "NotFoundError" in missing.output and "nope" in missing.output
    assert cli_run("activate", "pre", "--nimbus", addr).exit_code == 0
    assert env.state.storm_base(tid).status == "active"  # type: ignore[union-attr]
    assert cli_run("kill", "pre", "-w", "0", "--nimbus", addr).exit_code == 0
    env.assert_killed(tid)
    gone = cli_run("kill", "pre", "--nimbus", addr)
    assert gone.exit_code == 1 and "no topology named 'pre'" in gone.output


def test_cli_jar_of_a_project_leaves_out_the_cluster_files_and_ignored_ones(
        env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`stormpy jar .` in a project whose storm.local.dir (the default ./stormpy-local) and dev
    ZooKeeper live inside it: those, the default skips and what .stormpyignore names stay out,
    and the command says what it bundled."""
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    shutil.copy(EXAMPLES / "wordcount.py", project / "wordcount.py")
    (project / "data" / "access.log").write_text("GET /a 200\n" * 2000)
    (project / "data" / "big.csv").write_text("x" * 10_000)
    (project / "data" / "keep.csv").write_text("k\n")
    (project / "notes").mkdir()
    (project / "notes" / "todo.txt").write_text("later\n")
    for own in ("stormpy-local/dev-zookeeper/version-2/log.1", "stormpy-local/logs/nimbus.log",
                "stormpy-local/nimbus/stormdist/x/code/a.py", "__pycache__/wordcount.cpython-311.pyc",
                ".git/HEAD"):
        (project / own).parent.mkdir(parents=True, exist_ok=True)
        (project / own).write_text("cluster's own")
    (project / ".stormpyignore").write_text("# data we do not ship\ndata/*.csv\n!data/keep.csv\nnotes/\n")
    monkeypatch.chdir(project)
    addr = f"127.0.0.1:{env.nimbus.port}"
    result = cli_run("jar", ".", "wordcount:topology", "--name", "proj", "--inactive", "--nimbus", addr)
    assert result.exit_code == 0, result.output
    assert "left out stormpy-local/ (storm.local.dir)" in result.output
    assert "bundled 4 files" in result.output  # wordcount.py, access.log, keep.csv, .stormpyignore
    assert "largest: data/access.log 21.5 KiB" in result.output
    tid = result.output.split(" as ")[1].split()[0]
    base = env.state.storm_base(tid)
    assert base is not None
    files = env.client.topology_files(tid)
    got = env.client.download_bundle(files["bundle_key"], tmp_path / "got.zip")
    with zipfile.ZipFile(got) as zf:
        names = sorted(zf.namelist())
    assert names == [".stormpyignore", "MANIFEST.json", "data/access.log", "data/keep.csv", "wordcount.py"]
    env.client.kill("proj", 0)


def test_cli_jar_names_an_unreadable_ignore_file(env: Env, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(EXAMPLES / "wordcount.py", project / "wordcount.py")
    (project / ".stormpyignore").write_bytes(b"\xff\xfe bad")
    result = cli_run("jar", str(project), "wordcount:topology", "--nimbus", f"127.0.0.1:{env.nimbus.port}")
    assert result.exit_code == 2
    assert ".stormpyignore" in result.output and "Traceback" not in result.output


def test_cli_reports_an_unreachable_nimbus(env: Env) -> None:
    port = env.nimbus.port
    env.nimbus.stop()
    result = outcome_of(lambda: cli_run("list", "--nimbus", f"127.0.0.1:{port}"))
    assert result.exit_code == 3
    assert "cannot reach Nimbus" in result.output and f"127.0.0.1:{port}" in result.output


def test_cluster_info_lists_every_nimbus_with_its_status_and_uptime(env: Env) -> None:
    from stormpy.ui._stormdocs import nimbus_summary

    standby = Nimbus({**env.conf, "storm.local.dir": str(env.tmp / "local2")}).start()
    try:
        def both() -> list[dict[str, Any]] | None:
            listed = env.client.cluster_info()["nimbuses"]
            return listed if len(listed) == 2 else None
        listed = wait_for(both, 30, "both Nimbus hosts in get_cluster_info")
        assert [(n["port"], n["status"]) for n in listed] == [(env.nimbus.port, "Leader"),
                                                              (standby.port, "Not a Leader")]
        assert all(n["uptime_secs"] >= 0 and n["version"] for n in listed)
        # the standby answers the same list
        with NimbusClient("127.0.0.1", standby.port, timeout_secs=10) as other:
            assert [n["status"] for n in other.cluster_info()["nimbuses"]] == ["Leader", "Not a Leader"]
        rest = nimbus_summary(env.client.cluster_info())["nimbuses"]
        assert [(n["port"], n["status"]) for n in rest] == [(env.nimbus.port, "Leader"),
                                                            (standby.port, "Not a Leader")]
        assert all(isinstance(n["nimbusUpTimeSeconds"], int) and n["nimbusUpTime"] for n in rest)
    finally:
        standby.stop()
    wait_for(lambda: len(env.client.cluster_info()["nimbuses"]) == 1, 30, "the stopped standby to leave")
