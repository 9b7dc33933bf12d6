"""The UI's on-call endpoints (stormpy.ui._operations) over a scripted Nimbus: log levels read and
set in Storm's logconfig shape, worker dumps and CPU profiles asked for by POST with the token,
waited for on a driven clock, and the links to the hosts' log servers."""

from __future__ import annotations

import os
from typing import Any

import pytest

if os.environ.get("CI", "").lower() != "true":  # in CI the [ui] extra is installed: no skip
    pytest.importorskip("starlette")

from driven_clock_kit import DrivenClock  # noqa: E402

from stormpy.rpc.errors import InvalidRequestError  # noqa: E402
from stormpy.ui import _operations  # noqa: E402
from stormpy.ui._operations import add_log_links, log_link  # noqa: E402
from ui_nimbus_kit import INFO, ui_app  # noqa: E402

AUTH = {"Authorization": "Bearer tok"}
CONF = {"ui.auth.token": "tok", "ui.auth.protect.gets": True}
BASE = "/api/v1/topology/wc-1"
LEVELS = {
    "namedLoggerLevels": {
        "root": {"target_level": "INFO", "reset_level": "INFO", "timeout": 0, "timeout_epoch": 0}
    }
}


@pytest.fixture(name="clock")
def clock_fixture(monkeypatch: pytest.MonkeyPatch) -> DrivenClock:
    driven = DrivenClock()
    monkeypatch.setattr(_operations, "time", driven)
    return driven


def answers_in_turn(*answers: dict[str, Any]) -> Any:
    left = list(answers)
    return lambda **_args: left.pop(0) if len(left) > 1 else left[0]


def test_a_log_link_is_the_file_s_page_on_the_host_s_log_server() -> None:
    assert log_link("h", 8000, "worker-wc-1-6700.log") == "http://h:8000/log?file=worker-wc-1-6700.log"
    assert log_link("h", 8000, "dumps/a b&c.txt") == "http://h:8000/log?file=dumps%2Fa+b%26c.txt"
    assert log_link("::1", 8000, "x.log") == "http://[::1]:8000/log?file=x.log"
    assert log_link("h", None, "x.log") is None
    assert log_link("h", 0, "x.log") is None


def test_log_links_go_on_worker_executor_and_host_port_rows() -> None:
    cluster = {"supervisors": [{"id": "sup-a", "logviewer_port": 8000}, {"id": "sup-b"}]}
    doc: dict[str, Any] = {
        "workers": [
            {"host": "ha", "port": 6700, "supervisorId": "sup-a"},
            {"host": "hb", "port": 6701, "supervisorId": "sup-b"},
        ],
        "executorStats": [{"host": "ha", "port": 6700}, {"host": "hx", "port": 1}],
        "hostPortList": [{"host": "ha", "port": 6700}, {"host": "hb", "port": 6701}],
        "spouts": [{"host": "ha", "port": 6700}],
    }
    assert add_log_links(doc, INFO, cluster) is doc
    link = "http://ha:8000/log?file=worker-wc-1-6700.log"
    assert doc["workers"] == [
        {"host": "ha", "port": 6700, "supervisorId": "sup-a", "workerLogLink": link},
        {"host": "hb", "port": 6701, "supervisorId": "sup-b", "workerLogLink": None},
    ]
    assert doc["executorStats"] == [
        {"host": "ha", "port": 6700, "workerLogLink": link},
        {"host": "hx", "port": 1, "workerLogLink": None},
    ]
    assert doc["hostPortList"] == [
        {"host": "ha", "port": 6700, "logviewerPort": 8000, "workerLogLink": link},
        {"host": "hb", "port": 6701, "logviewerPort": None, "workerLogLink": None},
    ]
    assert doc["spouts"] == [{"host": "ha", "port": 6700}]
    empty: dict[str, Any] = {"workers": None}
    assert add_log_links(empty, INFO, {}) == {"workers": None}
    no_host: dict[str, Any] = {"executorStats": [{"port": 6700, "supervisorId": "sup-a"}]}
    add_log_links(no_host, INFO, cluster)
    assert no_host["executorStats"][0]["workerLogLink"] == "http://:8000/log?file=worker-wc-1-6700.log"


