"""Where the UI's figures come from (stormpy.ui._source.UiBackend) over a scripted Nimbus and a
stand-in ZooKeeper: Nimbus's failures turned into 503s and 404s naming what is missing, refused
actions keeping Nimbus's error type, the cached spec and configuration, and the heartbeat
sampler's rounds (windows fed, launched times read once, gone topologies forgotten)."""

from __future__ import annotations

import os
from typing import Any

import pytest

if os.environ.get("CI", "").lower() != "true":  # in CI the [ui] extra is installed: no skip
    pytest.importorskip("starlette")

from stormpy.cluster import StormBase, WorkerHeartbeat  # noqa: E402
from stormpy.rpc.errors import (  # noqa: E402
    InvalidRequestError,
    NotFoundError,
    RpcError,
    RpcTimeoutError,
    UnreachableError,
)
from stormpy.ui._source import ActionRefused, BackendUnavailable, NotFound, UiBackend  # noqa: E402
from ui_nimbus_kit import INFO, ScriptedNimbus  # noqa: E402


def backend_with(
    answers: dict[str, Any] | None = None,
    conf: dict[str, Any] | None = None,
    state: Any = None,
    clock: Any = lambda: 50.0,
) -> tuple[UiBackend, ScriptedNimbus]:
    backend = UiBackend(conf or {}, state_factory=lambda: state, clock=clock)
    nimbus = ScriptedNimbus(answers)
    backend.client = nimbus  # type: ignore[assignment]
    return backend, nimbus


def test_the_nimbus_client_takes_the_ui_s_timeout_without_retries() -> None:
    backend = UiBackend(
        {"ui.nimbus.timeout.secs": 7, "ui.poll.secs": 0.5, "nimbus.seeds": ["nh"], "nimbus.thrift.port": 7000}
    )
    try:
        assert backend.client.timeout_secs == 7.0
        assert backend.client.retries == 0
        assert backend.client.connect_timeout_secs == 3.0
        assert backend.client.address == "nh:7000"
        assert backend.poll_secs == 0.5 and backend.sampler.interval == 0.5
        assert backend.sampler.name == "stormpy-ui-sampler"
    finally:
        backend.close()
    quick = UiBackend({"ui.nimbus.timeout.secs": 2}, nimbus_address="n2:6627")
    try:
        assert quick.client.connect_timeout_secs == 2.0 and quick.client.address == "n2:6627"
        assert quick.poll_secs == 2.0  # the default
        assert quick.conf == {"ui.nimbus.timeout.secs": 2}
    finally:
        quick.close()


@pytest.mark.parametrize("error", [UnreachableError("connection refused"), RpcTimeoutError("timed out")])
def test_a_nimbus_that_cannot_answer_is_unavailable_naming_it(error: RpcError) -> None:
    backend, _ = backend_with(
        {"get_cluster_info": error, "get_daemon_stats": error, "get_nimbus_conf": error}
    )
    for read in (backend.cluster_info, backend.daemon_stats, backend.nimbus_conf):
        with pytest.raises(BackendUnavailable) as down:
            read()
        assert str(down.value) == f"Nimbus at 127.0.0.1:6627 is not reachable: {error.message}"


def test_an_unknown_name_is_not_found_naming_the_topology() -> None:
    backend, _ = backend_with({"get_topology_files": NotFoundError("gone")})
    with pytest.raises(NotFound) as by_id:
        backend.spec("wc-9")
    assert str(by_id.value) == "topology 'wc-9' not found"
    assert (by_id.value.kind, by_id.value.name) == ("topology", "wc-9")
    with pytest.raises(NotFound) as by_name:
        backend.topology("nope")
    assert str(by_name.value) == "topology 'nope' not found"
    with pytest.raises(NotFound) as unnamed:
        backend.call("get_topology_files")
    assert str(unnamed.value) == "topology '' not found"
    with pytest.raises(NotFound) as with_where:
        raise NotFound("component", "c", " in topology 'wc-1'")
    assert str(with_where.value) == "component 'c' not found in topology 'wc-1'"


