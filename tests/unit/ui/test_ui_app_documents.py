"""The REST documents (stormpy.ui._stormdocs), whole and exact: Storm's field names, uptimes as
Storm writes them, counters as ints, latencies and capacity as three-decimal strings, figures not
measured left out, and each document's rows in their order. The window figures are stood in for
(their own tests are test_ui_window_figures.py): these functions only name and format them."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy.config import DEFAULTS
from stormpy.ui._stormdocs import (
    cluster_summary,
    component_doc,
    component_stats,
    duration,
    events_doc,
    executor_ranges,
    nimbus_summary,
    spec_tasks,
    subscribers,
    supervisor_summary,
    topology_doc,
    topology_stats,
    topology_summary,
    topology_workers,
    user_metric_rows,
    visualization,
)
from stormpy.ui._windows import WINDOWS, ComponentFigures, TopologyFigures


def figures(
    emitted: int = 0,
    *,
    transferred: int = 0,
    acked: int = 0,
    failed: int = 0,
    executed: int = 0,
    streams: dict[str, int] | None = None,
    complete: float | None = None,
    execute: float | None = None,
    process: float | None = None,
    capacity: float | None = None,
) -> ComponentFigures:
    return ComponentFigures(
        emitted=emitted,
        transferred=transferred,
        acked=acked,
        failed=failed,
        executed=executed,
        streams=streams or {},
        complete_latency_ms=complete,
        execute_latency_ms=execute,
        process_latency_ms=process,
        capacity=capacity,
    )


class StandInWindow:
    """What the documents read of a window: its name, span, and figures per component/executor."""

    def __init__(
        self,
        window: str,
        components: dict[str, ComponentFigures] | None = None,
        executors: dict[tuple[str, int, int], ComponentFigures] | None = None,
        span: float = 10.0,
    ) -> None:
        self.window = window
        self.pretty = f"pretty {window}"
        self.span = span
        self.components = components or {}
        self.executors = executors or {}
        self.spouts_asked: list[set[str]] = []

    def component(self, name: str) -> ComponentFigures:
        return self.components.get(name, figures())

    def executor(self, component: str, start: int, end: int) -> ComponentFigures | None:
        return self.executors.get((component, start, end))

    def topology(self, spouts: Any) -> TopologyFigures:
        self.spouts_asked.append(set(spouts))
        n = WINDOWS.index(self.window) + 1
        return TopologyFigures(
            emitted=100 * n,
            transferred=90 * n,
            acked=80 * n,
            failed=n,
            complete_latency_ms=1.5 * n if n < 4 else None,
        )


SPEC = {
    "components": {
        "words": {"kind": "spout", "tasks": 1, "inputs": []},
        "split": {
            "kind": "bolt",
            "parallelism": 2,
            "inputs": [{"component": "words", "stream": "default", "grouping": {"type": "shuffle"}}],
        },
        "count": {
            "kind": "bolt",
            "inputs": [
                {"component": "split", "stream": "default", "grouping": {"type": "fields", "fields": ["w"]}},
                {"component": "words", "stream": "__tick", "grouping": "all"},
            ],
        },
        "audit": {
            "kind": "bolt",
            "tasks": 3,
            "parallelism": 1,
            "inputs": [
                {"component": "split", "stream": "default"},
                {"component": "split", "stream": "odd_words"},
            ],
        },
    }
}

INFO: dict[str, Any] = {
    "id": "wc-1",
    "name": "wc",
    "status": "active",
    "uptime_secs": 90061.7,
    "num_workers": 2,
    "num_executors": 6,
    "num_tasks": 7,
    "owner": "ann",
    "requested_workers": 3,
    "worker_restarts": 4,
    "workers": [
        {
            "node": "sup-a",
            "host": "ha",
            "port": 6700,
            "executors": [[1, 1], [2, 3]],
            "uptime_secs": 125.9,
            "restarts": 2,
            "last_exit": "exit 1",
            "crash_looping": 1,
        },
        {"node": "sup-b", "host": "hb", "port": 6701, "executors": [[4, 4]]},
    ],
    "components": {"words": {"tasks": 1, "executors": 1}, "split": {"tasks": 2, "executors": 2}},
    "errors": {
        "split": [
            {"time": 100.0, "task": 2, "host": "ha", "port": 6700, "message": "first"},
            {"time": 150.0, "task": 3, "host": "hb", "port": 6701, "message": "boom"},
        ]
    },
    "debug": {"wc-1": {"enable": True, "samplingpct": 5}, "split": {"enable": False, "samplingpct": 50}},
}


@pytest.mark.parametrize(
    ("secs", "text"),
    [
        (None, "0s"),
        (0, "0s"),
        (59.9, "59s"),
        (60, "1m 0s"),
        (3599, "59m 59s"),
        (3600, "1h 0m 0s"),
        (3661, "1h 1m 1s"),
        (86399, "23h 59m 59s"),
        (86400, "1d 0h 0m 0s"),
        (90061.7, "1d 1h 1m 1s"),
        (10 * 86400 + 5, "10d 0h 0m 5s"),
    ],
)
def test_uptimes_are_written_as_storm_writes_them(secs: float | None, text: str) -> None:
    assert duration(secs) == text


def test_the_nimbus_summary_lists_every_nimbus_or_the_answering_one_as_leader() -> None:
    listed = {
        "nimbuses": [
            {"host": "n1", "port": 6627, "status": "Leader", "version": "1", "uptime_secs": 61.5},
            {"host": "n2", "port": 6628, "status": "Not a Leader", "version": "1"},
        ],
        "nimbus": {"host": "ignored"},
    }
    assert nimbus_summary(listed) == {
        "nimbuses": [
            {
                "host": "n1",
                "port": 6627,
                "status": "Leader",
                "version": "1",
                "nimbusUpTime": "1m 1s",
                "nimbusUpTimeSeconds": 61,
            },
            {
                "host": "n2",
                "port": 6628,
                "status": "Not a Leader",
                "version": "1",
                "nimbusUpTime": "0s",
                "nimbusUpTimeSeconds": 0,
            },
        ]
    }
    alone = {"nimbus": {"host": "n1", "port": 6627, "version": "2", "uptime_secs": 3600.0}}
    assert nimbus_summary(alone) == {
        "nimbuses": [
            {
                "host": "n1",
                "port": 6627,
                "status": "Leader",
                "version": "2",
                "nimbusUpTime": "1h 0m 0s",
                "nimbusUpTimeSeconds": 3600,
            }
        ]
    }
    assert nimbus_summary({"nimbuses": []}) == {"nimbuses": []}
    assert nimbus_summary({})["nimbuses"][0]["status"] == "Leader"


def test_the_supervisor_summary() -> None:
    cluster = {
        "supervisors": [
            {
                "id": "s1",
                "host": "h1",
                "uptime_secs": 61.2,
                "slots_total": 4,
                "slots_used": 1,
                "version": "v",
                "ports": (6700, 6701),
            },
            {"id": "s2", "host": "h2", "uptime_secs": 5, "slots_total": 2, "slots_used": 2},
        ]
    }
    assert supervisor_summary(cluster) == {
        "supervisors": [
            {
                "id": "s1",
                "host": "h1",
                "uptime": "1m 1s",
                "uptimeSeconds": 61,
                "slotsTotal": 4,
                "slotsUsed": 1,
                "slotsFree": 3,
                "version": "v",
                "ports": [6700, 6701],
            },
            {
                "id": "s2",
                "host": "h2",
                "uptime": "5s",
                "uptimeSeconds": 5,
                "slotsTotal": 2,
                "slotsUsed": 2,
                "slotsFree": 0,
                "version": None,
                "ports": [],
            },
        ]
    }
    assert supervisor_summary({}) == {"supervisors": []}


ROW = {
    "id": "wc-1",
    "encodedId": "wc-1",
    "name": "wc",
    "status": "ACTIVE",
    "uptime": "1d 1h 1m 1s",
    "uptimeSeconds": 90061,
    "workersTotal": 2,
    "executorsTotal": 6,
    "requestedWorkers": 3,
    "owner": "ann",
    "workerRestarts": 4,
    "degraded": None,
    "tasksTotal": 7,
}


def test_the_topology_summary_and_the_cluster_s_totals() -> None:
    old = {
        "id": "old-2",
        "name": "old",
        "status": "inactive",
        "uptime_secs": 1,
        "num_workers": 1,
        "num_executors": 2,
    }
    cluster = {
        "topologies": [INFO, old],
        "supervisors": [{"slots_total": 4, "slots_used": 3}, {"slots_total": 2, "slots_used": 0}],
        "nimbus": {"uptime_secs": 7.9},
    }
    rows = topology_summary(cluster)["topologies"]
    assert rows[0] == ROW
    assert rows[1] == {
        "id": "old-2",
        "encodedId": "old-2",
        "name": "old",
        "status": "INACTIVE",
        "uptime": "1s",
        "uptimeSeconds": 1,
        "workersTotal": 1,
        "executorsTotal": 2,
        "requestedWorkers": None,
        "owner": "",
        "workerRestarts": None,
        "degraded": None,
    }
    assert cluster_summary(cluster, "9.9") == {
        "stormVersion": "9.9",
        "supervisors": 2,
        "topologies": 2,
        "slotsTotal": 6,
        "slotsUsed": 3,
        "slotsFree": 3,
        "executorsTotal": 8,
        "tasksTotal": 7,
        "nimbusUptime": "7s",
        "nimbusUptimeSeconds": 7,
    }
    assert cluster_summary({}, "1") == {
        "stormVersion": "1",
        "supervisors": 0,
        "topologies": 0,
        "slotsTotal": 0,
        "slotsUsed": 0,
        "slotsFree": 0,
        "executorsTotal": 0,
        "tasksTotal": 0,
        "nimbusUptime": "0s",
        "nimbusUptimeSeconds": 0,
    }
    assert topology_summary({}) == {"topologies": []}


def test_task_counts_come_from_tasks_else_parallelism_else_one() -> None:
    assert spec_tasks(SPEC) == {"words": 1, "split": 2, "count": 1, "audit": 3}
    assert spec_tasks({}) == {}


def test_component_stats_name_and_format_what_was_measured() -> None:
    spout = figures(10, transferred=9, acked=8, failed=1, executed=99, complete=1.23456, execute=5.0)
    assert component_stats("spout", spout) == {
        "emitted": 10,
        "transferred": 9,
        "acked": 8,
        "failed": 1,
        "completeLatency": "1.235",
    }
    assert component_stats("spout", figures())["completeLatency"] == "0.000"
    bolt = figures(
        3, transferred=2, acked=4, failed=0, executed=5, execute=0.5, process=0.25, capacity=0.12345
    )
    assert component_stats("bolt", bolt) == {
        "emitted": 3,
        "transferred": 2,
        "acked": 4,
        "failed": 0,
        "executed": 5,
        "executeLatency": "0.500",
        "capacity": "0.123",
        "processLatency": "0.250",
    }
    unmeasured = figures(executed=5)
    assert component_stats("bolt", unmeasured) == {
        "emitted": 0,
        "transferred": 0,
        "acked": 0,
        "failed": 0,
        "executed": 5,
    }
    assert component_stats("bolt", figures(execute=0.0, capacity=None)) == {
        "emitted": 0,
        "transferred": 0,
        "acked": 0,
        "failed": 0,
        "executed": 0,
        "executeLatency": "0.000",
        "capacity": "0.000",
    }
    assert component_stats("bolt", figures(process=0.0)) == {
        "emitted": 0,
        "transferred": 0,
        "acked": 0,
        "failed": 0,
        "executed": 0,
        "processLatency": "0.000",
    }


def test_executor_ranges_of_every_worker() -> None:
    assert executor_ranges(INFO) == [(1, 1), (2, 3), (4, 4)]
    assert executor_ranges({"workers": [{"executors": [["5", "6"]]}]}) == [(5, 6)]
    assert executor_ranges({}) == []


def test_topology_stats_one_row_per_window_over_the_spouts() -> None:
    per_window = {w: StandInWindow(w) for w in WINDOWS}
    rows = topology_stats(SPEC, per_window)
    assert rows == [
        {
            "window": w,
            "windowPretty": f"pretty {w}",
            "emitted": 100 * n,
            "transferred": 90 * n,
            "acked": 80 * n,
            "failed": n,
            "completeLatency": f"{1.5 * n:.3f}" if n < 4 else "0.000",
        }
        for n, w in enumerate(WINDOWS, start=1)
    ]
    assert all(win.spouts_asked == [{"words"}] for win in per_window.values())


def per_window_of(window: str, **parts: Any) -> dict[str, Any]:
    return {w: (StandInWindow(w, **parts) if w == window else StandInWindow(w)) for w in WINDOWS}


def test_the_topology_document() -> None:
    per_window = per_window_of(
        "600",
        components={
            "words": figures(40, transferred=40, acked=30, failed=2, complete=12.5),
            "split": figures(80, transferred=80, acked=40, executed=40, execute=0.5, capacity=0.25),
        },
    )
    doc = topology_doc(INFO, SPEC, {"topology.message.timeout.secs": 7, "x": 1}, "600", per_window, 160.4)
    expected_conf = {**DEFAULTS, "topology.message.timeout.secs": 7, "x": 1}
    assert doc == {
        **ROW,
        "window": "600",
        "windowHint": "pretty 600",
        "msgTimeout": 7,
        "topologyStats": topology_stats(SPEC, per_window),
        "configuration": expected_conf,
        "debug": True,
        "samplingPct": 5,
        "workers": [
            {
                "host": "ha",
                "port": 6700,
                "supervisorId": "sup-a",
                "executors": [[1, 1], [2, 3]],
                "uptime": "2m 5s",
                "uptimeSeconds": 125,
                "restarts": 2,
                "lastExit": "exit 1",
                "crashLooping": True,
            },
            {
                "host": "hb",
                "port": 6701,
                "supervisorId": "sup-b",
                "executors": [[4, 4]],
                "uptime": None,
                "uptimeSeconds": None,
                "restarts": None,
                "lastExit": None,
                "crashLooping": False,
            },
        ],
        "spouts": [
            {
                "spoutId": "words",
                "encodedSpoutId": "words",
                "executors": 1,
                "tasks": 1,
                "emitted": 40,
                "transferred": 40,
                "acked": 30,
                "failed": 2,
                "completeLatency": "12.500",
                "lastError": "",
                "errorHost": "",
                "errorPort": "",
                "errorLapsedSecs": None,
            }
        ],
        "bolts": [
            {"boltId": name, "encodedBoltId": name, **row}
            for name, row in [
                (
                    "audit",
                    {
                        "executors": None,
                        "tasks": 3,
                        "emitted": 0,
                        "transferred": 0,
                        "acked": 0,
                        "failed": 0,
                        "executed": 0,
                        "lastError": "",
                        "errorHost": "",
                        "errorPort": "",
                        "errorLapsedSecs": None,
                    },
                ),
                (
                    "count",
                    {
                        "executors": None,
                        "tasks": 1,
                        "emitted": 0,
                        "transferred": 0,
                        "acked": 0,
                        "failed": 0,
                        "executed": 0,
                        "lastError": "",
                        "errorHost": "",
                        "errorPort": "",
                        "errorLapsedSecs": None,
                    },
                ),
                (
                    "split",
                    {
                        "executors": 2,
                        "tasks": 2,
                        "emitted": 80,
                        "transferred": 80,
                        "acked": 40,
                        "failed": 0,
                        "executed": 40,
                        "executeLatency": "0.500",
                        "capacity": "0.250",
                        "lastError": "boom",
                        "errorHost": "hb",
                        "errorPort": 6701,
                        "errorTime": 150.0,
                        "errorLapsedSecs": 10,
                    },
                ),
            ]
        ],
    }
    # the defaults' timeout when the topology has none; an error from the future is 0 s ago
    doc = topology_doc({**INFO, "debug": {}}, SPEC, {}, "600", per_window, 120.0)
    assert doc["msgTimeout"] == DEFAULTS["topology.message.timeout.secs"]
    assert (doc["debug"], doc["samplingPct"]) == (False, 10)
    assert doc["bolts"][2]["errorLapsedSecs"] == 0


def test_topology_workers_as_a_host_port_list() -> None:
    assert topology_workers(INFO) == {
        "hostPortList": [{"host": "ha", "port": 6700}, {"host": "hb", "port": 6701}]
    }
    assert topology_workers({}) == {"hostPortList": []}


def test_the_document_of_a_bolt() -> None:
    split_a = figures(5, transferred=5, acked=5, executed=5, execute=1.0, capacity=0.5)
    split_b = figures(7, transferred=7, acked=7, executed=7)
    per_window = per_window_of(
        ":all-time",
        components={
            "split": figures(
                12,
                transferred=12,
                acked=12,
                executed=12,
                execute=0.75,
                capacity=0.5,
                streams={"default": 10, "odd_words": 2, "__ack_ack": 12},
            )
        },
        executors={("split", 2, 3): split_a, ("split", 4, 4): split_b},
    )
    info = {
        **INFO,
        "workers": [{**INFO["workers"][0]}, {**INFO["workers"][1], "uptime_secs": 30.0}],
        "metrics": {
            "split": {
                "10": {"b": 1, "a": {"type": "counter", "count": 3}},
                "2": {"z": {"type": "nope", "x": 1}},
                "-1": {"m": 0},
                "-2": {"n": 0},
            },
            "words": {"1": {"q": 1}},
        },
    }
    doc = component_doc(info, SPEC, "split", ":all-time", per_window, 200.0)
    assert doc == {
        "id": "split",
        "name": "wc",
        "componentType": "bolt",
        "topologyId": "wc-1",
        "encodedTopologyId": "wc-1",
        "topologyStatus": "ACTIVE",
        "window": ":all-time",
        "windowHint": "pretty :all-time",
        "tasks": 2,
        "executors": 2,
        "debug": False,
        "samplingPct": 50,
        "boltStats": [
            {
                "window": w,
                "windowPretty": f"pretty {w}",
                **component_stats("bolt", per_window[w].component("split")),
            }
            for w in WINDOWS
        ],
        # the stream's tuples, times its subscribers (count and audit both take default)
        "outputStats": [
            {"stream": "default", "emitted": 10, "transferred": 20},
            {"stream": "odd_words", "emitted": 2, "transferred": 2},
        ],
        "inputStats": [
            {"component": "words", "encodedComponent": "words", "stream": "default", "grouping": "shuffle"}
        ],
        "executorStats": [
            {
                "id": "[2-3]",
                "encodedId": "2-3",
                "host": "ha",
                "port": 6700,
                "supervisorId": "sup-a",
                "uptime": "2m 5s",
                "uptimeSeconds": 125,
                **component_stats("bolt", split_a),
            },
            {
                "id": "[4-4]",
                "encodedId": "4-4",
                "host": "hb",
                "port": 6701,
                "supervisorId": "sup-b",
                "uptime": "30s",
                "uptimeSeconds": 30,
                **component_stats("bolt", split_b),
            },
        ],
        "componentErrors": [
            {
                "time": 150.0,
                "errorTime": 150.0,
                "errorHost": "hb",
                "errorPort": 6701,
                "error": "boom",
                "task": 3,
                "errorLapsedSecs": 50,
            },
            {
                "time": 100.0,
                "errorTime": 100.0,
                "errorHost": "ha",
                "errorPort": 6700,
                "error": "first",
                "task": 2,
                "errorLapsedSecs": 100,
            },
        ],
        "userMetrics": [
            {"task": -2, "name": "n", "type": "metric", "value": 0},  # by number, negative ones first
            {"task": -1, "name": "m", "type": "metric", "value": 0},
            {"task": 2, "name": "z", "type": "metric", "value": {"type": "nope", "x": 1}},
            {"task": 10, "name": "a", "type": "counter", "count": 3},
            {"task": 10, "name": "b", "type": "metric", "value": 1},
        ],
    }
    assert doc["executorStats"][0]["executeLatency"] == "1.000"


def test_the_document_of_a_spout_and_of_an_executor_without_uptime() -> None:
    per_window = per_window_of(
        "600",
        components={"words": figures(3, complete=2.0, streams={"default": 3})},
        executors={("words", 1, 1): figures(3, complete=2.0)},
    )
    info = {**INFO, "workers": [{**INFO["workers"][0], "uptime_secs": None}], "errors": {}}
    doc = component_doc(info, SPEC, "words", "600", per_window, 0.0)
    assert doc["componentType"] == "spout" and "boltStats" not in doc and "inputStats" not in doc
    assert doc["spoutSummary"][0] == {
        "window": "600",
        "windowPretty": "pretty 600",
        "emitted": 3,
        "transferred": 0,
        "acked": 0,
        "failed": 0,
        "completeLatency": "2.000",
    }
    assert [r["window"] for r in doc["spoutSummary"]] == list(WINDOWS)
    assert doc["outputStats"] == [{"stream": "default", "emitted": 3, "transferred": 3}]  # split alone
    assert doc["executorStats"] == [
        {
            "id": "[1-1]",
            "encodedId": "1-1",
            "host": "ha",
            "port": 6700,
            "supervisorId": "sup-a",
            "uptime": None,
            "uptimeSeconds": None,
            "emitted": 3,
            "transferred": 0,
            "acked": 0,
            "failed": 0,
            "completeLatency": "2.000",
        }
    ]
    assert doc["componentErrors"] == [] and doc["userMetrics"] == []
    # the topology's debug settings when the component has none of its own
    assert (doc["debug"], doc["samplingPct"]) == (True, 5)
    # inputs without a grouping, or one named by a string
    count = component_doc(INFO, SPEC, "count", "600", per_window, 0.0)
    assert [i["grouping"] for i in count["inputStats"]] == ["fields", "all"]
    audit = component_doc(INFO, SPEC, "audit", "600", per_window, 0.0)
    assert [(i["stream"], i["grouping"]) for i in audit["inputStats"]] == [("default", ""), ("odd_words", "")]
    assert audit["tasks"] == 3 and audit["executors"] is None


def test_subscribers_of_a_stream_in_name_order() -> None:
    assert subscribers(SPEC, "split", "default") == ["audit", "count"]
    assert subscribers(SPEC, "words", "default") == ["split"]
    assert subscribers(SPEC, "words", "__tick") == ["count"]
    assert subscribers(SPEC, "split", "none") == [] and subscribers({}, "a", "b") == []


def test_events_newest_first_with_their_worker() -> None:
    class Beat:
        def __init__(self, *events: dict[str, Any]) -> None:
            self.events = events

    beats = {
        ("sup-a", 6700): Beat({"component": "words", "ts": 5.0, "v": 1}, {"component": "split", "ts": 7.0}),
        ("sup-gone", 6702): Beat({"component": "words", "ts": 6.0}, {"component": "words"}),
        ("sup-b", 6701): object(),
    }
    doc = events_doc(INFO, beats, None)
    assert doc == {
        "topologyId": "wc-1",
        "name": "wc",
        "debug": INFO["debug"],
        "events": [
            {"component": "split", "ts": 7.0, "host": "ha", "port": 6700},
            {"component": "words", "ts": 6.0, "host": "sup-gone", "port": 6702},
            {"component": "words", "ts": 5.0, "v": 1, "host": "ha", "port": 6700},
            {"component": "words", "host": "sup-gone", "port": 6702},
        ],
    }
    only = events_doc({**INFO, "debug": None}, beats, "split")
    assert only["events"] == [{"component": "split", "ts": 7.0, "host": "ha", "port": 6700}]
    assert events_doc({"id": "x", "name": "x"}, {}, None) == {
        "topologyId": "x",
        "name": "x",
        "debug": {},
        "events": [],
    }


def test_user_metric_rows_by_task_then_name() -> None:
    info = {
        "metrics": {
            "c": {
                "3": {"lat": {"type": "timer", "count": 2, "p99": 1.5}, "errs": 4},
                "12": {"q": {"type": "gauge", "value": 7}},
            }
        }
    }
    assert user_metric_rows(info, "c") == [
        {"task": 3, "name": "errs", "type": "metric", "value": 4},
        {"task": 3, "name": "lat", "type": "timer", "count": 2, "p99": 1.5},
        {"task": 12, "name": "q", "type": "gauge", "value": 7},
    ]
    assert user_metric_rows(info, "other") == [] and user_metric_rows({}, "c") == []


def test_the_visualization_map() -> None:
    window = StandInWindow(
        "600",
        span=4.0,
        components={
            "words": figures(
                40, transferred=38, acked=30, failed=2, complete=12.5, streams={"default": 40, "__tick": 3}
            ),
            "split": figures(
                80, transferred=80, acked=40, executed=40, execute=0.5, capacity=0.9, streams={"default": 7}
            ),
            "count": figures(executed=3, process=0.5),
        },
    )
    vis = visualization(SPEC, INFO, window)  # type: ignore[arg-type]
    assert list(vis) == ["audit", "count", "split", "words"]
    assert vis["words"] == {
        ":type": "spout",
        ":transferred": 38,
        ":emitted": 40,
        ":acked": 30,
        ":failed": 2,
        ":link": "/component.html?topology_id=wc-1&id=words",
        ":inputs": [],
        ":latency": "12.500",
    }
    assert vis["split"] == {
        ":type": "bolt",
        ":transferred": 80,
        ":emitted": 80,
        ":acked": 40,
        ":failed": 0,
        ":link": "/component.html?topology_id=wc-1&id=split",
        ":capacity": "0.900",
        ":latency": "0.500",
        ":inputs": [
            {
                ":component": "words",
                ":stream": "default",
                ":sani-stream": "default",
                ":grouping": "shuffle",
                ":emitted": 40,
                ":rate": 10.0,
            }
        ],
    }
    assert vis["count"][":inputs"] == [
        {
            ":component": "split",
            ":stream": "default",
            ":sani-stream": "default",
            ":grouping": "fields",
            ":emitted": 7,
            ":rate": 1.75,
        },
        {
            ":component": "words",
            ":stream": "__tick",
            ":sani-stream": "--tick",
            ":grouping": "all",
            ":emitted": 3,
            ":rate": 0.75,
        },
    ]
    assert ":latency" not in vis["count"] and ":capacity" not in vis["count"]
    assert vis["audit"][":inputs"][1] == {
        ":component": "split",
        ":stream": "odd_words",
        ":sani-stream": "odd-words",
        ":grouping": "",
        ":emitted": 0,
        ":rate": 0.0,
    }
    thirds = StandInWindow("600", span=3.0, components={"words": figures(streams={"default": 1})})
    assert visualization(SPEC, INFO, thirds)["split"][":inputs"][0][":rate"] == 0.333  # type: ignore[arg-type]
    assert visualization({}, INFO, thirds) == {}  # type: ignore[arg-type]


def test_documents_of_a_topology_nimbus_sends_without_workers_components_errors_or_inputs() -> None:
    info = {"id": "t-1", "name": "t", "status": "active"}
    spec = {"components": {"s": {"kind": "spout"}, "b": {"kind": "bolt"}}}
    window = StandInWindow("600", components={"s": figures(4, streams={"default": 4})})
    per_window = {w: window if w == "600" else StandInWindow(w) for w in WINDOWS}
    bolt = component_doc(info, spec, "b", "600", per_window, 10.0)
    assert (bolt["inputStats"], bolt["executorStats"], bolt["componentErrors"], bolt["executors"]) == (
        [],
        [],
        [],
        None,
    )
    spout = component_doc(info, spec, "s", "600", per_window, 10.0)
    assert spout["outputStats"] == [{"stream": "default", "emitted": 4, "transferred": 0}]
    vis = visualization(spec, info, window)  # type: ignore[arg-type]
    assert vis["b"][":inputs"] == [] and vis["s"][":inputs"] == []
    info = {**info, "uptime_secs": 1, "num_workers": 0, "num_executors": 0}
    doc = topology_doc(info, spec, {}, "600", per_window, 10.0)
    assert doc["workers"] == [] and doc["spouts"][0]["executors"] is None
    assert doc["bolts"][0]["lastError"] == "" and doc["bolts"][0]["boltId"] == "b"
    empty = topology_doc(info, {}, {}, "600", per_window, 10.0)
    assert (empty["spouts"], empty["bolts"]) == ([], [])
    assert [row["emitted"] for row in empty["topologyStats"]] == [100, 200, 300, 400]


def test_an_error_is_0_seconds_old_at_its_time_and_from_the_future() -> None:
    per_window = per_window_of("600")
    for time in (10.0, 12.0):
        info = {
            **INFO,
            "errors": {"split": [{"time": time, "task": 2, "host": "h", "port": 1, "message": "m"}]},
        }
        doc = component_doc(info, SPEC, "split", "600", per_window, 10.0)
        assert doc["componentErrors"][0]["errorLapsedSecs"] == 0
        assert topology_doc(info, SPEC, {}, "600", per_window, 10.0)["bolts"][2]["errorLapsedSecs"] == 0


def test_an_event_without_a_time_counts_as_the_oldest() -> None:
    class Beat:
        events = ({"component": "words"}, {"component": "words", "ts": 0.5})

    rows = events_doc(INFO, {("sup-a", 6700): Beat()}, None)["events"]
    assert [r.get("ts") for r in rows] == [0.5, None]