def test_a_topology_without_workers_gets_links_only_from_the_rows_supervisor() -> None:
    cluster = {"supervisors": [{"id": "sup-a", "logviewer_port": 8000}]}
    doc: dict[str, Any] = {
        "executorStats": [{"host": "ha", "port": 6700}],
        "workers": [{"host": "ha", "port": 6700, "supervisorId": "sup-a"}],
    }
    add_log_links(doc, {"id": "wc-1"}, cluster)  # an unscheduled topology's info lists no workers
    assert doc["executorStats"][0]["workerLogLink"] is None
    assert doc["workers"][0]["workerLogLink"] == "http://ha:8000/log?file=worker-wc-1-6700.log"


def test_reading_log_levels_asks_nimbus_by_name_and_needs_the_token_when_gets_are_protected() -> None:
    client, nimbus, _ = ui_app(CONF, {"get_log_config": LEVELS})
    refused = client.get(f"{BASE}/logconfig")
    assert refused.status_code == 401 and refused.json()["error"] == "Unauthorized"
    assert nimbus.sent("get_log_config") == []
    assert client.get(f"{BASE}/logconfig", headers=AUTH).json() == LEVELS
    assert nimbus.sent("get_log_config") == [{"name": "wc"}]
    missing = client.get("/api/v1/topology/nope/logconfig", headers=AUTH)
    assert missing.status_code == 404 and missing.json()["errorMessage"] == "topology 'nope' not found"


def test_setting_log_levels_sends_settings_and_resets_in_order() -> None:
    client, nimbus, _ = ui_app(CONF, {"set_log_config": LEVELS})
    body = {
        "namedLoggerLevels": {
            "com.a": {"target_level": "DEBUG", "timeout": 30},
            "com.b": {"target_level": " WARN ", "timeout": 0},
            "com.c": {"target_level": ""},
            "com.d": {"reset_level": "INFO"},
            "com.e": "not a map",
            "com.f": {"target_level": "ERROR"},
            "com.g": {"target_level": None, "timeout": "bad, but a reset ignores it"},
        }
    }
    answer = client.post(f"{BASE}/logconfig", headers=AUTH, json=body)
    assert answer.status_code == 200 and answer.json() == LEVELS
    assert nimbus.sent("set_log_config") == [
        {
            "name": "wc",
            "settings": ["com.a=DEBUG:30", "com.b=WARN", "com.f=ERROR"],
            "resets": ["com.c", "com.d", "com.e", "com.g"],
        }
    ]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            b"{",
            "logconfig body is not JSON (Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1))",
        ),
        (b"[]", 'logconfig body must be {"namedLoggerLevels": {logger: {...}}}'),
        (b'{"namedLoggerLevels": []}', 'logconfig body must be {"namedLoggerLevels": {logger: {...}}}'),
        (b'{"levels": {}}', 'logconfig body must be {"namedLoggerLevels": {logger: {...}}}'),
        (b"", 'logconfig body must be {"namedLoggerLevels": {logger: {...}}}'),
        (
            b'{"namedLoggerLevels": {"a": {"target_level": "INFO", "timeout": -1}}}',
            "logger 'a': timeout must be whole seconds >= 0",
        ),
        (
            b'{"namedLoggerLevels": {"a": {"target_level": "INFO", "timeout": 1.5}}}',
            "logger 'a': timeout must be whole seconds >= 0",
        ),
        (
            b'{"namedLoggerLevels": {"a": {"target_level": "INFO", "timeout": true}}}',
            "logger 'a': timeout must be whole seconds >= 0",
        ),
        (
            b'{"namedLoggerLevels": {"a": {"target_level": "INFO", "timeout": "5"}}}',
            "logger 'a': timeout must be whole seconds >= 0",
        ),
    ],
)
def test_a_bad_logconfig_body_is_400_naming_what_is_wrong(body: bytes, message: str) -> None:
    client, nimbus, _ = ui_app(CONF, {"set_log_config": LEVELS})
    answer = client.post(f"{BASE}/logconfig", headers=AUTH, content=body)
    assert answer.status_code == 400
    assert answer.json() == {"error": "Bad Request", "errorMessage": message}
    assert nimbus.sent("set_log_config") == []


