"""The worker process's start and stop, judged in-process: SIGTERM stops the worker and keeps the
first reason; no assignment or no executors here is a clean exit; a topology file that is missing
or damaged is a startup error naming the file, and a daemon configuration that cannot be read
exits with the documented startup code before anything starts."""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import signal
import sys
import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest

from stormpy import Spout, Stream, TopologyBuilder
from stormpy.cluster.errors import ClusterStateError
from stormpy.cluster.paths import ZkPaths
from stormpy.cluster.records import Assignment, StormBase, WorkerHeartbeat
from stormpy.config import merged
from stormpy.messaging.curve import CurveKeyPair
from stormpy.messaging.zmq_transport import ZmqTransport
from stormpy.state._zookeeper import ZkBackend
from stormpy.testing import wait_for
from stormpy.topology._layout import compute_layout
from stormpy.topology._metrics_consumer import ConsumerContext, IMetricsConsumer, TaskInfo
from stormpy.worker import WorkerError, heartbeat_channel
from stormpy.worker import process as process_module
from stormpy.worker.event_logger import EventLogger
from stormpy.worker.peers import WorkerPeers
from stormpy.worker.process import (
    EXIT_COMPONENT_FAILED,
    EXIT_OK,
    EXIT_STARTUP_FAILED,
    StartupError,
    WorkerProcess,
    main,
    parse_args,
    read_topology_file,
    setup_logging,
)


def test_a_missing_topology_file_is_a_startup_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "topology.msgpack"
    with pytest.raises(StartupError) as caught:
        read_topology_file(path)
    assert str(caught.value) == f"{path} does not exist (was the topology downloaded?)"


def test_a_damaged_topology_file_is_a_startup_error_naming_it_and_the_defect(tmp_path: Path) -> None:
    path = tmp_path / "topology.msgpack"
    path.write_bytes(msgpack.packb({"conf": {}}))
    with pytest.raises(StartupError) as caught:
        read_topology_file(path)
    assert str(caught.value) == f"cannot read {path}: KeyError: 'spec'"