def test_reads_answer_nimbus_s_documents_as_copies() -> None:
    stats = {"rpc": {"calls": {}}}
    conf = {"nimbus.seeds": ["a"]}
    backend, nimbus = backend_with({"get_daemon_stats": stats, "get_nimbus_conf": conf})
    assert backend.daemon_stats() == stats and backend.daemon_stats() is not stats
    assert backend.nimbus_conf() == conf and backend.nimbus_conf() is not conf
    assert backend.cluster_info()["nimbus"]["host"] == "nh"
    assert [m for m, _ in nimbus.calls] == [
        "get_daemon_stats",
        "get_daemon_stats",
        "get_nimbus_conf",
        "get_nimbus_conf",
        "get_cluster_info",
    ]
    assert nimbus.calls[0][1] == {}


def test_a_nimbus_that_cannot_tell_its_configuration_is_unavailable() -> None:
    backend, _ = backend_with({"get_nimbus_conf": RpcError("unknown method 'get_nimbus_conf'")})
    with pytest.raises(BackendUnavailable) as old:
        backend.nimbus_conf()
    assert str(old.value) == (
        "Nimbus at 127.0.0.1:6627 did not give its configuration: unknown method 'get_nimbus_conf'"
    )
    backend.client.answers["get_nimbus_conf"] = UnreachableError("refused")  # type: ignore[attr-defined]
    with pytest.raises(BackendUnavailable, match="is not reachable: refused"):
        backend.nimbus_conf()


def test_a_topology_is_found_by_id_or_name_and_only_when_nimbus_answers_for_it() -> None:
    backend, nimbus = backend_with()
    assert backend.topology("wc-1") == INFO and backend.topology("wc") == INFO
    assert backend.topology("wc") is not INFO
    assert nimbus.sent("get_topology_info") == [{"name": "wc-1"}, {"name": "wc"}, {"name": "wc"}]
    with pytest.raises(NotFound, match="topology '' not found"):
        backend.topology("")
    assert len(nimbus.sent("get_topology_info")) == 3  # an empty id asks nothing
    nimbus.answers["get_topology_info"] = {**INFO, "id": "other-1", "name": "other"}
    with pytest.raises(NotFound, match="topology 'wc-1' not found"):
        backend.topology("wc-1")


def test_spec_and_configuration_are_read_once_per_topology() -> None:
    files = {"spec": {"components": {"s": {"kind": "spout"}}}, "conf": {"topology.workers": 2}}
    backend, nimbus = backend_with({"get_topology_files": files})
    assert backend.spec("wc-1") == files["spec"]
    assert backend.topology_conf("wc-1") == {"topology.workers": 2}
    assert backend.spec("wc-1") is backend.spec("wc-1")
    assert nimbus.sent("get_topology_files") == [{"topology_id": "wc-1"}]
    nimbus.answers["get_topology_files"] = {"spec": None}
    assert backend.spec("wc-2") == {} and backend.topology_conf("wc-2") == {}
    assert nimbus.sent("get_topology_files") == [{"topology_id": "wc-1"}, {"topology_id": "wc-2"}]


def test_actions_go_to_nimbus_by_the_topology_s_name() -> None:
    backend, nimbus = backend_with({"activate": None, "kill_topology": None, "rebalance": None})
    assert backend.action("activate", "wc-1") == "wc"
    assert backend.action("kill", "wc-1", wait_secs=3.0) == "wc"
    assert backend.action("rebalance", "wc", wait_secs=0.0, num_workers=2) == "wc"
    writes = [(m, a) for m, a in nimbus.calls if m != "get_topology_info"]
    assert writes == [
        ("activate", {"name": "wc"}),
        ("kill_topology", {"name": "wc", "wait_secs": 3.0}),
        ("rebalance", {"name": "wc", "wait_secs": 0.0, "num_workers": 2}),
    ]


def test_a_refused_action_keeps_nimbus_s_error_type_and_message() -> None:
    backend, _ = backend_with(
        {
            "deactivate": InvalidRequestError("topology wc is not active"),
            "rebalance": RpcError("newer", remote_type="FancyError"),
            "activate": RpcError("plain"),
        }
    )
    with pytest.raises(ActionRefused) as invalid:
        backend.action("deactivate", "wc-1")
    assert (invalid.value.kind, invalid.value.message) == ("InvalidRequestError", "topology wc is not active")
    assert str(invalid.value) == "InvalidRequestError: topology wc is not active"
    with pytest.raises(ActionRefused) as remote:
        backend.action("rebalance", "wc-1")
    assert (remote.value.kind, remote.value.message) == ("FancyError", "newer")
    with pytest.raises(ActionRefused) as plain:
        backend.action("activate", "wc-1")
    assert plain.value.kind == "RpcError"