def test_a_level_nimbus_refuses_is_400_with_its_message_and_other_failures_are_not_hidden() -> None:
    client, nimbus, _ = ui_app(CONF, {"set_log_config": InvalidRequestError("unknown level 'LOUD'")})
    body = {"namedLoggerLevels": {"a": {"target_level": "LOUD"}}}
    answer = client.post(f"{BASE}/logconfig", headers=AUTH, json=body)
    assert answer.status_code == 400 and answer.json()["errorMessage"] == "unknown level 'LOUD'"
    nimbus.answers["set_log_config"] = KeyError("bug")
    with pytest.raises(KeyError):
        client.post(f"{BASE}/logconfig", headers=AUTH, json=body)


def test_setting_log_levels_needs_the_token_and_a_known_topology() -> None:
    client, nimbus, _ = ui_app(CONF, {"set_log_config": LEVELS})
    assert client.post(f"{BASE}/logconfig", json=LEVELS).status_code == 401
    assert (
        client.post(f"{BASE}/logconfig", json=LEVELS, headers={"Authorization": "Bearer no"}).status_code
        == 403
    )
    assert client.get(f"{BASE}/logconfig").status_code == 401  # the GET route is not the POST's
    missing = client.post("/api/v1/topology/nope/logconfig", headers=AUTH, json=LEVELS)
    assert missing.status_code == 404
    assert nimbus.sent("set_log_config") == []


def test_a_stack_dump_is_asked_for_then_waited_for_and_linked(clock: DrivenClock) -> None:
    result = answers_in_turn(
        {"status": "pending"},
        {"status": "pending"},
        {"status": "done", "result": {"file": "dumps/jstack-1.txt"}},
    )
    client, nimbus, _ = ui_app(
        CONF, {"request_worker_action": {"request": "sup-a-6700/7"}, "worker_action_result": result}
    )
    answer = client.post(f"{BASE}/profiling/dumpjstack/ha:6700", headers=AUTH)
    assert answer.status_code == 200
    assert answer.json() == {
        "status": "done",
        "id": "ha:6700",
        "file": "dumps/jstack-1.txt",
        "logLink": "http://ha:8000/log?file=dumps%2Fjstack-1.txt",
    }
    assert nimbus.sent("request_worker_action") == [
        {"name": "wc", "host": "ha", "port": 6700, "action": "jstack", "args": {}}
    ]
    assert nimbus.sent("worker_action_result") == [{"name": "wc", "request": "sup-a-6700/7"}] * 3
    assert clock.sleeps == [0.3, 0.3]


def test_a_heap_dump_on_a_host_without_log_server_has_no_link(clock: DrivenClock) -> None:
    client, nimbus, _ = ui_app(
        CONF,
        {
            "request_worker_action": {"request": "sup-b-6701/1"},
            "worker_action_result": {"status": "done", "result": {"file": "heap.txt"}},
        },
    )
    answer = client.post(f"{BASE}/profiling/dumpheap/hb:6701", headers=AUTH)
    assert answer.json() == {"status": "done", "id": "hb:6701", "file": "heap.txt", "logLink": None}
    assert nimbus.sent("request_worker_action")[0]["action"] == "heap"
    assert clock.sleeps == []
    nimbus.answers["worker_action_result"] = {"status": "done", "result": {}}
    answer = client.post(f"{BASE}/profiling/dumpheap/ha:6700", headers=AUTH)
    assert answer.json() == {"status": "done", "id": "ha:6700", "file": None, "logLink": None}


def test_a_dump_still_pending_after_30_seconds_answers_its_request(clock: DrivenClock) -> None:
    client, nimbus, _ = ui_app(
        CONF,
        {"request_worker_action": {"request": "sup-a-6700/2"}, "worker_action_result": {"status": "pending"}},
    )
    answer = client.post(f"{BASE}/profiling/dumpjstack/ha:6700", headers=AUTH)
    assert answer.status_code == 200
    assert answer.json() == {"status": "pending", "id": "ha:6700", "request": "sup-a-6700/2"}
    assert 30.0 <= sum(clock.sleeps) < 30.6 and set(clock.sleeps) == {0.3}  # polls until 30 s passed
    assert len(nimbus.sent("worker_action_result")) == len(clock.sleeps) + 1


