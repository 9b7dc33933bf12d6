"""Running the UI (stormpy.ui._server): the address it binds (ui.host / ui.port or the caller's),
what ``stormpy ui`` prints, the sampler started and everything closed on stop, and a server that
cannot start closing its backend. One test serves on loopback for real; the others stand a
recording web thread in for uvicorn."""

from __future__ import annotations

import os
import threading
import urllib.request
from typing import Any

import pytest

if os.environ.get("CI", "").lower() != "true":  # in CI the [ui] extra is installed: no skip
    pytest.importorskip("starlette")

from stormpy.cluster.errors import ClusterStateError  # noqa: E402
from stormpy.ui import _server  # noqa: E402
from stormpy.ui._server import UiServer, run_ui  # noqa: E402
from stormpy.ui._source import UiBackend  # noqa: E402


class RecordingWeb:
    """Stands in for WebThread: records what it was built with and what was asked of it."""

    made: list[RecordingWeb] = []
    fail_start = False

    def __init__(self, app: Any, host: str, port: int, *, name: str, what: str) -> None:
        self.app, self.host, self.name, self.what = app, host, name, what
        self.asked_port = port
        self.port = port or 43210
        self.events: list[Any] = []
        RecordingWeb.made.append(self)

    @property
    def url(self) -> str:
        return f"http://url-of-{self.host}:{self.port}"

    def start(self, timeout_secs: float) -> None:
        self.events.append(("start", timeout_secs))
        if RecordingWeb.fail_start:
            raise RuntimeError("the UI did not start")

    def wait(self, stop: threading.Event) -> None:
        self.events.append(("wait", stop))

    def stop(self) -> None:
        self.events.append("stop")


class RecordingBackend:
    """Stands in for UiBackend: records its construction and start/close."""

    made: list[RecordingBackend] = []

    def __init__(self, conf: dict[str, Any], *, nimbus_address: str | None = None) -> None:
        self.conf, self.nimbus_address = conf, nimbus_address
        self.events: list[str] = []

        class Client:
            address = "nh:6627"

        self.client = Client()
        RecordingBackend.made.append(self)

    def start(self) -> RecordingBackend:
        self.events.append("start")
        return self

    def close(self) -> None:
        self.events.append("close")


@pytest.fixture(name="stand_ins")
def stand_ins_fixture(monkeypatch: pytest.MonkeyPatch) -> None:
    RecordingWeb.made.clear()
    RecordingWeb.fail_start = False
    RecordingBackend.made.clear()
    monkeypatch.setattr(_server, "WebThread", RecordingWeb)
    monkeypatch.setattr(_server, "UiBackend", RecordingBackend)
    monkeypatch.setattr(_server, "create_app", lambda backend: ("app of", backend))


def test_the_server_binds_ui_host_and_ui_port_or_the_caller_s(stand_ins: None) -> None:
    server = UiServer({"ui.host": "10.0.0.5", "ui.port": 9090, "x": 1}, nimbus_address="n:1")
    web, backend = RecordingWeb.made[0], RecordingBackend.made[0]
    assert (web.host, web.asked_port, web.name, web.what) == ("10.0.0.5", 9090, "stormpy-ui", "UI")
    assert web.app == ("app of", backend)
    assert backend.conf == {"ui.host": "10.0.0.5", "ui.port": 9090, "x": 1}
    assert backend.nimbus_address == "n:1"
    assert (server.host, server.port, server.bound) == ("10.0.0.5", 9090, "10.0.0.5:9090")
    assert server.url == "http://url-of-10.0.0.5:9090"
    UiServer({"ui.host": "10.0.0.5", "ui.port": 9090}, host="::1", port=0)
    assert (RecordingWeb.made[1].host, RecordingWeb.made[1].asked_port) == ("::1", 0)
    default = UiServer({})
    assert (default.host, RecordingWeb.made[2].asked_port) == ("127.0.0.1", 8080)
    assert RecordingBackend.made[2].nimbus_address is None


