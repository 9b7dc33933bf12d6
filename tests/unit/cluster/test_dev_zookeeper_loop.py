"""`stormpy dev-zookeeper`'s loop (:func:`stormpy.cluster.devzk.run_dev_zookeeper`) with a
stand-in server: the port and data dir it defaults to, what it echoes, its stop on a stop event,
SIGTERM or Ctrl-C, and a server that dies on its own; and one run over a stand-in ``java`` found
through ``JAVA_HOME`` and ``ZOOKEEPER_HOME``, its data dir kept."""

from __future__ import annotations

import signal
import stat
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import stormpy.cluster.devzk as devzk
from stormpy.cluster.devzk import default_dev_data_dir, run_dev_zookeeper
from stormpy.cluster.zkserver import ZooKeeperServer
from stormpy.config import DEFAULTS


class StandInServer:
    """What run_dev_zookeeper uses of ZooKeeperServer; records how it was made and stopped."""

    made: list[StandInServer] = []

    def __init__(self, port: int, **kwargs: Any) -> None:
        self.args = (port, kwargs)
        self.started = 0
        self.stopped = 0
        self.dies_with: int | None = None  # exit status once it "dies" on its own
        StandInServer.made.append(self)

    def start(self) -> StandInServer:
        self.started += 1
        return self

    def stop(self) -> None:
        self.stopped += 1

    @property
    def running(self) -> bool:
        return self.dies_with is None

    @property
    def returncode(self) -> int | None:
        return self.dies_with

    def log_tail(self) -> str:
        return "last line of the log"

    connect_string = "127.0.0.1:2181"
    data_dir = Path("/data")
    log_path = Path("/data/zookeeper.log")


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> type[StandInServer]:
    StandInServer.made = []
    monkeypatch.setattr(devzk, "ZooKeeperServer", StandInServer)
    return StandInServer


def test_defaults_port_and_data_dir_and_stops_on_the_stop_event(stand_in: type[StandInServer]) -> None:
    said: list[str] = []
    stop = threading.Event()
    ready: list[Any] = []

    def on_ready(server: Any) -> None:
        ready.append(server)
        stop.set()

    assert run_dev_zookeeper(echo=said.append, stop_event=stop, on_ready=on_ready) == 0
    [server] = stand_in.made
    default_dir = Path(DEFAULTS["storm.local.dir"]) / "dev-zookeeper"
    assert server.args == (2181, {"host": "127.0.0.1", "data_dir": default_dir, "heap_mb": 256,
                                  "die_with_parent": True})
    assert ready == [server] and server.started == 1 and server.stopped == 1
    assert said == ["ZooKeeper serving on 127.0.0.1:2181 (data /data, log /data/zookeeper.log); "
                    "Ctrl-C to stop", "stopping ZooKeeper"]


def test_given_port_data_dir_host_and_heap(stand_in: type[StandInServer], tmp_path: Path) -> None:
    stop = threading.Event()
    stop.set()
    assert run_dev_zookeeper(2999, tmp_path, host="0.0.0.0", heap_mb=64, echo=lambda _: None,
                             stop_event=stop) == 0  # no on_ready: nothing to call
    [server] = stand_in.made
    assert server.args == (2999, {"host": "0.0.0.0", "data_dir": tmp_path, "heap_mb": 64,
                                  "die_with_parent": True})
    assert server.stopped == 1


def test_a_server_that_dies_ends_the_loop_with_its_status_and_log_tail(stand_in: type[StandInServer]) -> None:
    said: list[str] = []
    assert run_dev_zookeeper(echo=said.append, stop_event=threading.Event(),
                             on_ready=lambda server: setattr(server, "dies_with", 5)) == 5
    assert said[-1] == "ZooKeeper exited with status 5; last log lines:\nlast line of the log"
    assert stand_in.made[0].stopped == 1


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_ctrl_c_stop_it(stand_in: type[StandInServer], sig: signal.Signals) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.fail("signal handlers are installed from the main thread only")
    said: list[str] = []
    before = signal.getsignal(sig)
    assert run_dev_zookeeper(echo=said.append, on_ready=lambda _: signal.raise_signal(sig)) == 0
    assert said[-1] == "stopping ZooKeeper" and stand_in.made[0].stopped == 1
    assert signal.getsignal(sig) is before


def test_the_default_data_dir() -> None:
    assert default_dev_data_dir({"storm.local.dir": "/var/storm"}) == Path("/var/storm/dev-zookeeper")
    assert default_dev_data_dir({}) == Path(DEFAULTS["storm.local.dir"]) / "dev-zookeeper"


STAND_IN_JAVA = r'''
import os, signal, socket, sys
cfg = dict(line.split("=", 1) for line in open(sys.argv[-1]).read().splitlines())
srv = socket.create_server((cfg["clientPortAddress"], int(cfg["clientPort"])))
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
answers = {b"conf": f"dataDir={cfg['dataDir']}/version-2\n", b"srvr": "Mode: standalone\n", b"ruok": "imok"}
while True:
    conn, _ = srv.accept()
    with conn:
        conn.sendall(answers.get(conn.recv(4), "").encode())
'''


def test_a_run_over_a_found_java_keeps_its_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!{sys.executable}\n{STAND_IN_JAVA}")
    java.chmod(java.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    (tmp_path / "zk" / "lib").mkdir(parents=True)
    (tmp_path / "zk" / "lib" / "zookeeper-3.8.4.jar").write_bytes(b"")
    monkeypatch.setenv("ZOOKEEPER_HOME", str(tmp_path / "zk"))
    stop = threading.Event()
    seen: list[ZooKeeperServer] = []

    def on_ready(server: ZooKeeperServer) -> None:
        seen.append(server)
        assert server.ruok()
        stop.set()

    said: list[str] = []
    assert run_dev_zookeeper(0, tmp_path / "data", echo=said.append, stop_event=stop, on_ready=on_ready) == 0
    [server] = seen
    data = (tmp_path / "data").resolve()
    assert said == [f"ZooKeeper serving on {server.connect_string} (data {data}, log {data}/zookeeper.log); "
                    "Ctrl-C to stop", "stopping ZooKeeper"]
    assert not server.running and server.pid is None
    assert (data / "zoo.cfg").is_file()