def test_a_failed_dump_is_409_with_the_worker_s_error(clock: DrivenClock) -> None:
    client, _nimbus, _ = ui_app(
        CONF,
        {
            "request_worker_action": {"request": "sup-a-6700/3"},
            "worker_action_result": {"status": "failed", "error": "no py-spy"},
        },
    )
    answer = client.post(f"{BASE}/profiling/dumpheap/ha:6700", headers=AUTH)
    assert answer.status_code == 409
    assert answer.json() == {"status": "failed", "id": "ha:6700", "error": "no py-spy"}


@pytest.mark.parametrize(
    ("hostport", "status", "message"),
    [
        ("ha", 400, "worker 'ha' must be host:port"),
        (":6700", 400, "worker ':6700' must be host:port"),
        ("ha:x", 400, "worker 'ha:x' must be host:port"),
        ("ha:", 400, "worker 'ha:' must be host:port"),
        ("ha:6701", 404, "worker 'ha:6701' not found of topology 'wc-1'"),
        ("hb:6700", 404, "worker 'hb:6700' not found of topology 'wc-1'"),
    ],
)
def test_a_dump_names_the_worker_it_cannot_find(hostport: str, status: int, message: str) -> None:
    client, nimbus, _ = ui_app(CONF, {"request_worker_action": {"request": "x"}})
    answer = client.post(f"{BASE}/profiling/dumpjstack/{hostport}", headers=AUTH)
    assert answer.status_code == status and answer.json()["errorMessage"] == message
    assert nimbus.sent("request_worker_action") == []


def test_dumps_and_profiles_need_the_token_and_a_post(clock: DrivenClock) -> None:
    client, nimbus, _ = ui_app(
        CONF,
        {"request_worker_action": {"request": "sup-a-6700/1"}, "worker_action_result": {"status": "pending"}},
    )
    for path in ("dumpjstack/ha:6700", "dumpheap/ha:6700", "start/ha:6700/10"):
        assert client.post(f"{BASE}/profiling/{path}").status_code == 401
        assert (
            client.post(f"{BASE}/profiling/{path}", headers={"Authorization": "Bearer no"}).status_code == 403
        )
        assert client.get(f"{BASE}/profiling/{path}", headers=AUTH).status_code == 405
    assert nimbus.sent("request_worker_action") == []


def test_a_cpu_profile_starts_for_its_seconds_and_its_result_is_read_later() -> None:
    client, nimbus, _ = ui_app(
        CONF,
        {"request_worker_action": {"request": "sup-a-6700/9"}, "worker_action_result": {"status": "pending"}},
    )
    answer = client.post(f"{BASE}/profiling/start/ha:6700/600", headers=AUTH)
    assert answer.status_code == 200
    assert answer.json() == {"status": "started", "id": "ha:6700", "request": "sup-a-6700/9", "timeout": 600}
    assert nimbus.sent("request_worker_action") == [
        {"name": "wc", "host": "ha", "port": 6700, "action": "cpu", "args": {"seconds": 600}}
    ]
    assert client.get(f"{BASE}/profiling/result/sup-a-6700/9").status_code == 401
    pending = client.get(f"{BASE}/profiling/result/sup-a-6700/9", headers=AUTH)
    assert pending.json() == {"status": "pending", "id": "ha:6700"}
    assert nimbus.sent("worker_action_result") == [{"name": "wc", "request": "sup-a-6700/9"}]
    nimbus.answers["worker_action_result"] = {"status": "done", "result": {"file": "cpu.svg"}}
    done = client.get(f"{BASE}/profiling/result/sup-a-6700/9", headers=AUTH)
    assert done.json() == {
        "status": "done",
        "id": "ha:6700",
        "file": "cpu.svg",
        "logLink": "http://ha:8000/log?file=cpu.svg",
    }
    # a request of a worker the topology no longer has: its port, no host
    gone = client.get(f"{BASE}/profiling/result/sup-b-6700/4", headers=AUTH)
    assert gone.json() == {"status": "done", "id": ":6700", "file": "cpu.svg", "logLink": None}
    failed_answer = {"status": "failed", "error": "worker gone"}
    nimbus.answers["worker_action_result"] = failed_answer
    failed = client.get(f"{BASE}/profiling/result/sup-b-6701/5", headers=AUTH)
    assert failed.json() == {"status": "failed", "id": "hb:6701", "error": "worker gone"}