class Reachability:
    address = "127.0.0.1:6627"

    def __init__(self, reachable: bool, pong: Any) -> None:
        self.reachable, self.pong = reachable, pong
        self.pings: list[float] = []

    def check_reachable(self) -> None:
        if not self.reachable:
            raise UnreachableError("refused")

    def ping(self, timeout: float) -> Any:
        self.pings.append(timeout)
        if isinstance(self.pong, BaseException):
            raise self.pong
        return self.pong

    def close(self) -> None:
        pass


@pytest.mark.parametrize(
    ("reachable", "pong", "expected"),
    [
        (True, "pong", True),
        (True, None, False),
        (False, "pong", False),
        (True, RpcTimeoutError("slow"), False),
    ],
)
def test_nimbus_is_reachable_only_when_it_answers_a_ping(reachable: bool, pong: Any, expected: bool) -> None:
    backend = UiBackend({}, state_factory=lambda: None)  # type: ignore[arg-type,return-value]
    probe = Reachability(reachable, pong)
    backend.client = probe  # type: ignore[assignment]
    assert backend.nimbus_reachable() is expected
    assert probe.pings == ([2.0] if reachable else [])


class StandInState:
    """What the sampler reads from ZooKeeper: supervisors, topologies and their launch times."""

    def __init__(self, topologies: list[str]) -> None:
        self.live = topologies
        self.bases: list[str] = []
        self.closed = 0

    def supervisors(self) -> dict[str, Any]:
        class Info:
            host = "ha"

        return {"sup-a": Info()}

    def topologies(self) -> list[str]:
        return list(self.live)

    def storm_base(self, topology_id: str) -> StormBase | None:
        self.bases.append(topology_id)
        return StormBase(topology_id, "wc", "active", 1, 900.0, "me") if topology_id == "wc-1" else None

    def close(self) -> None:
        self.closed += 1


def heartbeat(topology_id: str, time: float, uptime: float, acked: int) -> WorkerHeartbeat:
    return WorkerHeartbeat(
        topology_id=topology_id,
        node="sup-a",
        port=6700,
        time=time,
        uptime=uptime,
        executors=((1, 1),),
        tasks=(
            {
                "task": 1,
                "component": "spout",
                "emitted": {"default": acked},
                "transferred": acked,
                "executed": 0,
                "acked": acked,
                "failed": 0,
                "latency_sum": 0.0,
                "latency_count": 0,
            },
        ),
    )


def test_each_sample_feeds_the_windows_of_the_topologies_with_heartbeats() -> None:
    state = StandInState(["wc-2", "wc-1", "idle-3"])
    now = [1000.0]
    backend, nimbus = backend_with(state=state, clock=lambda: now[0])
    beats = {
        "wc-1": {("sup-a", 6700): heartbeat("wc-1", 999.0, 99.0, 5)},
        "wc-2": {("sup-a", 6700): heartbeat("wc-2", 999.0, 99.0, 7)},
    }
    asked: list[str] = []

    def worker_heartbeats(topology_id: str) -> dict[Any, Any]:
        asked.append(topology_id)
        return beats.get(topology_id, {})

    nimbus.worker_heartbeats = worker_heartbeats  # type: ignore[method-assign]
    backend._specs["gone-9"] = ({}, {})
    backend._specs["wc-1"] = ({}, {})
    backend.sample()
    assert asked == ["idle-3", "wc-1", "wc-2"]  # in id order
    assert backend.hosts == {"sup-a": "ha"}
    assert set(backend.latest) == {"wc-1", "wc-2"} and backend.latest["wc-1"] == beats["wc-1"]
    assert set(backend.windows) == {"wc-1", "wc-2"}  # no window for a topology without heartbeats
    assert backend.windows["wc-1"].launched == 900.0 and backend.windows["wc-2"].launched is None
    assert set(backend._specs) == {"wc-1"}  # the spec of a killed topology is forgotten
    assert backend.samples == 1
    figures = backend.windows["wc-1"].figures(":all-time", 1000.0, [(1, 1)])
    assert figures.component("spout").acked == 5
    assert state.bases == ["wc-1", "wc-2"]
    now[0] = 1002.0
    beats["wc-1"] = {("sup-a", 6700): heartbeat("wc-1", 1001.0, 101.0, 9)}
    backend.sample()
    assert state.bases == ["wc-1", "wc-2", "wc-2"]  # a known launch time is not read again
    assert backend.windows["wc-1"].figures(":all-time", 1002.0, [(1, 1)]).component("spout").acked == 9
    assert backend.samples == 2
    # wc-2 killed, wc-1 without heartbeats for a moment: wc-1's window stays (it is live)
    state.live = ["wc-1"]
    beats.clear()
    backend.sample()
    assert backend.latest == {}
    assert set(backend.windows) == {"wc-1"}
    assert backend.samples == 3


