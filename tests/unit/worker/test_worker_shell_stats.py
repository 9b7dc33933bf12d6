"""What a worker's heartbeat carries, figure by figure: the local heartbeat file the supervisor
reads, the per-component sums, the per-task entries, the registered metrics, the process's figures,
and the counters carried over from earlier incarnations."""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any

import msgpack
import psutil

from stormpy.cluster.records import WorkerHeartbeat
from stormpy.worker.heartbeats import (
    add_base,
    carried_counters,
    component_stats,
    process_stats,
    replace_msgpack_file,
    task_entries,
    task_metrics,
    write_local_heartbeat,
)


def task_doc(task: int, component: str, **counters: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"component": component, "task": task, "emitted": {}, "transferred": 0,
                           "executed": 0, "acked": 0, "failed": 0, "latency_sum": 0.0,
                           "latency_count": 0}
    doc.update(counters)
    return doc


def test_the_local_heartbeat_file_holds_exactly_what_the_supervisor_reads(tmp_path: Path) -> None:
    path = tmp_path / "heartbeat"
    write_local_heartbeat(path, time=12.5, pid=4321, topology_id="t-1", port=6702,
                          executors=((1, 2), (5, 5)))
    assert msgpack.unpackb(path.read_bytes()) == {"time": 12.5, "pid": 4321, "topology_id": "t-1",
                                                  "port": 6702, "executors": [[1, 2], [5, 5]]}
    write_local_heartbeat(path, time=13.0, pid=4321, topology_id="t-1", port=6702, executors=())
    assert msgpack.unpackb(path.read_bytes())["time"] == 13.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["heartbeat"]  # no temporary file left