@pytest.mark.parametrize("timeout", ["0", "601", "-5", "1.5", "ten"])
def test_a_cpu_profile_takes_1_to_600_seconds(timeout: str) -> None:
    client, nimbus, _ = ui_app(CONF, {"request_worker_action": {"request": "r"}})
    answer = client.post(f"{BASE}/profiling/start/ha:6700/{timeout}", headers=AUTH)
    assert answer.status_code == 400
    assert answer.json()["errorMessage"] == f"timeout {timeout!r} must be 1 to 600 seconds"
    assert nimbus.sent("request_worker_action") == []


def test_a_one_second_profile_is_accepted() -> None:
    client, nimbus, _ = ui_app(CONF, {"request_worker_action": {"request": "r"}})
    assert client.post(f"{BASE}/profiling/start/hb:6701/1", headers=AUTH).json()["timeout"] == 1
    assert nimbus.sent("request_worker_action")[0]["args"] == {"seconds": 1}


def test_a_worker_on_an_ipv6_host_is_named_by_its_last_colon(clock: DrivenClock) -> None:
    info = {**INFO, "workers": [{"node": "sup-a", "host": "::1", "port": 6700, "executors": [[1, 1]]}]}
    client, nimbus, _ = ui_app(
        CONF,
        {
            "get_topology_info": info,
            "request_worker_action": {"request": "sup-a-6700/1"},
            "worker_action_result": {"status": "done", "result": {"file": "stack.txt"}},
        },
    )
    answer = client.post(f"{BASE}/profiling/dumpjstack/::1:6700", headers=AUTH)
    assert answer.status_code == 200
    assert answer.json() == {
        "status": "done",
        "id": "::1:6700",
        "file": "stack.txt",
        "logLink": "http://[::1]:8000/log?file=stack.txt",
    }
    assert nimbus.sent("request_worker_action")[0]["host"] == "::1"


def test_a_topology_whose_info_lists_no_workers_has_none_to_dump_or_link() -> None:
    info = {key: value for key, value in INFO.items() if key != "workers"}
    client, nimbus, _ = ui_app(
        CONF,
        {
            "get_topology_info": info,
            "request_worker_action": {"request": "sup-a-6700/1"},
            "worker_action_result": {"status": "done", "result": {"file": "cpu.svg"}},
        },
    )
    missing = client.post(f"{BASE}/profiling/dumpheap/ha:6700", headers=AUTH)
    assert missing.status_code == 404
    assert missing.json()["errorMessage"] == "worker 'ha:6700' not found of topology 'wc-1'"
    assert nimbus.sent("request_worker_action") == []
    result = client.get(f"{BASE}/profiling/result/sup-a-6700/1", headers=AUTH)
    assert result.json() == {"status": "done", "id": ":6700", "file": "cpu.svg", "logLink": None}


def test_a_browser_on_an_open_ui_acts_with_its_csrf_cookie_and_header(clock: DrivenClock) -> None:
    client, nimbus, _ = ui_app(
        {},
        {
            "set_log_config": LEVELS,
            "request_worker_action": {"request": "sup-a-6700/1"},
            "worker_action_result": {"status": "done", "result": {"file": "f.txt"}},
        },
    )
    client.cookies.set("stormpy_csrf", "c0ffee")
    paths = (f"{BASE}/logconfig", f"{BASE}/profiling/dumpheap/ha:6700", f"{BASE}/profiling/start/ha:6700/5")
    for path in paths:
        refused = client.post(path, json=LEVELS, headers={"X-CSRF-Token": "other"})
        assert refused.status_code == 403 and refused.json()["errorMessage"].startswith("CSRF check failed")
    assert nimbus.sent("set_log_config") == [] and nimbus.sent("request_worker_action") == []
    for path in paths:
        assert client.post(path, json=LEVELS, headers={"X-CSRF-Token": "c0ffee"}).status_code == 200
    assert len(nimbus.sent("set_log_config")) == 1 and len(nimbus.sent("request_worker_action")) == 2