def test_an_unreadable_daemon_configuration_exits_with_the_startup_code(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "storm.yaml"
    code = main(["--topology-id", "t-1", "--supervisor-id", "s", "--port", "6700",
                 "--local-dir", str(tmp_path), "--conf-file", str(missing)])
    assert code == EXIT_STARTUP_FAILED == 2
    err = capsys.readouterr().err
    assert err.startswith("stormpy worker: cannot read configuration: ") and str(missing) in err


def process_of(tmp_path: Path, state: Any = None) -> WorkerProcess:
    args = parse_args(["--topology-id", "t-1", "--supervisor-id", "me", "--port", "6700",
                       "--local-dir", str(tmp_path)])
    process = WorkerProcess(args, {"storm.log.dir": str(tmp_path / "logs")})
    process.state = state
    return process


class ShellState:
    """The ClusterState calls the process shell makes before its worker runs."""

    def __init__(self, assignment: Assignment | None = None, fail: bool = False) -> None:
        self._assignment = assignment
        self.fail = fail
        self.shutdowns = 0
        self.closed = False

    def assignment(self, topology_id: str, callback: Any = None) -> Assignment | None:
        assert topology_id == "t-1"
        if self.fail:
            raise ClusterStateError("ZooKeeper did not answer")
        return self._assignment

    def storm_base(self, topology_id: str, callback: Any = None) -> StormBase | None:
        return None

    def begin_shutdown(self) -> None:
        self.shutdowns += 1

    def close(self) -> None:
        self.closed = True


class StoppableWorker:
    def __init__(self) -> None:
        self.stops = 0

    def stop(self) -> None:
        self.stops += 1


def test_sigterm_stops_the_worker_and_keeps_the_first_reason(tmp_path: Path) -> None:
    state = ShellState()
    process = process_of(tmp_path, state)
    worker = StoppableWorker()
    process.worker = worker  # type: ignore[assignment]
    assert (process.topology_id, process.node, process.port) == ("t-1", "me", 6700)
    assert process.exit_reason is None
    process._on_signal(signal.SIGTERM, None)
    process.request_stop("its topology's assignment was removed")
    assert process.exit_reason == "received SIGTERM"
    assert (state.shutdowns, worker.stops) == (2, 2)  # ZooKeeper calls stop waiting at once


def test_a_stop_before_the_worker_exists_is_kept_for_the_start(tmp_path: Path) -> None:
    process = process_of(tmp_path)
    process._on_signal(signal.SIGINT, None)
    assert process.exit_reason == "received SIGINT"


def test_no_assignment_or_no_executors_here_is_a_clean_exit(tmp_path: Path) -> None:
    spec: Any = None  # read only once executors are found
    assert process_of(tmp_path)._run_connected(ShellState(None), spec, {}) == EXIT_OK == 0  # type: ignore[arg-type]
    elsewhere = Assignment(topology_id="t-1", bundle_key="b", executors={(1, 1): ("other", 6700)},
                           node_host={"other": "h"})
    assert process_of(tmp_path)._run_connected(ShellState(elsewhere), spec, {}) == EXIT_OK  # type: ignore[arg-type]


def test_an_unreachable_zookeeper_at_start_is_a_startup_error_unless_stopping(tmp_path: Path) -> None:
    spec: Any = None  # read only once executors are found
    with pytest.raises(StartupError) as caught:
        process_of(tmp_path)._run_connected(ShellState(fail=True), spec, {})  # type: ignore[arg-type]
    assert str(caught.value) == "cannot read the state of t-1: ZooKeeper did not answer"
    stopping = process_of(tmp_path)
    stopping.request_stop("received SIGTERM")
    assert stopping._run_connected(ShellState(fail=True), spec, {}) == EXIT_OK  # type: ignore[arg-type]


def test_the_command_line_is_documented_and_every_argument_required(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        parse_args(["--help"])
    assert caught.value.code == 0
    out = " ".join(capsys.readouterr().out.split())  # as wrapped to any terminal's width
    assert out.startswith("usage: python -m stormpy.worker.process [-h] --topology-id TOPOLOGY_ID "
                          "--supervisor-id SUPERVISOR_ID --port PORT")
    assert "--local-dir LOCAL_DIR [--conf-file CONF_FILE] Run one stormpy cluster worker. " in out
    assert out.endswith(" --local-dir LOCAL_DIR storm.local.dir of the supervisor"
                        " --conf-file CONF_FILE daemon configuration (YAML)")
    full = ["--topology-id", "t", "--supervisor-id", "s", "--port", "1", "--local-dir", "/x"]
    for i in range(0, len(full), 2):
        with pytest.raises(SystemExit) as caught:
            parse_args(full[:i] + full[i + 2:])
        assert caught.value.code == 2
        assert f"the following arguments are required: {full[i]}" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_args([*full[:5], "port", *full[6:]])
    assert "argument --port: invalid int value: 'port'" in capsys.readouterr().err


def test_the_process_knows_its_topology_slot_and_directories(tmp_path: Path) -> None:
    args = parse_args(["--topology-id", "t-1", "--supervisor-id", "me", "--port", "6700",
                       "--local-dir", str(tmp_path), "--conf-file", str(tmp_path / "c.yaml")])
    assert args.conf_file == str(tmp_path / "c.yaml")
    process = WorkerProcess(args, {"storm.log.dir": str(tmp_path / "var-log"), "k": 1})
    assert (process.topology_id, process.node, process.port) == ("t-1", "me", 6700)
    assert process.daemon_conf == {"storm.log.dir": str(tmp_path / "var-log"), "k": 1}
    assert (process.worker, process.state, process.exit_reason) == (None, None, None)
    assert process.dirs.logs == (tmp_path / "var-log").resolve()  # storm.log.dir, when set
    assert process.dirs.topology_file("t-1") == \
        tmp_path.resolve() / "supervisor" / "me" / "stormdist" / "t-1" / "topology.msgpack"
    default_logs = WorkerProcess(args, {})
    assert default_logs.dirs.logs == tmp_path.resolve() / "logs"


def test_a_topology_file_is_read_with_its_conf(tmp_path: Path) -> None:
    from stormpy import TopologyBuilder
    from stormpy.testing import FeederSpout

    builder = TopologyBuilder()
    builder.set_spout("feeder", FeederSpout(["v"]))
    spec = builder.create_topology()
    path = tmp_path / "topology.msgpack"
    # a conf value may be a map with integer keys (msgpack keeps them)
    conf_in = {"topology.workers": 3, "my.weights": {1: "a", 2: "b"}}
    path.write_bytes(msgpack.packb({"spec": spec.to_doc(), "conf": conf_in}))
    read_spec, conf = read_topology_file(path)
    assert read_spec.to_doc() == spec.to_doc() and conf == conf_in
    path.write_bytes(msgpack.packb({"spec": spec.to_doc(), "conf": None}))
    assert read_topology_file(path)[1] == {}
    path.write_bytes(msgpack.packb({"spec": spec.to_doc()}))
    assert read_topology_file(path)[1] == {}


@pytest.fixture
def taken_over(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """What a worker's main takes over in its process, given back after the test: the root
    logger's handlers and level, file descriptors 1 and 2, the SIGTERM and SIGINT handlers,
    ``sys.path`` and tracemalloc. ``logging.shutdown`` (main's last call) is recorded instead of
    closing every handler of the test run."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    kazoo_level = logging.getLogger("kazoo").level
    saved_fds = [os.dup(1), os.dup(2)]
    handlers_of = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    path = list(sys.path)
    tracing = tracemalloc.is_tracing()
    shutdowns: list[bool] = []
    monkeypatch.setattr(logging, "shutdown", lambda: shutdowns.append(True))
    try:
        yield shutdowns
    finally:
        for fd, saved in zip((1, 2), saved_fds, strict=True):
            os.dup2(saved, fd)
            os.close(saved)
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
                handler.close()
        for handler in handlers:
            if handler not in root.handlers:
                root.addHandler(handler)
        root.setLevel(level)
        logging.getLogger("kazoo").setLevel(kazoo_level)
        for signum, previous in handlers_of.items():
            signal.signal(signum, previous)
        sys.path[:] = path
        if tracemalloc.is_tracing() and not tracing:
            tracemalloc.stop()


def test_the_worker_log_names_the_worker_in_every_line_and_takes_stdout(
        tmp_path: Path, taken_over: list[bool]) -> None:
    log_file = tmp_path / "logs" / "worker-t-1-6700.log"
    setup_logging(log_file, "t-1", 6700, merged({"worker.log.max.size.mb": 0.01,
                                                 "worker.log.backups": 2}))
    assert not tracemalloc.is_tracing()
    (handler,) = logging.getLogger().handlers  # the worker's file only
    assert handler.level == logging.NOTSET
    # rotated at worker.log.max.size.mb MiB, worker.log.backups files kept
    assert (handler.maxBytes, handler.backupCount) == (int(0.01 * 1024 * 1024), 2)  # type: ignore[attr-defined]
    logger = logging.getLogger("stormpy.test_worker_shell")
    logger.info("hello")
    logger.setLevel(logging.DEBUG)  # a level set at run time shows its records
    try:
        logger.debug("deeper")
    finally:
        logger.setLevel(logging.NOTSET)
    os.write(1, b"written to stdout\n")
    os.write(2, b"written to stderr\n")
    text = log_file.read_text()
    assert re.search(rf"^\d{{4}}-\d\d-\d\d [\d:,]+ INFO \[worker t-1:6700 pid {os.getpid()}\] "
                     r"MainThread stormpy.test_worker_shell: hello$", text, re.M), text
    assert "stormpy.test_worker_shell: deeper" in text
    assert "written to stdout\nwritten to stderr\n" in text
    for i in range(100):  # ~10 KB: rotated at 10.24 KB, two backups kept
        logger.warning("line %03d %s", i, "x" * 200)
    names = sorted(p.name for p in log_file.parent.iterdir())
    assert names == ["worker-t-1-6700.log", "worker-t-1-6700.log.1", "worker-t-1-6700.log.2"]


def test_the_worker_log_starts_tracemalloc_when_asked(tmp_path: Path, taken_over: list[bool]) -> None:
    if tracemalloc.is_tracing():
        tracemalloc.stop()
    setup_logging(tmp_path / "w.log", "t-1", 6700, merged({"worker.profiler.tracemalloc.frames": 1}))
    assert tracemalloc.is_tracing() and tracemalloc.get_traceback_limit() == 1


def write_conf(tmp_path: Path) -> Path:
    conf = tmp_path / "storm.yaml"
    conf.write_text(f"storm.log.dir: {tmp_path / 'var-log'}\nworker.profiler.tracemalloc.frames: 3\n")
    return conf


def main_args(tmp_path: Path) -> list[str]:
    return ["--topology-id", "t-1", "--supervisor-id", "me", "--port", "6700",
            "--local-dir", str(tmp_path), "--conf-file", str(write_conf(tmp_path))]


@pytest.mark.parametrize("conf_from", ["--conf-file", "STORMPY_CONF"])
def test_main_logs_why_a_worker_cannot_start_and_exits_2(tmp_path: Path, taken_over: list[bool],
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         conf_from: str) -> None:
    if tracemalloc.is_tracing():
        tracemalloc.stop()
    args = main_args(tmp_path)
    if conf_from == "STORMPY_CONF":  # without --conf-file: the daemons' usual configuration
        monkeypatch.setenv("STORMPY_CONF", args.pop())
        args.pop()
    code = main(args)
    assert code == EXIT_STARTUP_FAILED
    assert taken_over == [True]  # the log flushed before the exit
    topology = tmp_path.resolve() / "supervisor" / "me" / "stormdist" / "t-1" / "topology.msgpack"
    text = (tmp_path / "var-log" / "worker-t-1-6700.log").read_text()
    assert f"[worker t-1:6700 pid {os.getpid()}] MainThread stormpy.worker.process: worker cannot " \
        f"start: {topology} does not exist (was the topology downloaded?)" in text
    # the daemon conf's settings reach the log setup
    assert tracemalloc.is_tracing() and tracemalloc.get_traceback_limit() == 3
    # SIGTERM and SIGINT now stop the worker
    for signum in (signal.SIGTERM, signal.SIGINT):
        handler = signal.getsignal(signum)
        assert getattr(handler, "__func__", None) is WorkerProcess._on_signal


def test_main_logs_an_unexpected_failure_and_exits_1(tmp_path: Path, taken_over: list[bool],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: WorkerProcess) -> int:
        raise RuntimeError("broke")
    monkeypatch.setattr(WorkerProcess, "run", broken)
    assert main(main_args(tmp_path)) == EXIT_COMPONENT_FAILED == 1
    text = (tmp_path / "var-log" / "worker-t-1-6700.log").read_text()
    assert "worker failed unexpectedly" in text and "RuntimeError: broke" in text


def staged_topology(tmp_path: Path, process: WorkerProcess) -> Path:
    from stormpy import TopologyBuilder
    from stormpy.testing import FeederSpout

    builder = TopologyBuilder()
    builder.set_spout("feeder", FeederSpout(["v"]))
    path = process.dirs.topology_file("t-1")
    path.parent.mkdir(parents=True)
    path.write_bytes(msgpack.packb({"spec": builder.create_topology().to_doc(),
                                    "conf": {"topology.workers": 2, "storm.zookeeper.port": 1}}))
    return path


def test_run_connects_with_the_workers_conf_and_closes_the_state(
        tmp_path: Path, taken_over: list[bool], monkeypatch: pytest.MonkeyPatch) -> None:
    process = process_of(tmp_path)
    process.daemon_conf = {"storm.zookeeper.port": 2181}
    staged_topology(tmp_path, process)
    seen: list[dict[str, Any]] = []
    state = ShellState(None)

    def connect(conf: dict[str, Any]) -> ShellState:
        seen.append(conf)
        return state
    monkeypatch.setattr(process_module.ClusterState, "from_config", connect)
    assert process.run() == EXIT_OK  # no assignment: nothing to run
    (conf,) = seen
    code_dir = process.dirs.code_dir("t-1")
    assert conf["worker.code.dir"] == str(code_dir) and sys.path[0] == str(code_dir)
    assert conf["topology.workers"] == 2 and conf["storm.zookeeper.port"] == 2181  # the daemon's
    assert process.dirs.worker_dir("t-1", 6700).is_dir()
    assert process.state is state and state.closed and state.shutdowns == 0
    again = process_of(tmp_path)  # a restarted worker: its directory exists already
    assert again.run() == EXIT_OK


def test_run_hands_the_topology_and_conf_read_to_the_connected_run(
        tmp_path: Path, taken_over: list[bool], monkeypatch: pytest.MonkeyPatch) -> None:
    process = process_of(tmp_path)
    path = staged_topology(tmp_path, process)
    handed: list[tuple[Any, Any, dict[str, Any]]] = []

    def connected(self: WorkerProcess, state: Any, spec: Any, conf: dict[str, Any]) -> int:
        handed.append((state, spec, conf))
        return 7
    state = ShellState(None)
    monkeypatch.setattr(process_module.ClusterState, "from_config", lambda conf: state)
    monkeypatch.setattr(WorkerProcess, "_run_connected", connected)
    assert process.run() == 7
    ((got_state, spec, conf),) = handed
    assert got_state is state and state.closed
    assert spec.to_doc() == read_topology_file(path)[0].to_doc()
    assert conf["topology.workers"] == 2 and conf["worker.code.dir"] == str(process.dirs.code_dir("t-1"))


def test_a_stop_asked_before_zookeeper_answered_puts_the_state_in_shutdown(
        tmp_path: Path, taken_over: list[bool], monkeypatch: pytest.MonkeyPatch) -> None:
    process = process_of(tmp_path)
    staged_topology(tmp_path, process)
    state = ShellState(fail=True)
    monkeypatch.setattr(process_module.ClusterState, "from_config", lambda conf: state)
    process.request_stop("received SIGTERM")
    assert process.run() == EXIT_OK
    assert state.shutdowns == 1 and state.closed


def test_an_unreachable_zookeeper_is_a_startup_error(tmp_path: Path, taken_over: list[bool],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    process = process_of(tmp_path)
    staged_topology(tmp_path, process)

    def refuse(conf: dict[str, Any]) -> None:
        raise OSError("connection refused")
    monkeypatch.setattr(process_module.ClusterState, "from_config", refuse)
    with pytest.raises(StartupError) as caught:
        process.run()
    assert str(caught.value) == "cannot connect to ZooKeeper: connection refused"


class ConnectedState(ShellState):
    """An assignment that gives this worker (port 0: any free port) executor [1, 1] and another
    worker [2, 2], a StormBase with the given status and executors per component, and the
    reporter's writes."""

    def __init__(self, status: str | None) -> None:
        super().__init__(Assignment(topology_id="t-1", bundle_key="b",
                                    executors={(1, 1): ("me", 0), (2, 2): ("other", 6701)},
                                    node_host={"me": "hm", "other": "ho"}))
        self.status = status

    def storm_base(self, topology_id: str, callback: Any = None) -> StormBase | None:
        assert topology_id == "t-1"
        if self.status is None:
            return None
        return StormBase(topology_id=topology_id, name="t", status=self.status, num_workers=2,
                         launch_time=0.0, owner="o", component_executors={"feeder": 2})

    def report_error(self, topology_id: str, error: Any) -> None:
        pass


def feeder_topology() -> tuple[Any, Any]:
    from stormpy import TopologyBuilder
    from stormpy.testing import FeederSpout

    feeder = FeederSpout(["v"])
    builder = TopologyBuilder()
    builder.set_spout("feeder", feeder).set_num_tasks(2)
    return builder.create_topology(), feeder


def feeder_spec() -> Any:
    return feeder_topology()[0]


def connected_process(tmp_path: Path, port: int = 0) -> WorkerProcess:
    args = parse_args(["--topology-id", "t-1", "--supervisor-id", "me", "--port", str(port),
                       "--local-dir", str(tmp_path)])
    return WorkerProcess(args, {})


@pytest.mark.parametrize(("status", "bind", "active"), [("active", "127.0.0.1", True),
                                                        ("inactive", None, False),
                                                        (None, None, False)])
def test_a_connected_run_binds_the_port_and_hands_the_worker_its_part(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: str | None, bind: str | None,
        active: bool) -> None:
    handed: list[dict[str, Any]] = []

    def run_worker(self: WorkerProcess, state: Any, spec: Any, conf: Any, layout: Any,
                   executors: Any, peers: Any, active: bool, transport: Any, reporter: Any) -> int:
        handed.append({"state": state, "spec": spec, "conf": conf, "layout": layout,
                       "executors": executors, "peers": peers, "active": active,
                       "bound": (transport.host, transport.port),
                       "links": (transport.hwm, transport.curve),
                       "reporter": (reporter.state, reporter.topology_id, reporter.hostname,
                                    reporter.port)})
        reporter.report("feeder", 1, "reported while running")
        return 5
    monkeypatch.setattr(WorkerProcess, "_run_worker", run_worker)
    host = "node-7.example" if bind else "127.0.0.1"
    keys = CurveKeyPair.generate()
    conf = merged({"topology.acker.executors": 0, "supervisor.host": host, "worker.bind.host": bind,
                   "topology.transfer.buffer.size": 77,
                   "topology.messaging.curve.secret.key": keys.secret.decode() if active else None})
    state = ConnectedState(status)
    written: list[Any] = []
    state.report_error = lambda topology_id, error: written.append(error)  # type: ignore[method-assign]
    spec = feeder_spec()
    process = connected_process(tmp_path)
    assert process._run_connected(state, spec, conf) == 5  # type: ignore[arg-type]
    (got,) = handed
    assert got["state"] is state and got["spec"] is spec and got["conf"] is conf
    assert got["executors"] == ((1, 1),)
    assert got["peers"] == WorkerPeers({2: "other:6701"}, {"other:6701": "ho:6701"})
    assert got["active"] is active
    # the executors per component come from the StormBase (rebalanced), else from the spec
    expected = compute_layout(spec, conf, {"feeder": 2} if status else None)
    assert got["layout"] == expected
    assert (expected == compute_layout(spec, conf, None)) is (status is None)
    bound_host, bound_port = got["bound"]
    assert bound_host == "127.0.0.1" and bound_port > 0  # worker.bind.host, else supervisor.host
    assert got["reporter"] == (state, "t-1", host, 0)  # errors carry the supervisor's host
    # the topology's transfer buffer and, when it has one, its CURVE key pair
    assert got["links"] == (77, keys if active else None)
    assert [e.message for e in written] == ["reported while running"]  # written by close
    # the transport was closed: its port can be bound again
    again = ZmqTransport("127.0.0.1", bound_port, conf)
    again.close()
    assert "stormpy-error-reporter" not in {t.name for t in threading.enumerate()}


def test_a_port_in_use_is_a_startup_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conf = merged({"topology.acker.executors": 0, "supervisor.host": "127.0.0.1"})
    taken = ZmqTransport("127.0.0.1", 0, conf)
    try:
        state = ConnectedState("active")
        state._assignment = Assignment(topology_id="t-1", bundle_key="b",
                                       executors={(1, 1): ("me", taken.port)}, node_host={"me": "hm"})
        process = connected_process(tmp_path, taken.port)
        with pytest.raises(StartupError) as caught:
            process._run_connected(state, feeder_spec(), conf)  # type: ignore[arg-type]
        assert str(caught.value).startswith(
            f"cannot bind the worker transport on 127.0.0.1:{taken.port}: Address already in use")
    finally:
        taken.close()
    assert "stormpy-error-reporter" not in {t.name for t in threading.enumerate()}


class Watch:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class QuietStorage:
    """ZooKeeper as the worker's control channel and state backend see it: nothing stored, no
    request waiting; the watches set are recorded."""

    hosts = "zk:2181"
    root = "/stormpy"
    operation_timeout_secs = 5.0

    def __init__(self) -> None:
        self.watches: list[tuple[str, Watch]] = []

    def get(self, path: str) -> None:
        return None

    def children(self, path: str) -> list[str]:
        return []

    def watch_data(self, path: str, callback: Any) -> Watch:
        self.watches.append((path, Watch()))
        return self.watches[-1][1]

    def watch_children(self, path: str, callback: Any) -> Watch:
        return self.watch_data(path, callback)


class LiveState(ConnectedState):
    """The connected state, its storage quiet, the feeder's emits sampled for the events log."""

    def __init__(self, status: str | None) -> None:
        super().__init__(status)
        self.storage = QuietStorage()
        self.paths = ZkPaths(self.storage.root)

    def storm_base(self, topology_id: str, callback: Any = None) -> StormBase | None:
        base = super().storm_base(topology_id, callback)
        return None if base is None else dataclasses.replace(
            base, component_debug={"feeder": {"enable": True, "samplingpct": 100.0}})


class RecordingConsumer(IMetricsConsumer):
    seen: list[TaskInfo] = []
    contexts: list[ConsumerContext] = []

    def prepare(self, conf: Any, argument: Any, context: ConsumerContext) -> None:
        RecordingConsumer.contexts.append(context)

    def handle_data_points(self, task_info: TaskInfo, data_points: dict[str, Any]) -> None:
        RecordingConsumer.seen.append(task_info)


class RecordingEventLogger(EventLogger):
    """The worker's event logger, each one built kept in ``built``."""

    built: list[EventLogger] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        RecordingEventLogger.built.append(self)


class EarlierNimbus:
    """The Nimbus named by ``nimbus.seeds`` ``["nimbus-a"]``: it holds the heartbeat an earlier
    incarnation of worker me:0 published (100 tuples emitted by task 1)."""

    def __enter__(self) -> EarlierNimbus:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def worker_heartbeats(self, topology_id: str) -> dict[tuple[str, int], WorkerHeartbeat]:
        earlier = {"component": "feeder", "task": 1, "emitted": {"default": 100}}
        return {("me", 0): WorkerHeartbeat(topology_id=topology_id, node="me", port=0, time=5.0,
                                           uptime=1.0, tasks=(earlier,))}


def nimbus_of(conf: Any) -> EarlierNimbus:
    """``NimbusClient.from_config``: only the Nimbus the worker's conf names answers."""
    if list(conf["nimbus.seeds"]) != ["nimbus-a"]:
        raise OSError(f"no Nimbus at {conf['nimbus.seeds']}")
    return EarlierNimbus()


def published_heartbeat(process: WorkerProcess) -> WorkerHeartbeat | None:
    path = process.dirs.nimbus_heartbeat_file("t-1", 0)
    if not path.exists():
        return None
    return WorkerHeartbeat.from_doc(msgpack.unpackb(path.read_bytes(), strict_map_key=False))


def test_a_worker_runs_its_part_until_stopped_and_stops_cleanly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heartbeat_channel.NimbusClient, "from_config", nimbus_of)
    monkeypatch.setattr(process_module, "EventLogger", RecordingEventLogger)
    RecordingEventLogger.built.clear()
    RecordingConsumer.seen.clear()
    RecordingConsumer.contexts.clear()
    state = LiveState("active")
    process = connected_process(tmp_path)
    process.state = state  # type: ignore[assignment]  # as run() sets it
    process.dirs.worker_dir("t-1", 0).mkdir(parents=True)
    conf = merged({"topology.acker.executors": 0, "supervisor.host": "127.0.0.1",
                   "worker.heartbeat.frequency.secs": 0.05, "task.heartbeat.frequency.secs": 0.05,
                   "topology.eventlogger.executors": 1, "nimbus.seeds": ["nimbus-a"],
                   "worker.log.max.size.mb": 0.5, "worker.log.backups": 3,
                   "topology.metrics.consumer.register": [{"class": RecordingConsumer}],
                   "topology.builtin.metrics.bucket.size.secs": 1})
    codes: list[int] = []
    spec, feeder = feeder_topology()
    runner = threading.Thread(target=lambda: codes.append(
        process._run_connected(state, spec, conf)), name="worker-main")  # type: ignore[arg-type]
    runner.start()
    try:
        wait_for(lambda: process.dirs.heartbeat_file("t-1", 0).exists()
                 and process.dirs.nimbus_heartbeat_file("t-1", 0).exists(), 10,
                 "the local and the published heartbeat")
        wait_for(lambda: RecordingConsumer.seen, 10, "the metrics consumer's first data points")
        # the counters of the earlier incarnation, read from the Nimbus the worker's conf names
        wait_for(lambda: (beat := published_heartbeat(process)) is not None
                 and beat.process.get("counters_carried") == 1.0, 10,
                 "a published heartbeat carrying the earlier counters")
        feeder.feed(["sampled"])
        events_log = process.dirs.worker_events_log("t-1", 0)
        wait_for(lambda: events_log.exists() and "sampled" in events_log.read_text(), 10,
                 "the sampled tuple in the events log")
    finally:
        process.request_stop("received SIGTERM")
        runner.join(30)
    assert codes == [EXIT_OK]
    worker = process.worker
    assert worker is not None and process.exit_reason == "received SIGTERM"
    # the worker built from the assignment: its tasks, peers, status, port and host
    config = worker.config
    assert (config.topology_id, config.conf, config.layout) == \
        ("t-1", conf, compute_layout(spec, conf, {"feeder": 2}))
    assert (config.local_tasks, config.task_peers, config.active) == ([1], {2: "other:6701"}, True)
    assert (config.worker_port, config.hostname) == (0, "127.0.0.1")
    assert isinstance(worker.transport, ZmqTransport)
    assert isinstance(worker.state, ZkBackend) and worker.state._storage is state.storage
    assert state.shutdowns == 2  # asked by the stop, then again before the last writes
    assert [p for p, _ in state.storage.watches] == [
        state.paths.logconfig("t-1"), state.paths.worker_requests("t-1", "me", 0)]
    assert all(w.cancelled for _, w in state.storage.watches)  # the control channel stopped
    assert {(i.component, i.task, i.host, i.port) for i in RecordingConsumer.seen} == \
        {("feeder", 1, "127.0.0.1", 0)}
    # the consumer was told where it runs: this topology, this worker, its task ids
    assert RecordingConsumer.contexts == [ConsumerContext("t-1", "127.0.0.1", 0, (1,))]
    # the events log rotates as the worker log does: at worker.log.max.size.mb, keeping
    # worker.log.backups files; its sampling reads the topology's own debug settings
    (events,) = RecordingEventLogger.built
    assert (events.path, events.topology_id, events.max_bytes, events.backups) == \
        (events_log, "t-1", 512 * 1024, 3)
    names = {t.name for t in threading.enumerate()}
    assert not names & {"stormpy-cluster-link", "stormpy-local-heartbeat", "stormpy-error-reporter",
                        "stormpy-event-logger"}


def live_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             state: LiveState | None = None) -> tuple[WorkerProcess, LiveState, list[Any]]:
    """A connected run's parts (over ``state``, else an active :class:`LiveState`), with the
    errors the reporter writes."""
    monkeypatch.setattr(process_module.SupervisorRelay, "worker_heartbeats", lambda self, tid: {})
    state = state or LiveState("active")
    written: list[Any] = []
    state.report_error = lambda topology_id, error: written.append(error)  # type: ignore[method-assign]
    process = connected_process(tmp_path)
    process.state = state  # type: ignore[assignment]
    process.dirs.worker_dir("t-1", 0).mkdir(parents=True)
    return process, state, written


LIVE_CONF = {"topology.acker.executors": 0, "supervisor.host": "127.0.0.1"}


def test_a_stop_before_the_worker_runs_exits_0_without_running(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    process, state, written = live_run(tmp_path, monkeypatch)
    process.request_stop("received SIGTERM")
    assert process._run_connected(state, feeder_spec(), merged(LIVE_CONF)) == EXIT_OK  # type: ignore[arg-type]
    assert process.worker is not None  # built, so a later stop reaches it
    assert not process.dirs.heartbeat_file("t-1", 0).exists() and state.storage.watches == []


def test_tasks_that_cannot_be_built_are_reported_and_exit_1(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = feeder_spec()
    spec.components["feeder"].class_path = "no_such_module_anywhere:Spout"
    process, state, written = live_run(tmp_path, monkeypatch)
    assert process._run_connected(state, spec, merged(LIVE_CONF)) == EXIT_COMPONENT_FAILED  # type: ignore[arg-type]
    (error,) = written
    assert (error.component, error.task) == ("feeder", 1) and "no_such_module_anywhere" in error.message
    assert process.worker is None


def test_a_component_failure_exits_1_after_stopping_the_side_threads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fails(self: Any) -> None:
        raise WorkerError("feeder", 1, "died on purpose")
    monkeypatch.setattr(process_module.Worker, "run", fails)
    process, state, written = live_run(tmp_path, monkeypatch)
    assert process._run_connected(state, feeder_spec(), merged(LIVE_CONF)) == EXIT_COMPONENT_FAILED  # type: ignore[arg-type]
    assert state.shutdowns == 1
    assert all(w.cancelled for _, w in state.storage.watches) and len(state.storage.watches) == 2
    names = {t.name for t in threading.enumerate()}
    assert not names & {"stormpy-cluster-link", "stormpy-local-heartbeat", "stormpy-error-reporter"}


class MovingState(LiveState):
    """The live state, its assignment and status changed by the test, which tells the worker
    through the watches the worker set (``changed``)."""

    def __init__(self, status: str | None) -> None:
        super().__init__(status)
        self.callbacks: list[Any] = []

    def assignment(self, topology_id: str, callback: Any = None) -> Assignment | None:
        if callback is not None:
            self.callbacks.append(callback)
        return super().assignment(topology_id, callback)

    def storm_base(self, topology_id: str, callback: Any = None) -> StormBase | None:
        if callback is not None:
            self.callbacks.append(callback)
        return super().storm_base(topology_id, callback)

    def changed(self) -> None:
        for callback in list(self.callbacks):
            callback()


def test_a_worker_follows_its_status_and_peers_and_stops_when_unassigned(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    applied: list[dict[str, str]] = []
    set_peers = ZmqTransport.set_peers

    def recording(self: ZmqTransport, addresses: Any) -> None:
        applied.append(dict(addresses))
        set_peers(self, addresses)
    monkeypatch.setattr(ZmqTransport, "set_peers", recording)
    monkeypatch.setattr(process_module, "EventLogger", RecordingEventLogger)
    RecordingEventLogger.built.clear()
    process, state, written = live_run(tmp_path, monkeypatch, MovingState("inactive"))
    assert isinstance(state, MovingState)
    conf = merged({**LIVE_CONF, "topology.eventlogger.executors": 0,
                   "worker.heartbeat.frequency.secs": 0.05, "task.heartbeat.frequency.secs": 0.05})
    codes: list[int] = []
    runner = threading.Thread(target=lambda: codes.append(
        process._run_connected(state, feeder_spec(), conf)), name="worker-main")  # type: ignore[arg-type]
    runner.start()
    try:
        wait_for(lambda: process.dirs.heartbeat_file("t-1", 0).exists(), 10, "the local heartbeat")
        worker = process.worker
        assert worker is not None
        # started as the StormBase says: inactive, its spouts not activated
        assert worker.config.active is False and worker.active is False
        # topology.eventlogger.executors: 0 leaves the event logger out
        assert RecordingEventLogger.built == []
        assert "stormpy-event-logger" not in {t.name for t in threading.enumerate()}
        state.status = "active"
        state.changed()
        wait_for(lambda: worker.active, 10, "the worker activated")
        # a reassignment moves the peer task 2: the transport connects to its new address
        state._assignment = Assignment(topology_id="t-1", bundle_key="b",
                                       executors={(1, 1): ("me", 0), (2, 2): ("other", 6702)},
                                       node_host={"me": "hm", "other": "ho"})
        state.changed()
        wait_for(lambda: len(applied) >= 2, 10, "the moved peer applied")
        assert applied == [{"other:6701": "ho:6701"}, {"other:6702": "ho:6702"}]
        # the assignment removed: the worker stops by itself
        state._assignment = None
        state.changed()
        runner.join(30)
        assert codes == [EXIT_OK]
        assert process.exit_reason == "its topology's assignment was removed"
    finally:
        process.request_stop("received SIGTERM")
        runner.join(30)
    assert not runner.is_alive()


class BrokenSpout(Spout):
    """A spout whose every ``next_tuple`` fails."""

    outputs = [Stream(["v"])]

    def next_tuple(self) -> None:
        raise RuntimeError("broke on purpose")


def test_a_failing_component_is_reported_to_zookeeper_and_exits_1(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    builder = TopologyBuilder()
    builder.set_spout("feeder", BrokenSpout).set_num_tasks(2)
    process, state, written = live_run(tmp_path, monkeypatch)
    code = process._run_connected(state, builder.create_topology(), merged(LIVE_CONF))  # type: ignore[arg-type]
    assert code == EXIT_COMPONENT_FAILED
    (error,) = written
    assert (error.component, error.task, error.host, error.port) == ("feeder", 1, "127.0.0.1", 0)
    assert "RuntimeError: broke on purpose" in error.message
