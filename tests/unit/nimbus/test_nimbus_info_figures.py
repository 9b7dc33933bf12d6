"""The figures ``stormpy list`` / ``info``, the UI and the REST API show, as Nimbus computes them
(:mod:`stormpy.nimbus.info`): each document compared whole, so every field, sum, rounding,
default and order is pinned."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from stormpy.cluster import Assignment, ErrorInfo, StormBase, SupervisorInfo, WorkerHeartbeat
from stormpy.nimbus.info import (
    aggregate_stats,
    cluster_summary,
    crash_loops,
    nimbus_summaries,
    slot_exits,
    supervisor_summary,
    topology_info,
    topology_summary,
)

NOW = 1000.0


def beat(node: str, port: int, stats: dict[str, dict[str, Any]], **kw: Any) -> WorkerHeartbeat:
    return WorkerHeartbeat("t-1", node, port, kw.pop("time", NOW - 2.34), kw.pop("uptime", 55.55),
                           stats=stats, **kw)


# -- aggregate_stats -----------------------------------------------------------------------------
def test_counters_are_summed_over_workers_and_missing_ones_are_zero() -> None:
    beats = [beat("a", 1, {"split": {"emitted": 10, "transferred": 9, "executed": 5, "acked": 4,
                                     "failed": 1, "capacity": 0.25, "flag": True}}),
             beat("b", 1, {"split": {"emitted": 3, "acked": 2, "capacity": 0.5},
                           "spout": {"emitted": 7}})]
    assert aggregate_stats(beats) == {
        "split": {"emitted": 13, "transferred": 9, "executed": 5, "acked": 6, "failed": 1,
                  "capacity": 0.75, "complete_latency_ms": None},
        "spout": {"emitted": 7, "transferred": 0, "executed": 0, "acked": 0, "failed": 0,
                  "complete_latency_ms": None}}


def test_complete_latency_from_sums_and_counts_in_milliseconds() -> None:
    beats = [beat("a", 1, {"spout": {"acked": 3, "latency_sum": 0.5, "latency_count": 3, "tasks": 1.0,
                                     "complete_latency_ms": 99.0}}),
             beat("b", 1, {"spout": {"acked": 1, "latency_sum": 0.0001, "latency_count": 1, "tasks": 2.0}})]
    # 1000 * 0.5001 / 4 = 125.025; the per-worker averages are not used when sums are sent
    assert aggregate_stats(beats) == {"spout": {"emitted": 0, "transferred": 0, "executed": 0, "acked": 4,
                                                "failed": 0, "complete_latency_ms": 125.025, "tasks": 3}}


def test_complete_latency_averaged_weighted_by_acks_without_sums() -> None:
    beats = [beat("a", 1, {"spout": {"acked": 3, "complete_latency_ms": 10.0}}),
             beat("b", 1, {"spout": {"acked": 1, "complete_latency_ms": 20.0004}}),
             beat("c", 1, {"spout": {"complete_latency_ms": 500.0}}),  # no acks: no weight
             beat("d", 1, {"spout": {"acked": None, "complete_latency_ms": 700.0}})]
    assert aggregate_stats(beats)["spout"]["complete_latency_ms"] == 12.5  # (30 + 20.0004) / 4, rounded
    alone = [beat("c", 1, {"bolt": {"acked": 0, "complete_latency_ms": 500.0}})]
    assert aggregate_stats(alone)["bolt"]["complete_latency_ms"] is None
    assert aggregate_stats([]) == {}


# -- the Nimbus list -----------------------------------------------------------------------------
def test_nimbus_summaries_list_every_nimbus_leader_first_then_by_host_and_port() -> None:
    records = {"n-c": {"host": "c", "port": 7000, "version": "1", "start_time": 900.0},
               "n-b": {"host": "b", "port": 7001, "version": "1", "start_time": 1100.0},
               "n-b2": {"host": "b", "port": 6999, "version": "1", "start_time": "soon"},
               "n-a": {"host": "a", "port": 6627, "version": "0", "start_time": 1.0, "leader": True}}
    this = {"id": "n-a", "host": "a", "port": 6627, "version": "2", "start_time": 950.04, "leader": False}
    assert nimbus_summaries(records, this, "c:7000", NOW) == [
        {"id": "n-c", "host": "c", "port": 7000, "version": "1", "leader": True, "status": "Leader",
         "start_time": 900.0, "uptime_secs": 100.0},
        {"id": "n-a", "host": "a", "port": 6627, "version": "2", "leader": False, "status": "Not a Leader",
         "start_time": 950.04, "uptime_secs": 50.0},
        {"id": "n-b2", "host": "b", "port": 6999, "version": "1", "leader": False, "status": "Not a Leader",
         "start_time": "soon", "uptime_secs": None},
        {"id": "n-b", "host": "b", "port": 7001, "version": "1", "leader": False, "status": "Not a Leader",
         "start_time": 1100.0, "uptime_secs": 0.0}]


def test_this_nimbus_knows_it_leads_whatever_its_record_or_the_leader_address_say() -> None:
    this = {"id": "n-a", "host": "a", "port": 6627, "leader": True}
    [doc] = nimbus_summaries({"n-a": {"host": "a", "port": 6627, "leader": False, "version": "1"}},
                             this, None, NOW)
    assert doc == {"id": "n-a", "host": "a", "port": 6627, "version": "1", "leader": True, "status": "Leader",
                   "start_time": None, "uptime_secs": None}
    nobody = nimbus_summaries({"n-x": {"host": "x", "port": 1}}, {}, None, NOW)
    assert [(n["id"], n["leader"]) for n in nobody] == [("n-x", False)]
    portless = nimbus_summaries({"n-x": {"host": "x", "port": None}, "n-y": {"host": "x", "port": 5}},
                                {}, None, NOW)
    assert [n["id"] for n in portless] == ["n-x", "n-y"]


# -- supervisors, exits, crash loops ------------------------------------------------------------------
def test_supervisor_summary() -> None:
    info = SupervisorInfo("sup-a", "host-a", (6700, 6701, 6702), 800.04, "1.2", stats={"cpu": 0.5},
                          logviewer_port=8000)
    assert supervisor_summary(info, 2, NOW) == {
        "id": "sup-a", "host": "host-a", "ports": [6700, 6701, 6702], "slots_total": 3, "slots_used": 2,
        "uptime_secs": 200.0, "version": "1.2", "stats": {"cpu": 0.5}, "logviewer_port": 8000}
    late = SupervisorInfo("sup-b", "host-b", (), NOW + 5, "1.2")
    assert supervisor_summary(late, 0, NOW)["uptime_secs"] == 0.0


def assignment(tid: str = "t-1") -> Assignment:
    return Assignment(tid, tid, {(1, 2): ("sup-a", 6700), (3, 3): ("sup-a", 6700), (4, 4): ("sup-b", 6701)},
                      {"sup-a": "host-a", "sup-b": "host-b"})


LOOPING = {"port": 6700, "topology_id": "t-1", "restarts": 4, "last_exit": "exit code 1",
           "crash_looping": True}
SUPERVISORS = {
    "sup-a": SupervisorInfo("sup-a", "host-a", (6700, 6701), 0.0, "1", workers=(
        LOOPING, {"port": 6701, "topology_id": "t-1", "restarts": 9},
        {"port": 6700, "topology_id": "t-2", "restarts": 7})),
    "sup-b": SupervisorInfo("sup-b", "host-b", (6701,), 0.0, "1", workers=(
        {"port": 6701, "topology_id": "t-1", "restarts": None, "crash_looping": True},)),
}


def test_slot_exits_are_the_records_of_the_topologys_own_slots() -> None:
    assert slot_exits(SUPERVISORS, assignment()) == {
        ("sup-a", 6700): LOOPING,
        ("sup-b", 6701): {"port": 6701, "topology_id": "t-1", "restarts": None, "crash_looping": True}}
    assert slot_exits(SUPERVISORS, None) == {}
    assert slot_exits({}, assignment()) == {}


def test_crash_loops_name_each_slot_with_its_host_restarts_and_last_exit() -> None:
    exits = slot_exits(SUPERVISORS, assignment())
    assert crash_loops(assignment(), exits) == (
        "the worker on host-a:6700 keeps exiting (restarted 4 times; last: exit code 1); "
        "the worker on host-b:6701 keeps exiting (restarted None times; last: unknown)")
    assert crash_loops(None, exits) == (
        "the worker on sup-a:6700 keeps exiting (restarted 4 times; last: exit code 1); "
        "the worker on sup-b:6701 keeps exiting (restarted None times; last: unknown)")
    assert crash_loops(assignment(), {("sup-a", 6701): {"restarts": 9}}) is None


# -- topologies ------------------------------------------------------------------------------------
BASE = StormBase("t-1", "wc", "active", 3, 899.96, "alice", component_debug={"split": {"enable": True}})


def test_topology_summary_counts_what_the_assignment_runs() -> None:
    exits = slot_exits(SUPERVISORS, assignment())
    assert topology_summary(BASE, assignment(), NOW, "no code", exits) == {
        "id": "t-1", "name": "wc", "status": "active", "num_workers": 2, "requested_workers": 3,
        "num_executors": 3, "num_tasks": 4, "uptime_secs": 100.0, "owner": "alice", "worker_restarts": 4,
        "degraded": "no code; "
                    "the worker on host-a:6700 keeps exiting (restarted 4 times; last: exit code 1); "
                    "the worker on host-b:6701 keeps exiting (restarted None times; last: unknown)"}
    assert topology_summary(BASE, None, 800.0) == {
        "id": "t-1", "name": "wc", "status": "active", "num_workers": 0, "requested_workers": 3,
        "num_executors": 0, "num_tasks": 0, "uptime_secs": 0.0, "owner": "alice", "worker_restarts": 0,
        "degraded": None}
    assert topology_summary(BASE, assignment(), NOW)["degraded"] is None


def test_cluster_summary() -> None:
    other = StormBase("t-2", "alpha", "inactive", 1, 990.0, "bob")
    second = Assignment("t-2", "t-2", {(1, 1): ("sup-a", 6701), (2, 2): ("sup-a", 6700)}, {"sup-a": "host-a"})
    nimbus = {"id": "n-a", "host": "a", "port": 6627, "leader": True}
    doc = cluster_summary(nimbus, SUPERVISORS, {"t-1": BASE, "t-2": other},
                          {"t-1": assignment(), "t-2": second}, NOW, {"t-2": "why"})
    assert doc == {
        "nimbus": nimbus,
        "nimbuses": [{"id": "n-a", "host": "a", "port": 6627, "version": None, "leader": True,
                      "status": "Leader", "start_time": None, "uptime_secs": None}],
        "supervisors": [supervisor_summary(SUPERVISORS["sup-a"], 2, NOW),
                        supervisor_summary(SUPERVISORS["sup-b"], 1, NOW)],
        "topologies": [topology_summary(other, second, NOW, "why", slot_exits(SUPERVISORS, second)),
                       topology_summary(BASE, assignment(), NOW, None,
                                        slot_exits(SUPERVISORS, assignment()))]}
    assert doc["supervisors"][0]["slots_used"] == 2 and doc["topologies"][0]["worker_restarts"] == 7
    listed = cluster_summary(nimbus, {}, {}, {}, NOW, nimbuses=[{"id": "x"}])
    assert listed == {"nimbus": nimbus, "nimbuses": [{"id": "x"}], "supervisors": [], "topologies": []}


def layout() -> Any:
    executors = [SimpleNamespace(component=c) for c in ("split", "split", "spout", "__acker")]
    return SimpleNamespace(component_tasks={"split": [3, 2], "spout": [1], "__acker": [4]},
                           executors=executors)


def test_topology_info_document() -> None:
    beats = {("sup-a", 6700): beat("sup-a", 6700, {"split": {"emitted": 5, "acked": 2},
                                                   "__acker": {"executed": 4}},
                                   metrics={"split": {"10": {"m": 1}, "2": {"m": 2}, "x": {"m": 3}}},
                                   tasks=({"component": "split", "emitted": {"default": 5, "__ack": 2,
                                                                             "bad": "x"}},
                                          {"component": 7, "emitted": {"default": 1}},
                                          {"component": "spout", "emitted": None}, "junk")),
             ("sup-b", 6701): beat("sup-b", 6701, {"split": {"emitted": 1}}, time=NOW + 3, uptime=1.26,
                                   metrics={"split": {"1": {"m": 4}}},
                                   tasks=({"component": "split", "emitted": {"default": 2}},)),
             ("sup-c", 9): beat("sup-c", 9, {"split": {"emitted": 1000}})}  # not assigned: not counted
    errors = {"split": [ErrorInfo("split", 3, float(t), f"e{t}", "host-a", 6700) for t in range(7)],
              "spout": [ErrorInfo("spout", 1, 1.0, "boom", "host-b", 6701)]}
    doc = topology_info(BASE, assignment(), layout(), beats, errors, NOW, None, SUPERVISORS, warnings=("w1",))
    summary = topology_summary(BASE, assignment(), NOW, None, slot_exits(SUPERVISORS, assignment()))
    assert doc == {
        **summary,
        "workers": [
            {"node": "sup-a", "host": "host-a", "port": 6700, "executors": [[1, 2], [3, 3]],
             "uptime_secs": 55.5,
             "heartbeat_age_secs": 2.3, "restarts": 4, "last_exit": "exit code 1", "crash_looping": True},
            {"node": "sup-b", "host": "host-b", "port": 6701, "executors": [[4, 4]], "uptime_secs": 1.3,
             "heartbeat_age_secs": 0.0, "restarts": 0, "last_exit": None, "crash_looping": True}],
        "warnings": ["w1"],
        "components": {"split": {"tasks": 2, "executors": 2, "task_ids": [2, 3]},
                       "spout": {"tasks": 1, "executors": 1, "task_ids": [1]},
                       "__acker": {"tasks": 1, "executors": 1, "task_ids": [4]}},
        "stats": {"split": {"emitted": 6, "transferred": 0, "executed": 0, "acked": 2, "failed": 0,
                            "complete_latency_ms": None}},
        "system_components": {"__acker": {"emitted": 0, "transferred": 0, "executed": 4, "acked": 0,
                                          "failed": 0, "complete_latency_ms": None}},
        "streams": {"split": {"__ack": 2, "default": 7}},
        "debug": {"split": {"enable": True}},
        "metrics": {"split": {"x": {"m": 3}, "1": {"m": 4}, "2": {"m": 2}, "10": {"m": 1}}},
        "errors": {"split": [{"time": float(t), "task": 3, "host": "host-a", "port": 6700, "message": f"e{t}"}
                             for t in range(2, 7)],
                   "spout": [{"time": 1.0, "task": 1, "host": "host-b", "port": 6701, "message": "boom"}]},
    }
    assert list(doc["metrics"]["split"]) == ["x", "1", "2", "10"]
    assert list(doc["streams"]["split"]) == ["__ack", "default"]
    assert list(doc["errors"]) == ["split", "spout"]


def test_topology_info_without_assignment_layout_or_beats() -> None:
    doc = topology_info(BASE, None, None, {}, {}, NOW)
    assert doc == {**topology_summary(BASE, None, NOW), "workers": [], "warnings": [], "components": {},
                   "stats": {}, "system_components": {}, "streams": {}, "debug": {"split": {"enable": True}},
                   "metrics": {}, "errors": {}}
    silent = topology_info(BASE, assignment(), None, {}, {}, NOW, "degraded")
    assert [(w["uptime_secs"], w["heartbeat_age_secs"], w["restarts"], w["crash_looping"])
            for w in silent["workers"]] == [(None, None, 0, False), (None, None, 0, False)]
    assert silent["degraded"] == "degraded"


def test_uptimes_are_in_seconds_rounded_to_a_tenth() -> None:
    this = {"id": "n-a", "host": "a", "port": 6627, "start_time": NOW - 12.34}
    [doc] = nimbus_summaries({}, this, None, NOW)
    assert repr(doc["uptime_secs"]) == "12.3"
    summary = cluster_summary(this, {}, {}, {}, NOW)
    assert repr(summary["nimbuses"][0]["uptime_secs"]) == "12.3"
    info = SupervisorInfo("sup-a", "host-a", (6700,), NOW - 12.34, "1")
    assert repr(supervisor_summary(info, 0, NOW)["uptime_secs"]) == "12.3"
    base = StormBase("t-1", "wc", "active", 1, NOW - 12.36, "")
    assert repr(topology_summary(base, None, NOW)["uptime_secs"]) == "12.4"


def test_the_nimbus_list_orders_hosts_by_name_before_ports() -> None:
    records = {"n-b": {"host": "b", "port": 6000}, "n-a": {"host": "a", "port": 9000},
               "n-a1": {"host": "a", "port": 1}, "n-a0": {"host": "a", "port": None}}
    assert [n["id"] for n in nimbus_summaries(records, {}, None, NOW)] == ["n-a0", "n-a1", "n-a", "n-b"]


def test_latency_figures_rounded_to_a_thousandth_and_task_counts_as_integers() -> None:
    beats = [beat("a", 1, {"spout": {"latency_sum": 0.0001234, "latency_count": 1, "tasks": 1.0}}),
             beat("b", 1, {"spout": {"tasks": 2.0}, "bolt": {"latency_count": 2, "tasks": 0.5}})]
    stats = aggregate_stats(beats)
    assert repr(stats["spout"]["complete_latency_ms"]) == "0.123"
    assert repr(stats["spout"]["tasks"]) == "3"
    assert repr(stats["bolt"]["complete_latency_ms"]) == "0.0"  # counted, but no sum sent
    assert repr(stats["bolt"]["tasks"]) == "0"


def test_workers_of_nodes_the_assignment_names_no_host_for() -> None:
    unnamed = Assignment("t-1", "t-1", {(1, 1): ("sup-x", 6700)}, {})
    exits = {("sup-x", 6700): {"restarts": 2, "crash_looping": True}}
    assert crash_loops(unnamed, exits) == ("the worker on sup-x:6700 keeps exiting (restarted 2 times; "
                                           "last: unknown)")
    [worker] = topology_info(BASE, unnamed, None, {}, {}, NOW)["workers"]
    assert worker["host"] == ""


def test_metrics_by_task_id_in_number_order_other_names_first() -> None:
    beats = {("sup-a", 6700): beat("sup-a", 6700, {}, metrics={"split": {"1": {"m": 1}, "x": {"m": 2}}})}
    doc = topology_info(BASE, assignment(), None, beats, {}, NOW)
    assert list(doc["metrics"]["split"]) == ["x", "1"]
