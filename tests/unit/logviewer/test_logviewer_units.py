"""The log server's file access (safe paths, paging, search, clean-up), worker log rotation, the
run-time log levels and their parser, without a cluster."""

from __future__ import annotations

import logging
import os
import time
import tracemalloc
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from stormpy.cluster.worker_ops import LogConfig, LoggerLevel, parse_level_setting
from stormpy.host.log_files import CappedLogHandler
from stormpy.logviewer.app import create_app
from stormpy.logviewer.files import BadRequest, Forbidden, LogDir, NotFound, clean_up
from stormpy.worker.log_levels import LogLevels
from stormpy.worker.profiling import cpu_profile, heap_summary, stack_dump


@pytest.fixture
def logs(tmp_path: Path) -> LogDir:
    root = tmp_path / "logs"
    root.mkdir()
    (root / "worker-wc-1-17-6700.log").write_text("".join(f"line {i} hello\n" for i in range(100)))
    (root / "worker-other-1-2-6701.log").write_text("hello from other\n")
    (tmp_path / "secret.txt").write_text("secret")
    (root / "escape.log").symlink_to(tmp_path / "secret.txt")
    return LogDir(root)


def test_paths_outside_the_log_dir_are_refused(logs: LogDir) -> None:
    for name in ("../secret.txt", "/etc/passwd", "", "a/../../secret.txt"):
        with pytest.raises(BadRequest):
            logs.resolve(name)
    with pytest.raises(Forbidden):
        logs.resolve("escape.log")
    with pytest.raises(NotFound):
        logs.resolve("worker-nope-1.log")


def test_paging_search_and_topology_logs(logs: LogDir) -> None:
    name = "worker-wc-1-17-6700.log"
    tail = logs.read(name, None, 14)
    assert tail["content"] == "line 99 hello\n" and tail["start"] + 14 == tail["size"]
    assert logs.read(name, 0, 7)["content"] == "line 0 "
    found = logs.search(name, "hello", 0, 2)
    assert [m["line"] for m in found["matches"]] == ["line 0 hello", "line 1 hello"]
    more = logs.search(name, "hello", found["nextByteOffset"], 1)
    assert more["matches"][0]["line"] == "line 2 hello"
    assert [p.name for p in logs.topology_logs("wc-1-17")] == [name]
    assert {(t, p) for t, p, _ in logs.worker_logs()} == {("wc-1-17", 6700), ("other-1-2", 6701)}


def test_rest_answers_and_token(logs: LogDir) -> None:
    client = TestClient(create_app(logs, {}))
    found = client.get("/api/v1/searchLogs", params={"topoId": "wc-1-17", "search-string": "line 5 "})
    assert found.status_code == 200 and found.json()["results"][0]["matches"][0]["byteOffset"] > 0
    deep = client.get("/api/v1/deepSearch/wc-1-17", params={"search-string": "line 7 ", "num-matches": 2})
    assert deep.status_code == 200
    assert [(d["port"], len(d["matches"])) for d in deep.json()] == [(6700, 1)]
    too_long = {"file": "escape.log", "search-string": "x" * 1025}
    assert client.get("/api/v1/search", params=too_long).status_code == 400
    assert client.get("/api/v1/log", params={"file": "../secret.txt"}).status_code == 400
    assert client.get("/api/v1/log", params={"file": "escape.log"}).status_code == 403
    bad_start = {"file": "worker-wc-1-17-6700.log", "start": "x"}
    assert client.get("/api/v1/log", params=bad_start).status_code == 400
    download = client.get("/api/v1/download", params={"file": "worker-other-1-2-6701.log"})
    assert download.text == "hello from other\n"
    secured = TestClient(create_app(logs, {"ui.auth.token": "s3"}))
    assert secured.get("/api/v1/listLogs", params={"topoId": "wc-1-17"}).status_code == 401
    ok = secured.get("/api/v1/listLogs", params={"topoId": "wc-1-17"},
                     headers={"Authorization": "Bearer s3"})
    assert ok.json()["logs"] == ["worker-wc-1-17-6700.log"]
    (logs.root / "worker-wc-1-17-6700-events.log").write_text('{"component": "split"}\n')
    listed = secured.get("/api/v1/listLogs", params={"topoId": "wc-1-17", "port": 6700},
                         headers={"Authorization": "Bearer s3"})
    assert listed.json()["logs"] == ["worker-wc-1-17-6700-events.log", "worker-wc-1-17-6700.log"]
    assert secured.get("/log", params={"file": "x"}).status_code == 200  # the page holds no data


