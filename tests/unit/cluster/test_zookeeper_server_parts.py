"""ZooKeeperServer without a JVM: a stand-in ``java`` (a small Python script) records the exact
command line it was started with and answers ZooKeeper's four-letter words as a standalone server
does (``conf`` naming its data dir, ``srvr`` its mode), so the command, the zoo.cfg written, the
ports, the start's wait, a failed start's error and the stop are checked in a fraction of a second
each; and finding ZooKeeper and Java in temporary ``ZOOKEEPER_HOME`` / Debian layouts."""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import stormpy.cluster.zkserver as zkserver
from stormpy.cluster.zkserver import (
    DEBIAN_JAVA_DIR,
    INSTALL_HINT,
    MAIN_CLASS,
    ZooKeeperNotFound,
    ZooKeeperServer,
    ZooKeeperStartError,
    find_zookeeper_classpath,
    four_letter_word,
    require_java,
)

#: the stand-in ``java``: FAKE_ZK_RECORD names the file its argv goes to; FAKE_ZK_MODE is
#: ``serve`` (answers as a standalone server of the zoo.cfg's dataDir), ``exit`` (writes a line to
#: its log and exits 3), ``otherdir`` (answers for another data dir: a sibling whose name starts
#: with ours), ``nomode`` (``srvr`` without a mode), ``inuse`` (says the port is in use, exits 1)
FAKE_JAVA = r'''
import json, os, signal, socket, sys
with open(os.environ["FAKE_ZK_RECORD"], "a") as f:
    f.write(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd()}) + "\n")
mode = os.environ.get("FAKE_ZK_MODE", "serve")
if mode == "exit":
    print("Invalid config, exiting abnormally", flush=True)
    sys.exit(3)
if mode == "inuse":
    print("java.net.BindException: Address already in use", flush=True)
    sys.exit(1)
cfg = dict(line.split("=", 1) for line in open(sys.argv[-1]).read().splitlines())
data_dir = cfg["dataDir"] + ("-sibling" if mode == "otherdir" else "")
srv = socket.create_server((cfg["clientPortAddress"], int(cfg["clientPort"])))
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
answers = {b"conf": f"clientPort={cfg['clientPort']}\ndataDir={data_dir}/version-2\n",
           b"srvr": "Zookeeper version: stand-in\n" + ("" if mode == "nomode" else "Mode: standalone\n"),
           b"ruok": "imok"}
while True:
    conn, _ = srv.accept()
    with conn:
        conn.sendall(answers.get(conn.recv(4), "").encode())
'''


