"""The log server's REST answers, exactly: parameters and their defaults, the error bodies and
statuses, which files each search reads, what listLogs names, the token rule on every API path;
and the server itself: its address, its clean-up rounds (dead workers' old logs only), its stop."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from stormpy.host.waiting import wait_for
from stormpy.logviewer.app import DEFAULT_LENGTH, create_app
from stormpy.logviewer.files import LogDir
from stormpy.logviewer.server import LogviewerServer

LOG = "worker-wc-1-17-6700.log"
API = ("/api/v1/log", "/api/v1/download", "/api/v1/search", "/api/v1/searchLogs", "/api/v1/listLogs",
       "/api/v1/deepSearch/wc-1-17")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    root.mkdir()
    (root / LOG).write_text("".join(f"line {i} hit\n" for i in range(20)))
    (root / "worker-wc-1-17-6700.log.1").write_text("old hit\n")
    (root / "worker-wc-1-17-6700-events.log").write_text('{"hit": 1}\n')
    (root / "worker-wc-1-17-6701.log").write_text("other port hit\nhit again\n")
    (root / "worker-wc-1-17-6702.log").write_text("nothing here\n")
    (root / "worker-zz-1-6700.log").write_text("hit elsewhere\n")
    art = root / "workers-artifacts" / "wc-1-17"
    for port, name in ((6700, "jstack-1.txt"), (6703, "heap-1.txt")):
        (art / str(port)).mkdir(parents=True)
        (art / str(port) / name).write_text("dump")
    return root


@pytest.fixture
def client(root: Path) -> TestClient:
    return TestClient(create_app(LogDir(root), {}))


def test_log_pages_with_their_defaults(client: TestClient, root: Path) -> None:
    size = (root / LOG).stat().st_size
    whole = client.get("/api/v1/log", params={"file": LOG}).json()
    assert whole == {"file": LOG, "start": 0, "length": size, "size": size,
                     "content": (root / LOG).read_text()}
    assert DEFAULT_LENGTH == 51200
    (root / "big.log").write_bytes(b"b" * (DEFAULT_LENGTH + 5))
    for params in ({"file": "big.log"}, {"file": "big.log", "length": ""},
                   {"file": "big.log", "length": "0"}):
        page = client.get("/api/v1/log", params=params).json()
        assert (page["start"], page["length"]) == (5, DEFAULT_LENGTH)
    page = client.get("/api/v1/log", params={"file": LOG, "start": "5", "length": "4"}).json()
    assert (page["start"], page["content"]) == (5, "0 hi")
    page = client.get("/api/v1/log", params={"file": LOG, "start": "", "length": "4"}).json()
    assert page["start"] == size - 4


def test_bad_parameters_are_400_naming_the_parameter(client: TestClient) -> None:
    for path, params, name in (("/api/v1/log", {"file": LOG, "start": "x"}, "start"),
                               ("/api/v1/log", {"file": LOG, "length": "1.5"}, "length"),
                               ("/api/v1/search", {"file": LOG, "search-string": "hit",
                                                   "start-byte-offset": "z"}, "start-byte-offset"),
                               ("/api/v1/search", {"file": LOG, "search-string": "hit",
                                                   "num-matches": "many"}, "num-matches")):
        answer = client.get(path, params=params)
        assert answer.status_code == 400
        bad = params[name]
        assert answer.json() == {"error": "BadRequest",
                                 "errorMessage": f"parameter {name!r} must be an integer, got {bad!r}"}


def test_path_errors_carry_their_status_and_kind(client: TestClient, root: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("s")
    (root / "escape.log").symlink_to(tmp_path / "secret.txt")
    for path in ("/api/v1/log", "/api/v1/download", "/api/v1/search"):
        params = {"search-string": "s"}
        assert client.get(path, params=params).json()["errorMessage"] == "the 'file' parameter is required"
        answer = client.get(path, params={**params, "file": "../secret.txt"})
        assert (answer.status_code, answer.json()["error"]) == (400, "BadRequest")
        answer = client.get(path, params={**params, "file": "escape.log"})
        assert (answer.status_code, answer.json()["error"]) == (403, "Forbidden")
        answer = client.get(path, params={**params, "file": "gone.log"})
        assert answer.status_code == 404
        assert answer.json() == {"error": "NotFound", "errorMessage": "no log file 'gone.log' on this host"}


def test_download_is_the_whole_file_as_an_attachment(client: TestClient, root: Path) -> None:
    answer = client.get("/api/v1/download", params={"file": "worker-wc-1-17-6701.log"})
    assert answer.status_code == 200 and answer.text == "other port hit\nhit again\n"
    assert answer.headers["content-disposition"] == 'attachment; filename="worker-wc-1-17-6701.log"'
    assert answer.headers["content-type"].startswith("text/plain")


def test_search_defaults_and_paging(client: TestClient) -> None:
    first = client.get("/api/v1/search", params={"file": LOG, "search-string": "hit"}).json()
    assert len(first["matches"]) == 10 and first["startByteOffset"] == 0
    assert first["matches"][0]["line"] == "line 0 hit"
    for empty in ("", "0"):
        same = client.get("/api/v1/search", params={"file": LOG, "search-string": "hit",
                                                     "start-byte-offset": empty, "num-matches": empty}).json()
        assert same == first
    more = client.get("/api/v1/search", params={"file": LOG, "search-string": "hit", "num-matches": "3",
                                                "start-byte-offset": str(first["nextByteOffset"])}).json()
    assert [m["line"] for m in more["matches"]] == ["line 10 hit", "line 11 hit", "line 12 hit"]
    missing = client.get("/api/v1/search", params={"file": LOG})
    assert missing.status_code == 400


def test_search_logs_reads_every_file_of_the_topology_with_a_match(client: TestClient) -> None:
    answer = client.get("/api/v1/searchLogs", params={"topoId": "wc-1-17", "search-string": "hit"}).json()
    assert answer["topoId"] == "wc-1-17" and answer["searchString"] == "hit"
    assert [(r["fileName"], len(r["matches"])) for r in answer["results"]] == [
        ("worker-wc-1-17-6700-events.log", 1), (LOG, 10), ("worker-wc-1-17-6700.log.1", 1),
        ("worker-wc-1-17-6701.log", 2)]
    assert all(r["startByteOffset"] == 0 for r in answer["results"])
    two = client.get("/api/v1/searchLogs", params={"topoId": "wc-1-17", "search-string": "hit",
                                                   "num-matches": "1"}).json()
    assert [len(r["matches"]) for r in two["results"]] == [1, 1, 1, 1]
    default = client.get("/api/v1/searchLogs", params={"topoId": "wc-1-17", "search-string": "hit",
                                                       "num-matches": "0"}).json()
    assert [len(r["matches"]) for r in default["results"]] == [1, 10, 1, 2]
    for params in ({"topoId": "wc-1-17"}, {"search-string": "hit"}, {"topoId": "", "search-string": "hit"}):
        refused = client.get("/api/v1/searchLogs", params=params)
        assert refused.status_code == 400
        assert refused.json()["errorMessage"] == "parameters 'topoId' and 'search-string' are required"


def test_deep_search_reads_each_workers_current_log(client: TestClient) -> None:
    every = client.get("/api/v1/deepSearch/wc-1-17", params={"search-string": "hit"}).json()
    assert [(d["port"], d["fileName"], len(d["matches"])) for d in every] == [
        (6700, LOG, 1), (6701, "worker-wc-1-17-6701.log", 1), (6702, "worker-wc-1-17-6702.log", 0)]
    assert every[0]["matches"][0]["byteOffset"] == len("line 0 ")
    star = client.get("/api/v1/deepSearch/wc-1-17", params={"search-string": "hit", "port": "*"}).json()
    assert star == every
    one = client.get("/api/v1/deepSearch/wc-1-17", params={"search-string": "hit", "port": "6701",
                                                           "num-matches": "5"}).json()
    assert [(d["port"], len(d["matches"])) for d in one] == [(6701, 2)]
    zero = client.get("/api/v1/deepSearch/wc-1-17", params={"search-string": "hit", "port": "6701",
                                                            "num-matches": "0"}).json()
    assert [len(d["matches"]) for d in zero] == [1]
    assert client.get("/api/v1/deepSearch/nothing", params={"search-string": "hit"}).json() == []
    first_byte = client.get("/api/v1/deepSearch/zz-1", params={"search-string": "hit"}).json()
    assert [m["byteOffset"] for m in first_byte[0]["matches"]] == [0]
    no_string = client.get("/api/v1/deepSearch/wc-1-17")
    assert no_string.status_code == 400 and "search-string" in no_string.json()["errorMessage"]
    bad = client.get("/api/v1/deepSearch/wc-1-17", params={"search-string": "hit", "port": "67x"})
    assert bad.status_code == 400
    assert bad.json()["errorMessage"] == "parameter 'port' must be a port or '*', got '67x'"


def test_list_logs_names_logs_and_artefacts_per_port(client: TestClient, root: Path) -> None:
    every = client.get("/api/v1/listLogs", params={"topoId": "wc-1-17"}).json()
    assert every == {"topoId": "wc-1-17",
                     "logs": ["worker-wc-1-17-6700-events.log", LOG, "worker-wc-1-17-6700.log.1",
                              "worker-wc-1-17-6701.log", "worker-wc-1-17-6702.log"],
                     "artifacts": ["workers-artifacts/wc-1-17/6700/jstack-1.txt"]}
    (root / "workers-artifacts" / "wc-1-17" / "6702").mkdir()
    (root / "workers-artifacts" / "wc-1-17" / "6702" / "profile.txt").write_text("p")
    (root / "workers-artifacts" / "zz-1" / "6799").mkdir(parents=True)
    (root / "workers-artifacts" / "zz-1" / "6799" / "other.txt").write_text("p")
    listed = client.get("/api/v1/listLogs", params={"topoId": "wc-1-17"}).json()
    assert listed["artifacts"] == ["workers-artifacts/wc-1-17/6700/jstack-1.txt",
                                   "workers-artifacts/wc-1-17/6702/profile.txt"]
    one = client.get("/api/v1/listLogs", params={"topoId": "wc-1-17", "port": "6701"}).json()
    assert one == {"topoId": "wc-1-17", "logs": ["worker-wc-1-17-6701.log"], "artifacts": []}
    art_only = client.get("/api/v1/listLogs", params={"topoId": "wc-1-17", "port": "6703"}).json()
    assert art_only["logs"] == [] and art_only["artifacts"] == ["workers-artifacts/wc-1-17/6703/heap-1.txt"]
    refused = client.get("/api/v1/listLogs")
    assert refused.status_code == 400 and refused.json()["errorMessage"] == "parameter 'topoId' is required"


def test_the_page_escapes_the_file_name(client: TestClient) -> None:
    page = client.get("/log", params={"file": '<b>"x"</b>.log'})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<title>&lt;b&gt;&quot;x&quot;&lt;/b&gt;.log</title>" in page.text
    assert 'const file = "<b>\\"x\\"</b>.log";' in page.text
    plain = client.get("/log").text
    assert "<title>log</title>" in plain and 'const file = "";' in plain


@pytest.mark.parametrize("conf", [{"ui.auth.token": "s3"}, {"nimbus.rpc.auth.token": "s3"},
                                  {"ui.auth.token": "s3", "ui.auth.protect.gets": False}])
def test_every_api_path_needs_the_token(root: Path, conf: dict[str, Any]) -> None:
    secured = TestClient(create_app(LogDir(root), conf))
    params = {"file": LOG, "topoId": "wc-1-17", "search-string": "hit"}
    for path in API:
        missing = secured.get(path, params=params)
        assert missing.status_code == 401 and missing.json()["error"] == "denied"
        assert "needs the UI token" in missing.json()["errorMessage"]
        wrong = secured.get(path, params=params, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 403
        assert wrong.json() == {"error": "denied",
                                "errorMessage": "wrong UI token in the Authorization header"}
        assert secured.get(path, params=params, headers={"Authorization": "Bearer s3"}).status_code == 200
    assert secured.get("/log", params={"file": LOG}).status_code == 200
    open_client = TestClient(create_app(LogDir(root), {}))
    assert all(open_client.get(path, params=params).status_code == 200 for path in API)


def test_the_server_binds_its_host_serves_and_cleans_up_dead_workers(tmp_path: Path) -> None:
    logs = tmp_path / "logs" / "nested"
    conf = {"logviewer.port": 0, "logviewer.host": None, "supervisor.host": "127.0.0.1",
            "logviewer.cleanup.interval.secs": 0.05, "logviewer.cleanup.age.mins": 1}
    server = LogviewerServer(conf, logs=logs, running=lambda: [("alive-1", 6700)])
    assert logs.is_dir() and server.host == "127.0.0.1" and server.port > 0
    assert server.url == f"http://127.0.0.1:{server.port}" and server.age_secs == 60.0
    assert server.cleanup.interval == 0.05
    old = time.time() - 120
    for name in ("worker-dead-1-6700.log", "worker-alive-1-6700.log"):
        (logs / name).write_text("x")
        os.utime(logs / name, (old, old))
    (logs / "worker-young-1-6700.log").write_text("x")
    os.utime(logs / "worker-young-1-6700.log", (time.time() - 50, time.time() - 50))
    server.start()
    try:
        wait_for(lambda: not (logs / "worker-dead-1-6700.log").exists(), 30, "the dead worker's log deleted")
        assert (logs / "worker-alive-1-6700.log").exists() and (logs / "worker-young-1-6700.log").exists()
        import urllib.request

        with urllib.request.urlopen(f"{server.url}/api/v1/listLogs?topoId=alive-1", timeout=30) as answer:
            assert b"worker-alive-1-6700.log" in answer.read()
    finally:
        server.stop()
    assert not server.cleanup.running


def test_a_server_of_its_own_judges_by_age_alone(tmp_path: Path) -> None:
    conf = {"logviewer.port": 0, "logviewer.host": "127.0.0.1", "logviewer.cleanup.age.mins": 0.5}
    server = LogviewerServer(conf, logs=tmp_path)
    try:
        assert server.age_secs == 30.0
        for name, age in (("worker-a-1-6700.log", 40), ("worker-b-1-6700.log", 20)):
            (tmp_path / name).write_text("x")
            os.utime(tmp_path / name, (time.time() - age, time.time() - age))
        server.clean_up_once()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["worker-b-1-6700.log"]
    finally:
        server.stop()


def test_the_server_logs_on_its_logger_and_names_its_threads(tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    import logging
    import threading

    logger = logging.getLogger("test.logviewer.server")
    conf = {"logviewer.port": 0, "logviewer.host": "127.0.0.1", "storm.log.dir": str(tmp_path / "from-conf"),
            "logviewer.cleanup.interval.secs": 3600}
    rounds: list[int] = []

    def running() -> list[tuple[str, int]]:
        rounds.append(1)
        if len(rounds) == 2:
            raise OSError("supervisor state unreadable")
        return []
    server = LogviewerServer(conf, running=running, logger=logger)
    assert server.log_dir.root == (tmp_path / "from-conf").resolve() and server.log_dir.root.is_dir()
    (server.log_dir.root / "worker-a-1-6700.log").write_text("x")
    os.utime(server.log_dir.root / "worker-a-1-6700.log", (0, 0))
    with caplog.at_level(logging.INFO):
        server.start()
        try:
            names = [t.name for t in threading.enumerate()]
            assert "stormpy-logviewer" in names and "logviewer-cleanup" in names
            wait_for(lambda: rounds, 30, "the first clean-up round")
            server.cleanup.wake()
            wait_for(lambda: server.cleanup.errors, 30, "the failed round")
            stop = threading.Event()
            stop.set()
            server.wait(stop)
        finally:
            server.stop()
    mine = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "test.logviewer.server"]
    root = server.log_dir.root
    assert ("INFO", f"log server on {server.url} serving {root}") in mine
    assert ("INFO", f"logviewer cleanup: removed {root / 'worker-a-1-6700.log'}") in mine
    assert ("ERROR", "logviewer-cleanup: round failed (1 in a row)") in mine


def test_a_server_that_cannot_serve_names_the_log_server(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    server = LogviewerServer({"logviewer.port": 0, "logviewer.host": "127.0.0.1"}, logs=tmp_path)
    monkeypatch.setattr(server.web.server, "run", lambda sockets: None)
    with pytest.raises(RuntimeError, match=r"^the log server did not start on http://127\.0\.0\.1:\d+ "
                                           r"\(the log server's server thread ended\)$"):
        server.start()
    server.stop()