def test_clean_up_removes_only_old_logs_of_dead_workers(logs: LogDir) -> None:
    art = logs.root / "workers-artifacts" / "other-1-2" / "6701"
    art.mkdir(parents=True)
    (art / "jstack-1.txt").write_text("dump")
    for events in ("worker-other-1-2-6701-events.log", "worker-other-1-2-6701-events.log.1",
                   "worker-wc-1-17-6700-events.log"):
        (logs.root / events).write_text('{"component": "split"}\n')
    old = time.time() - 3600
    for p in [*logs.root.glob("worker-*"), art / "jstack-1.txt"]:
        os.utime(p, (old, old))
    removed = clean_up(logs, [("wc-1-17", 6700)], 600)
    assert {p.name for p in removed} == {"worker-other-1-2-6701.log", "jstack-1.txt",
                                         "worker-other-1-2-6701-events.log",
                                         "worker-other-1-2-6701-events.log.1"}
    assert (logs.root / "worker-wc-1-17-6700.log").exists()  # still running
    assert (logs.root / "worker-wc-1-17-6700-events.log").exists()
    assert not (logs.root / "workers-artifacts" / "other-1-2").exists()
    assert clean_up(logs, [], 7200) == []  # younger than the age


def test_rotation_keeps_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "w.log"
    handler = CappedLogHandler(path, 2000, 2)
    logger = logging.getLogger("test.rotation")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        for i in range(200):
            logger.warning("record %d %s", i, "x" * 100)
    finally:
        logger.removeHandler(handler)
        handler.close()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["w.log", "w.log.1", "w.log.2"]
    assert all((tmp_path / f).stat().st_size <= 2000 for f in files)
    assert "record 199" in path.read_text()


def test_log_levels_apply_and_revert() -> None:
    logger = logging.getLogger("test.levels")
    logger.setLevel(logging.WARNING)
    levels = LogLevels()
    now = 1000.0
    config = LogConfig({"test.levels": LoggerLevel("DEBUG", 10, now + 10)})
    assert levels.apply(config, now) == ["test.levels"] and logger.level == logging.DEBUG
    assert levels.apply(config, now + 1) == []
    assert levels.apply(config, now + 11) == ["test.levels"] and logger.level == logging.WARNING
    assert levels.apply(config, now + 12) == []
    levels.apply(LogConfig({"test.levels": LoggerLevel("ERROR")}), now)
    assert logger.level == logging.ERROR
    levels.apply(LogConfig(), now)  # removed from the document: back
    assert logger.level == logging.WARNING


def test_level_setting_parser() -> None:
    assert parse_level_setting("my.mod=debug:30") == ("my.mod", "DEBUG", 30)
    assert parse_level_setting("ROOT=WARN") == ("ROOT", "WARN", 0)
    for bad in ("my.mod", "=DEBUG", "x=LOUD", "x=DEBUG:soon", "x=DEBUG:-1"):
        with pytest.raises(ValueError, match="x|my.mod|DEBUG"):
            parse_level_setting(bad)
    doc = LogConfig({"a": LoggerLevel("INFO", 5, 12.5)}).to_storm_json()
    assert doc == {"namedLoggerLevels": {"a": {"target_level": "INFO", "reset_level": "",
                                               "timeout": 5, "timeout_epoch": 12500}}}


def test_profiles_name_the_running_code() -> None:
    assert "test_profiles_name_the_running_code" in stack_dump()
    assert "samples every 10 ms" in cpu_profile(0.05)
    was_tracing = tracemalloc.is_tracing()
    try:
        assert "live objects" in heap_summary()
        assert tracemalloc.is_tracing()  # the first request starts tracing
    finally:
        if not was_tracing:
            tracemalloc.stop()