def test_an_ipv6_address_is_bound_in_brackets(stand_ins: None) -> None:
    assert UiServer({}, host="::", port=8080).bound == "[::]:8080"
    assert UiServer({}, host="0.0.0.0", port=8080).bound == "0.0.0.0:8080"


def test_start_starts_the_sampler_then_serves_and_stop_closes_both(stand_ins: None) -> None:
    server = UiServer({}, port=0)
    web, backend = RecordingWeb.made[0], RecordingBackend.made[0]
    with server as entered:
        assert entered is server
        assert backend.events == ["start"] and web.events == [("start", 20.0)]
    assert web.events == [("start", 20.0), "stop"] and backend.events == ["start", "close"]
    assert server.start(timeout_secs=5.0) is server
    assert web.events[-1] == ("start", 5.0)
    stop = threading.Event()
    server.wait(stop)
    assert web.events[-1] == ("wait", stop)


def test_a_server_that_cannot_start_closes_its_backend(stand_ins: None) -> None:
    RecordingWeb.fail_start = True
    server = UiServer({}, port=0)
    with pytest.raises(RuntimeError, match="did not start"):
        server.start()
    assert RecordingBackend.made[0].events == ["start", "close"]


def test_run_ui_prints_where_it_serves_then_stops_everything(stand_ins: None) -> None:
    printed: list[str] = []
    assert run_ui({"ui.host": "10.0.0.5", "ui.port": 9090}, nimbus_address="n:1", echo=printed.append) == 0
    assert printed == [
        "stormpy UI serving on 10.0.0.5:9090 (http://url-of-10.0.0.5:9090), Nimbus nh:6627; "
        "metrics on http://url-of-10.0.0.5:9090/metrics"
    ]
    web, backend = RecordingWeb.made[0], RecordingBackend.made[0]
    assert backend.nimbus_address == "n:1"
    assert [e if isinstance(e, str) else e[0] for e in web.events] == ["start", "wait", "stop"]
    assert backend.events == ["start", "close"]
    stop = threading.Event()
    for host in ("0.0.0.0", "::", ""):
        printed.clear()
        run_ui({"ui.host": host, "ui.port": 9090}, echo=printed.append, stop=stop)
        assert RecordingWeb.made[-1].events[1] == ("wait", stop)
        bound = "[::]:9090" if host == "::" else f"{host}:9090"
        url = RecordingWeb.made[-1].url
        assert printed == [
            f"stormpy UI serving on {bound} (every interface; {url} from this host), "
            f"Nimbus nh:6627; metrics on {url}/metrics"
        ]


def test_a_wait_that_fails_still_stops_the_server(stand_ins: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_wait(self: RecordingWeb, stop: threading.Event) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(RecordingWeb, "wait", broken_wait)
    with pytest.raises(KeyboardInterrupt):
        run_ui({}, echo=lambda text: None)
    assert RecordingWeb.made[0].events[-1] == "stop"
    assert RecordingBackend.made[0].events == ["start", "close"]


def test_the_ui_serves_on_loopback_until_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_zookeeper() -> Any:
        raise ClusterStateError("no ZooKeeper in this test")

    def backend(conf: dict[str, Any], *, nimbus_address: str | None = None) -> UiBackend:
        return UiBackend(conf, nimbus_address=nimbus_address, state_factory=no_zookeeper)

    monkeypatch.setattr(_server, "UiBackend", backend)
    server = UiServer(
        {"nimbus.seeds": ["127.0.0.1"], "nimbus.thrift.port": 1, "ui.poll.secs": 60}, host="127.0.0.1", port=0
    )
    with server:
        assert server.port > 0 and server.url == f"http://127.0.0.1:{server.port}"
        assert server.backend.sampler.running
        with urllib.request.urlopen(f"{server.url}/index.html", timeout=30) as page:
            assert page.status == 200 and b"stormpy UI" in page.read()
    assert not server.backend.sampler.running
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{server.url}/index.html", timeout=5)