def test_replace_msgpack_file_keeps_bytes_as_bytes(tmp_path: Path) -> None:
    path = tmp_path / "doc"
    replace_msgpack_file(path, {"key": b"\x00\xff", "text": "é"})
    assert msgpack.unpackb(path.read_bytes(), raw=False) == {"key": b"\x00\xff", "text": "é"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc"]
    assert not (tmp_path / f".doc.{os.getpid()}.tmp").exists()


def test_component_stats_sum_every_counter_exactly() -> None:
    docs = [task_doc(1, "split", emitted={"default": 4, "words": 2, "__ack_ack": 9}, transferred=6,
                     executed=3, acked=2, failed=1, latency_sum=0.25, latency_count=2,
                     execute_latency_sum=0.5, execute_latency_count=3, receive_queue_full=1),
            task_doc(2, "split", emitted={"default": 1}, transferred=1, executed=4, acked=5,
                     failed=2, latency_sum=0.5, latency_count=1, process_latency_sum=0.75,
                     process_latency_count=4, receive_queue_full=2),
            task_doc(3, "__acker", emitted={"__ack_ack": 3}, executed=7)]
    assert component_stats(docs) == {
        "split": {"tasks": 2, "emitted": 7, "transferred": 7, "executed": 7, "acked": 7, "failed": 3,
                  "latency_sum": 0.75, "latency_count": 3, "execute_latency_sum": 0.5,
                  "execute_latency_count": 3, "process_latency_sum": 0.75,
                  "process_latency_count": 4, "receive_queue_full": 3, "complete_latency_ms": 250.0},
        "__acker": {"tasks": 1, "emitted": 0, "transferred": 0, "executed": 7, "acked": 0, "failed": 0,
                    "latency_sum": 0.0, "latency_count": 0}}


def test_complete_latency_is_rounded_to_microseconds() -> None:
    stats = component_stats([task_doc(1, "s", latency_sum=1.0, latency_count=3)])
    assert stats["s"]["complete_latency_ms"] == 333.333


def test_task_entries_keep_each_tasks_numbers_and_streams() -> None:
    docs = [{"task": 4, "component": "split", "emitted": {"default": 2, "__system": 1},
             "acked": 3, "latency_sum": 0.5, "receive_queue": 7, "active": True, "name": "x",
             "metrics": {"m": 1}}]
    assert task_entries(docs) == [{"task": 4, "component": "split",
                                   "emitted": {"default": 2, "__system": 1}, "acked": 3,
                                   "latency_sum": 0.5, "receive_queue": 7}]
    assert task_entries([]) == []


def test_task_metrics_are_keyed_by_component_then_task_id_as_text() -> None:
    docs = [task_doc(1, "split", metrics={"words": 3}), task_doc(2, "split", metrics={"words": 5}),
            task_doc(3, "count", metrics={}), task_doc(4, "sink")]
    assert task_metrics(docs) == {"split": {"1": {"words": 3}, "2": {"words": 5}}}


def test_process_stats_are_this_processs_figures() -> None:
    stats = process_stats()
    proc = psutil.Process()
    assert set(stats) == {"cpu_user_secs", "cpu_system_secs", "rss_bytes", "threads",
                          *(f"gc_collections_{g}" for g in range(len(gc.get_stats())))}
    assert all(type(v) is float for v in stats.values())
    assert stats["threads"] >= 1
    assert stats["rss_bytes"] > 0
    assert 0 <= stats["cpu_user_secs"] <= proc.cpu_times().user
    gc.collect()
    before = [g["collections"] for g in gc.get_stats()]
    collections = [process_stats()[f"gc_collections_{g}"] for g in range(len(before))]
    after = [g["collections"] for g in gc.get_stats()]
    assert before[-1] >= 1
    assert all(b <= c <= a for b, c, a in zip(before, collections, after, strict=True))


def test_process_stats_are_empty_when_the_process_cannot_be_read() -> None:
    gone = psutil.Process()

    class Unreadable:
        def oneshot(self) -> Any:
            return gone.oneshot()

        def cpu_times(self) -> Any:
            raise psutil.NoSuchProcess(1)

    assert process_stats(Unreadable()) == {}


def beat(time: float, *tasks: dict[str, Any]) -> WorkerHeartbeat:
    return WorkerHeartbeat(topology_id="t", node="n", port=1, time=time, uptime=1.0, tasks=tasks)


def test_carried_counters_take_each_tasks_newest_entry() -> None:
    newest_1 = task_doc(1, "s", acked=8, emitted={"default": 8})
    newest_2 = task_doc(2, "b", acked=3, emitted={})
    beats = [beat(30.0, task_doc(1, "s", acked=5, emitted={"default": 5})),
             beat(40.0, newest_1, task_doc(2, "b", acked=1, emitted={})),
             beat(50.0, newest_2),
             beat(20.0, task_doc(1, "s", acked=99, emitted={"default": 99}), task_doc(9, "x"))]
    assert carried_counters(beats, [1, 2, 3]) == {1: newest_1, 2: newest_2}
    assert carried_counters(beats, []) == {}


def test_carried_counters_ignore_malformed_entries() -> None:
    good = task_doc(1, "s", acked=1)
    beats = [beat(10.0, good),
             beat(20.0, {"task": True, "component": "s", "emitted": {}},
                  {"task": 1.0, "component": "s", "emitted": {}},
                  {"task": "1", "component": "s", "emitted": {}},
                  {"task": 1, "component": "s", "emitted": [1]},
                  {"task": 1, "component": "s"}, [1, "s"])]  # type: ignore[arg-type]
    assert carried_counters(beats, [1]) == {1: good}


def test_add_base_adds_counters_and_streams_but_not_gauges() -> None:
    docs = [task_doc(1, "s", acked=2, emitted={"default": 3}, receive_queue=4, latency_sum=0.5),
            task_doc(2, "b", acked=1)]
    before = [dict(d) for d in docs]
    base = {1: {"task": 1, "component": "s", "emitted": {"default": 10, "other": 2, "bad": "x"},
                "acked": 7, "receive_queue": 100, "failed": True, "latency_sum": 1.5, "extra": 3,
                "name": "text"}}
    out = add_base(docs, base)
    assert out[0] == {**docs[0], "emitted": {"default": 13, "other": 2}, "acked": 9,
                      "latency_sum": 2.0, "extra": 3}
    assert out[1] is docs[1]
    assert docs == before  # inputs unchanged


def test_add_base_adds_to_tasks_after_one_without_carried_counters() -> None:
    docs = [task_doc(1, "new", acked=1), task_doc(2, "s", acked=2, emitted={"default": 1})]
    out = add_base(docs, {2: {"task": 2, "component": "s", "emitted": {"default": 4}, "acked": 3}})
    assert out[0] is docs[0]
    assert (out[1]["acked"], out[1]["emitted"]) == (5, {"default": 5})


def test_add_base_leaves_a_field_that_is_not_a_number_now() -> None:
    docs = [task_doc(1, "s", state="running", acked=1)]
    out = add_base(docs, {1: {"task": 1, "component": "s", "emitted": {}, "state": 3, "acked": 2}})
    assert out[0]["state"] == "running" and out[0]["acked"] == 3


def test_carried_counters_read_past_a_malformed_entry() -> None:
    good = task_doc(2, "s", acked=4)
    beats = [beat(10.0, {"task": 1, "component": "s"}, {"task": "x"}, good)]
    assert carried_counters(beats, [1, 2]) == {2: good}