@pytest.fixture
def fake_java(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An executable stand-in for ``java`` (see FAKE_JAVA); its runs are recorded in
    ``tmp_path/runs.jsonl``."""
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!{sys.executable}\n{FAKE_JAVA}")
    java.chmod(java.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("FAKE_ZK_RECORD", str(tmp_path / "runs.jsonl"))
    monkeypatch.setenv("FAKE_ZK_MODE", "serve")
    return java


def runs(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]


@pytest.fixture
def zk_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A release layout in ``ZOOKEEPER_HOME`` (empty jars: the stand-in java never reads them)."""
    home = tmp_path / "zk-home"
    (home / "lib").mkdir(parents=True)
    (home / "conf").mkdir()
    for name in ("zookeeper-3.8.4.jar", "zookeeper-jute-3.8.4.jar", "slf4j-api-1.7.30.jar"):
        (home / "lib" / name).write_bytes(b"")
    monkeypatch.setenv("ZOOKEEPER_HOME", str(home))
    return home


@pytest.fixture
def started(fake_java: Path, tmp_path: Path) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(data_dir=tmp_path / "data", java=str(fake_java),
                             classpath=["/opt/zk/a.jar", "/opt/zk/b.jar"])
    try:
        yield server.start()
    finally:
        server.stop()


# -- the command line and zoo.cfg --------------------------------------------------------------------

def test_the_default_command_line_and_zoo_cfg(started: ZooKeeperServer, fake_java: Path,
                                              tmp_path: Path) -> None:
    data = (tmp_path / "data").resolve()
    assert started.data_dir == data
    [run] = runs(tmp_path)
    assert run["cwd"] == str(data)
    assert run["argv"] == [
        "-Xmx256m", "-XX:+UseSerialGC", "-XX:-UsePerfData", "-Djava.awt.headless=true",
        "-Dzookeeper.admin.enableServer=false", "-Dzookeeper.jmx.log4j.disable=true",
        f"-Dzookeeper.log.dir={data}", "-Dorg.slf4j.simpleLogger.showDateTime=true",
        "-cp", f"/opt/zk/a.jar{os.pathsep}/opt/zk/b.jar",
        "org.apache.zookeeper.server.ZooKeeperServerMain", str(data / "zoo.cfg")]
    assert MAIN_CLASS == "org.apache.zookeeper.server.ZooKeeperServerMain"
    assert (data / "zoo.cfg").read_text() == (
        "tickTime=2000\n"
        f"dataDir={data}\n"
        f"clientPort={started.port}\n"
        "clientPortAddress=127.0.0.1\n"
        "maxClientCnxns=0\n"
        "admin.enableServer=false\n"
        "4lw.commands.whitelist=ruok,srvr,stat,mntr,conf,cons,envi\n"
        "forceSync=no\n"
        "preAllocSize=4096\n"
        "autopurge.snapRetainCount=3\n"
        "autopurge.purgeInterval=1\n")
    # the log starts with the command that was run, the java binary first
    assert started.log_path == data / "zookeeper.log"
    assert f"--- stormpy: {fake_java} -Xmx256m " in started.log_path.read_text()


def test_the_settings_given_reach_the_command_and_zoo_cfg(fake_java: Path, tmp_path: Path) -> None:
    server = ZooKeeperServer(data_dir=tmp_path / "d", heap_mb=64, tick_time_ms=500, fsync=True,
                             java=str(fake_java), classpath=["/x.jar"],
                             extra_config={"maxClientCnxns": 7, "minSessionTimeout": 1000})
    with server:
        data = (tmp_path / "d").resolve()
        [run] = runs(tmp_path)
        assert run["argv"][0] == "-Xmx64m"
        assert run["argv"][-4:] == ["-cp", "/x.jar", MAIN_CLASS, str(data / "zoo.cfg")]
        cfg = (data / "zoo.cfg").read_text().splitlines()
        assert cfg[0] == "tickTime=500"
        assert "forceSync=yes" in cfg
        # extra settings override the defaults in place and add to the end
        assert cfg[4] == "maxClientCnxns=7"
        assert cfg[-1] == "minSessionTimeout=1000"
        assert len(cfg) == 12


def test_the_defaults_of_a_server() -> None:
    server = ZooKeeperServer()
    assert (server.host, server.heap_mb, server.tick_time_ms, server.fsync) == ("127.0.0.1", 256, 2000, False)
    assert server.startup_timeout_secs == 60.0
    assert server.die_with_parent is True
    assert server.extra_config == {}
    assert server.data_dir is None
    assert ZooKeeperServer(2999, host="127.0.0.2", startup_timeout_secs=5.0,
                           die_with_parent=False).startup_timeout_secs == 5.0
    assert ZooKeeperServer(die_with_parent=False).die_with_parent is False
    assert ZooKeeperServer(2999, host="127.0.0.2").connect_string == "127.0.0.2:2999"


def test_extra_config_is_copied(fake_java: Path, tmp_path: Path) -> None:
    extra = {"a": 1}
    server = ZooKeeperServer(extra_config=extra)
    extra["b"] = 2
    assert server.extra_config == {"a": 1}


# -- ports ---------------------------------------------------------------------------------------

def test_a_free_port_is_picked_and_served(started: ZooKeeperServer) -> None:
    assert started.port > 0
    assert started.connect_string == f"127.0.0.1:{started.port}"
    assert four_letter_word("127.0.0.1", started.port, "ruok") == "imok"
    assert started.ruok() is True


def test_a_given_port_is_used(fake_java: Path, tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with ZooKeeperServer(port, data_dir=tmp_path / "d", java=str(fake_java), classpath=["/x.jar"]) as server:
        assert server.port == port
        assert f"clientPort={port}\n" in (tmp_path / "d" / "zoo.cfg").read_text()
        assert server.ruok()


# -- the start's wait and a failed start ----------------------------------------------------------------

def test_a_server_that_exits_fails_the_start_naming_the_binary_and_the_log_tail(
        fake_java: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_ZK_MODE", "exit")
    server = ZooKeeperServer(data_dir=tmp_path / "d", java=str(fake_java), classpath=["/x.jar"])
    with pytest.raises(ZooKeeperStartError) as info:
        server.start()
    message = str(info.value)
    log = (tmp_path / "d").resolve() / "zookeeper.log"
    assert message.startswith(f"ZooKeeper exited with status 3 during startup (log {log}):\n")
    assert f"--- stormpy: {fake_java} -Xmx256m" in message
    assert message.endswith("Invalid config, exiting abnormally")
    assert not server.running and server.pid is None
    assert (tmp_path / "d").is_dir()  # a given data dir is kept


def test_a_failed_start_removes_the_temporary_data_dir(fake_java: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_ZK_MODE", "exit")
    server = ZooKeeperServer(java=str(fake_java), classpath=["/x.jar"])
    with pytest.raises(ZooKeeperStartError, match="ZooKeeper exited with status 3"):
        server.start()
    assert server.data_dir is not None and server.data_dir.name.startswith("stormpy-zk-")
    assert not server.data_dir.exists()


@pytest.mark.parametrize("mode", ["otherdir", "nomode"])
def test_only_an_answer_of_this_server_as_serving_ends_the_wait(
        fake_java: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """A server answering for another data dir (another ZooKeeper on the port; a sibling dir whose
    name starts with ours) or without a mode is not this server serving: the start times out."""
    monkeypatch.setenv("FAKE_ZK_MODE", mode)
    server = ZooKeeperServer(data_dir=tmp_path / "zk", java=str(fake_java), classpath=["/x.jar"],
                             startup_timeout_secs=1.5)
    with pytest.raises(ZooKeeperStartError) as info:
        server.start()
    assert str(info.value).startswith(f"ZooKeeper on 127.0.0.1:{server.port} did not start serving within "
                                      "1.5 s (log ")
    assert not server.running


def test_serving_asks_conf_then_srvr_of_its_own_address(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, int, str, float]] = []
    answers = {"conf": f"dataDir={tmp_path}{os.sep}version-2\n", "srvr": "Mode: standalone\n"}

    def word(host: str, port: int, what: str = "ruok", timeout_secs: float = 2.0) -> str:
        asked.append((host, port, what, timeout_secs))
        return answers[what]

    monkeypatch.setattr(zkserver, "four_letter_word", word)
    server = ZooKeeperServer(2888, host="127.0.0.3")
    server.work_dir = tmp_path
    assert server.serving() is True
    assert asked == [("127.0.0.3", 2888, "conf", 1.0), ("127.0.0.3", 2888, "srvr", 1.0)]
    answers["srvr"] = "Zookeeper version: x\n"
    assert server.serving() is False
    asked.clear()
    answers["conf"] = f"dataDir={tmp_path}-2{os.sep}version-2\n"
    assert server.serving() is False
    assert [a[2] for a in asked] == ["conf"]  # srvr is not asked of another server


def test_ruok(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, int, str, float]] = []
    answer: list[Any] = ["imok\n"]

    def word(host: str, port: int, what: str = "ruok", timeout_secs: float = 2.0) -> str:
        asked.append((host, port, what, timeout_secs))
        if isinstance(answer[0], Exception):
            raise answer[0]
        return str(answer[0])

    monkeypatch.setattr(zkserver, "four_letter_word", word)
    server = ZooKeeperServer(2888, host="127.0.0.3")
    assert server.ruok() is True
    assert asked == [("127.0.0.3", 2888, "ruok", 1.0)]
    answer[0] = "imnotok"
    assert server.ruok() is False
    answer[0] = ConnectionRefusedError(111, "refused")
    assert server.ruok() is False


def test_ruok_of_nothing_listening_is_false() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert ZooKeeperServer(port).ruok() is False


# -- stop ------------------------------------------------------------------------------------------

def test_stop_reaps_the_process_and_keeps_a_given_data_dir(started: ZooKeeperServer, tmp_path: Path) -> None:
    pid = started.pid
    assert pid is not None and started.running
    started.stop()
    assert not started.running and started.pid is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: no child of that pid is left
    assert (tmp_path / "data" / "zoo.cfg").is_file()
    assert started.data_dir == (tmp_path / "data").resolve()
    started.stop()  # idempotent


def test_stop_removes_a_temporary_data_dir(fake_java: Path) -> None:
    with ZooKeeperServer(java=str(fake_java), classpath=["/x.jar"]) as server:
        data = server.data_dir
        assert data is not None and data.name.startswith("stormpy-zk-") and (data / "zoo.cfg").is_file()
    assert not data.exists()
    assert server.data_dir == data  # still named after the stop


# -- four-letter words ------------------------------------------------------------------------------

def test_four_letter_word_sends_the_word_and_reads_the_whole_answer() -> None:
    big = "x" * 10000 + "\nend"
    got: list[bytes] = []
    with socket.create_server(("127.0.0.1", 0)) as srv:
        port = srv.getsockname()[1]

        def answer() -> None:
            conn, _ = srv.accept()
            with conn:
                got.append(conn.recv(16))
                conn.sendall(big[:5000].encode())
                conn.sendall(big[5000:].encode() + b"\xff")

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        assert four_letter_word("127.0.0.1", port, "mntr") == big + "\ufffd"
        thread.join(10)
    assert got == [b"mntr"]


def test_four_letter_word_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, Any]] = []

    class Sock:
        sent = b""

        def __enter__(self) -> Sock:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def sendall(self, data: bytes) -> None:
            Sock.sent = data

        def recv(self, size: int) -> bytes:
            return b""

    def create_connection(address: Any, timeout: Any = None) -> Sock:
        calls.append((address, timeout))
        return Sock()

    monkeypatch.setattr(socket, "create_connection", create_connection)
    assert four_letter_word("h", 1) == ""
    assert calls == [(("h", 1), 2.0)] and Sock.sent == b"ruok"


def test_four_letter_word_raises_oserror_when_nothing_answers() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(OSError):
        four_letter_word("127.0.0.1", port, "srvr")


# -- finding ZooKeeper and Java -----------------------------------------------------------------------

def test_start_finds_zookeeper_home_and_java_home(zk_home: Path, fake_java: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(fake_java.parent.parent))
    with ZooKeeperServer(data_dir=tmp_path / "d"):
        [run] = runs(tmp_path)
        lib = zk_home / "lib"
        assert run["argv"][run["argv"].index("-cp") + 1] == os.pathsep.join([
            str(zk_home / "conf"), str(lib / "slf4j-api-1.7.30.jar"), str(lib / "zookeeper-3.8.4.jar"),
            str(lib / "zookeeper-jute-3.8.4.jar")])


def test_a_given_classpath_and_java_are_used_without_looking(fake_java: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZOOKEEPER_HOME", str(tmp_path / "nothing"))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with ZooKeeperServer(data_dir=tmp_path / "d", java=str(fake_java), classpath=["/given.jar"]):
        assert runs(tmp_path)[0]["argv"][-4:-2] == ["-cp", "/given.jar"]


def test_no_java_fails_the_start_before_launching(zk_home: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    server = ZooKeeperServer(data_dir=tmp_path / "d")
    with pytest.raises(ZooKeeperNotFound) as info:
        server.start()
    assert str(info.value) == (f"Java was not found (JAVA_HOME={tmp_path / 'no-jdk'} has no executable "
                               f"bin/java); {INSTALL_HINT}")
    assert not (tmp_path / "d").exists() and server.pid is None


def test_require_java(fake_java: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(fake_java.parent.parent))
    assert require_java() == str(fake_java)
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ZooKeeperNotFound) as info:
        require_java()
    assert str(info.value) == ("Java was not found (`java` is not on PATH and JAVA_HOME is not set); "
                               f"{INSTALL_HINT}")


def test_the_install_hint_and_the_debian_dir() -> None:
    assert INSTALL_HINT == ("install Apache ZooKeeper and Java: `sudo apt-get install zookeeper` on "
                            "Debian/Ubuntu (or `make zookeeper`), or unpack an Apache ZooKeeper release "
                            "and set ZOOKEEPER_HOME to it")
    assert Path("/usr/share/java") == DEBIAN_JAVA_DIR


def test_a_release_layout_exactly(zk_home: Path) -> None:
    (zk_home / "zookeeper-3.8.4-tools.jar").write_bytes(b"")
    (zk_home / "lib" / "notes.txt").write_bytes(b"")
    lib = zk_home / "lib"
    assert find_zookeeper_classpath() == [
        str(zk_home / "conf"), str(lib / "slf4j-api-1.7.30.jar"), str(lib / "zookeeper-3.8.4.jar"),
        str(lib / "zookeeper-jute-3.8.4.jar"), str(zk_home / "zookeeper-3.8.4-tools.jar")]


def test_a_release_layout_without_conf_or_lib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ZOOKEEPER_HOME", raising=False)
    (tmp_path / "zookeeper-3.9.0.jar").write_bytes(b"")
    (tmp_path / "conf").write_bytes(b"")  # a file, not a conf directory
    assert find_zookeeper_classpath(tmp_path) == [str(tmp_path / "zookeeper-3.9.0.jar")]


def test_a_given_home_wins_over_the_environment(zk_home: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "zookeeper-3.9.0.jar").write_bytes(b"")
    assert find_zookeeper_classpath(other) == [str(other / "zookeeper-3.9.0.jar")]


def test_an_empty_zookeeper_home_means_the_debian_layout(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZOOKEEPER_HOME", "")
    (tmp_path / "zookeeper.jar").write_bytes(b"")
    for name in ("zookeeper-jute.jar", "slf4j-api.jar", "netty-handler.jar", "netty-transport.jar"):
        (tmp_path / name).write_bytes(b"")
    assert find_zookeeper_classpath(java_dir=tmp_path) == [str(tmp_path / "zookeeper.jar")]


@pytest.mark.parametrize("jars", [[], ["zookeeper-jute-3.8.4.jar"],
                                  ["slf4j-api.jar", "apache-zookeeper.jar"]])
def test_a_release_without_the_server_jar_is_refused(tmp_path: Path, jars: list[str]) -> None:
    (tmp_path / "lib").mkdir()
    for name in jars:
        (tmp_path / "lib" / name).write_bytes(b"")
    with pytest.raises(ZooKeeperNotFound) as info:
        find_zookeeper_classpath(tmp_path)
    assert str(info.value) == (f"ZOOKEEPER_HOME={tmp_path} holds no zookeeper-*.jar "
                               f"(looked in {tmp_path}/lib and {tmp_path}); {INSTALL_HINT}")


def test_the_debian_layout_names_what_is_missing_exactly(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ZOOKEEPER_HOME", raising=False)
    with pytest.raises(ZooKeeperNotFound) as info:
        find_zookeeper_classpath(java_dir=tmp_path)
    assert str(info.value) == ("Apache ZooKeeper was not found (no $ZOOKEEPER_HOME, "
                               f"no {tmp_path}/zookeeper.jar); {INSTALL_HINT}")
    (tmp_path / "zookeeper.jar").mkdir()  # a directory is not the jar
    with pytest.raises(ZooKeeperNotFound, match="Apache ZooKeeper was not found"):
        find_zookeeper_classpath(java_dir=tmp_path)
    (tmp_path / "zookeeper.jar").rmdir()
    (tmp_path / "zookeeper.jar").write_bytes(b"")
    (tmp_path / "slf4j-api.jar").write_bytes(b"")
    (tmp_path / "netty-handler.jar").write_bytes(b"")
    with pytest.raises(ZooKeeperNotFound) as info:
        find_zookeeper_classpath(java_dir=str(tmp_path))
    assert str(info.value) == (f"{tmp_path}/zookeeper.jar is installed but its dependencies "
                               f"zookeeper-jute.jar, netty-transport.jar are missing from {tmp_path}; "
                               "reinstall: sudo apt-get install --reinstall zookeeper")