def test_the_state_is_opened_once_and_closed_with_the_backend() -> None:
    state = StandInState([])
    opened: list[StandInState] = []

    def factory() -> StandInState:
        opened.append(state)
        return state

    backend = UiBackend({}, state_factory=factory)  # type: ignore[arg-type,return-value]
    closed: list[bool] = []
    backend.client.close = lambda: closed.append(True)  # type: ignore[method-assign]
    assert opened == []  # nothing opened before it is needed
    assert backend.state is state and backend.state is state
    assert opened == [state]
    backend.close()
    assert state.closed == 1 and closed == [True]
    backend.close()  # a second close closes no state twice
    assert state.closed == 1


def test_the_sampler_runs_in_its_thread_until_closed() -> None:
    from stormpy.testing import wait_for

    state = StandInState(["wc-1"])
    backend, nimbus = backend_with(state=state, conf={"ui.poll.secs": 0.1})
    nimbus.worker_heartbeats = lambda topology_id: {("sup-a", 6700): heartbeat("wc-1", 49.0, 9.0, 1)}  # type: ignore[method-assign]
    assert backend.start() is backend
    try:
        wait_for(lambda: backend.samples >= 2, timeout=60, what="two samples")
    finally:
        backend.close()
    assert not backend.sampler.running
    assert state.closed == 1


def test_a_window_is_made_once_at_the_clock_s_time() -> None:
    ticks = iter([10.0, 20.0])
    backend, _ = backend_with(clock=lambda: next(ticks))
    first = backend.window("wc-1")
    assert backend.window("wc-1") is first and first.started == 10.0
    assert backend.window("wc-2").started == 20.0


def test_without_a_state_factory_the_ui_opens_the_cluster_state_of_its_conf(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from stormpy.ui import _source

    opened: list[Any] = []
    state = StandInState([])

    def from_config(conf: Any) -> StandInState:
        opened.append(conf)
        return state

    monkeypatch.setattr(_source.ClusterState, "from_config", staticmethod(from_config))
    backend = UiBackend({"storm.zookeeper.servers": ["zk1"], "ui.poll.secs": 1})
    assert opened == []
    assert backend.state is state
    assert opened == [{"storm.zookeeper.servers": ["zk1"], "ui.poll.secs": 1}]
    backend.close()


def test_an_outage_is_warned_about_under_the_ui_s_logger_and_a_bug_logged_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from stormpy.cluster.errors import ClusterStateError

    failures: list[Exception] = [ClusterStateError("zk down"), OSError("reset"), KeyError("bug")]

    def factory() -> Any:
        raise failures.pop(0)

    backend = UiBackend({"ui.poll.secs": 4}, state_factory=factory)
    nimbus = ScriptedNimbus()
    backend.client = nimbus  # type: ignore[assignment]
    caplog.set_level("WARNING", logger="stormpy.ui._source")
    assert [backend.sampler.run_once() for _ in range(3)] == [4.0, 4.0, 4.0]  # the UI keeps sampling
    records = [r for r in caplog.records if r.name == "stormpy.ui._source"]
    assert [(r.levelname, r.exc_info is not None) for r in records] == [
        ("WARNING", False),
        ("ERROR", True),
    ]  # the second outage in a row is not warned about again
    assert "zk down" in records[0].getMessage() and "stormpy-ui-sampler" in records[0].getMessage()
    # a Nimbus that cannot give heartbeats is an outage too
    backend._state_factory = lambda: StandInState(["wc-1"])  # type: ignore[assignment,return-value]

    backend.sampler.run_once()  # a good round: the next failure is the first in a row

    def refused(topology_id: str) -> Any:
        raise UnreachableError("refused")

    nimbus.worker_heartbeats = refused  # type: ignore[method-assign]
    caplog.clear()
    backend.sampler.run_once()
    assert [
        (r.levelname, r.exc_info is not None) for r in caplog.records if r.name == "stormpy.ui._source"
    ] == [("WARNING", False)]
    backend.close()
