"""The event logger (sampled tuples): which components sample, the wrappers it puts on a task's
collector methods and takes off again (nothing left on the tuple path when off), the events log
lines, the heartbeat's recent events and the StormBase setting."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from stormpy.cluster import StormBase, WorkerHeartbeat
from stormpy.testing import wait_for
from stormpy.topology._event_log import RECENT_EVENTS, event_doc, sampling_pct
from stormpy.worker.event_logger import PENDING_LIMIT, RECENT_CHARS, EventLogger


class Instance:
    """A component with its collector methods bound, as a task runner binds them."""

    def __init__(self) -> None:
        self.sent: list[tuple[Any, ...]] = []
        self.emit = lambda values, second=None, stream="default": \
            self.sent.append((values, second, stream)) or [9]
        self.emit_direct = lambda task, values, second=None, stream="default": self.sent.append((values,))
        self.emit_many = lambda values_list, second=None, stream="default": self.sent.append((values_list,))


class Runner:
    def __init__(self, component: str, task: int, spout: bool = False) -> None:
        self.component_id = component
        self.task_id = task
        self.is_spout = spout
        self.instance = Instance()


def test_sampling_pct_component_entry_wins_over_the_topology() -> None:
    debug = {"t-1": {"enable": True, "samplingpct": 20.0}, "count": {"enable": False, "samplingpct": 5.0}}
    assert sampling_pct(debug, "t-1", "split") == 20.0
    assert sampling_pct(debug, "t-1", "count") is None
    assert sampling_pct({"count": {"enable": True, "samplingpct": 5.0}}, "t-1", "count") == 5.0
    assert sampling_pct({}, "t-1", "split") is None


def test_the_logger_wraps_sampling_tasks_only_and_restores_them(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "worker-t-1-6700-events.log"
    logger = EventLogger(path, "t-1").start()
    spout, split, acker = Runner("words", 1, spout=True), Runner("split", 2), Runner("__acker", 3)
    bound = {r.task_id: dict(r.instance.__dict__) for r in (spout, split, acker)}
    try:
        logger.apply([spout, split, acker], {"words": {"enable": True, "samplingpct": 100.0}})
        assert spout.instance.emit is not bound[1]["emit"]
        assert split.instance.emit is bound[2]["emit"] and acker.instance.emit is bound[3]["emit"]
        assert spout.instance.emit(["a", 1], msg_id="id-7") == [9]  # the original still runs
        assert spout.instance.sent == [(["a", 1], "id-7", "default")]
        spout.instance.emit_many([["b", 2], ["c", 3]], msg_ids=["id-8", object()], stream="other")
        wait_for(lambda: logger.written == 3, 30, "three sampled tuples written")
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        assert [(e["component"], e["task"], e["stream"], e["values"]) for e in lines] == [
            ("words", 1, "default", ["a", 1]), ("words", 1, "other", ["b", 2]),
            ("words", 1, "other", ["c", 3])]
        assert lines[0]["message_id"] == "id-7" and lines[2]["message_id"].startswith("<object")
        assert lines[0]["time"].endswith("Z") and lines[0]["ts"] > 0
        assert logger.recent() == lines
        spout.instance.emit(["x" * 5000])  # a big tuple: whole in the log, cut in the heartbeat
        wait_for(lambda: logger.written == 4, 30, "the big tuple written")
        assert json.loads(path.read_text().splitlines()[-1])["values"] == ["x" * 5000]
        big = logger.recent()[-1]
        assert big["truncated"] is True and len(big["values"][0]) == RECENT_CHARS
        logger.apply([spout, split, acker], {"words": {"enable": False, "samplingpct": 100.0}})
        for r in (spout, split, acker):  # the tuple path is exactly what it was
            assert r.instance.__dict__ == bound[r.task_id]
        spout.instance.emit(["d", 4])
        assert logger.sampling == {}
    finally:
        logger.stop()
    assert len(path.read_text().splitlines()) == 4


def test_a_method_rebound_on_top_stays_and_the_wrapper_stops_sampling(tmp_path: Path) -> None:
    logger = EventLogger(tmp_path / "events.log", "t-1")
    bolt = Runner("split", 2)
    logger.apply([bolt], {"t-1": {"enable": True, "samplingpct": 100.0}})
    wrapper = bolt.instance.emit
    bolt.instance.emit(["w"], anchors=None, stream="default")  # the bolt's own parameter names
    bolt.instance.emit = lambda values, anchors=None, stream="default": wrapper(values, anchors, stream)
    rebound = bolt.instance.emit
    logger.apply([bolt], {})
    assert bolt.instance.emit is rebound
    bolt.instance.emit(["x"])
    logger.stop()
    lines = (tmp_path / "events.log").read_text().splitlines()
    assert [json.loads(line)["values"] for line in lines] == [["w"]]


def test_debug_settings_and_events_travel_in_zookeeper_documents() -> None:
    base = StormBase("t-1", "wc", "active", 2, 1.0, "me",
                     component_debug={"t-1": {"enable": True, "samplingpct": 12.5}})
    assert StormBase.from_doc(base.to_doc()) == base
    assert StormBase.from_doc({k: v for k, v in base.to_doc().items() if k != "component_debug"}
                              ).component_debug == {}
    events = tuple(event_doc(1767225600.5, "split", 2, "default", ["a", {1, 2}]) for _ in range(2))
    assert events[0]["time"] == "2026-01-01T00:00:00.500Z" and events[0]["values"][1] == "{1, 2}"
    beat = WorkerHeartbeat("t-1", "n1", 6700, 2.0, 1.0, events=events)
    assert WorkerHeartbeat.from_doc(beat.to_doc()).events == events
    assert RECENT_EVENTS >= 10


def test_storms_debug_paths_are_parsed_and_bad_ones_named() -> None:
    if os.environ.get("CI", "").lower() != "true":  # in CI the [ui] extra is installed: no skip
        pytest.importorskip("starlette")
    from stormpy.ui._app import BadRequest, parse_debug

    assert parse_debug("enable", "12.5") == (True, 12.5)
    assert parse_debug("disable", "x") == (False, 10.0)
    with pytest.raises(BadRequest, match="'pause'"):
        parse_debug("pause", "10")
    for bad in ("0", "101", "nan", "ten"):
        with pytest.raises(BadRequest, match="sampling percentage"):
            parse_debug("enable", bad)


def test_nimbus_stores_debug_settings_and_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    from nimbus_fakes import FakeClusterState, SimClock, staged_bundle

    from stormpy.nimbus.localdirs import NimbusDirs
    from stormpy.nimbus.store import BundleStore
    from stormpy.nimbus.topologies import TopologyManager
    from stormpy.rpc.errors import InvalidRequestError, NotFoundError
    from wordcount import build

    state = FakeClusterState()
    state.add_supervisor("sup-a", [6700, 6701])
    manager = TopologyManager(state, BundleStore(NimbusDirs(tmp_path / "nimbus")), {},  # type: ignore[arg-type]
                              clock=SimClock())
    tid = manager.submit("wc", staged_bundle(tmp_path), build(10).create_topology(), {})
    manager.set_debug("wc", "split", True, 100.0)
    manager.set_debug("wc", None, True, 5.0)
    assert state.storm_base(tid).component_debug == {  # type: ignore[union-attr]
        "split": {"enable": True, "samplingpct": 100.0}, tid: {"enable": True, "samplingpct": 5.0}}
    manager.set_debug("wc", None, False, 5.0)  # every component off
    assert not any(v["enable"] for v in state.storm_base(tid).component_debug.values())  # type: ignore[union-attr]
    with pytest.raises(NotFoundError, match="no component 'nope'.*split"):
        manager.set_debug("wc", "nope", True, 10.0)
    quiet = manager.submit("quiet", staged_bundle(tmp_path), build(10).create_topology(),
                           {"topology.eventlogger.executors": 0})
    with pytest.raises(InvalidRequestError, match="topology.eventlogger.executors"):
        manager.set_debug("quiet", None, True, 10.0)
    assert state.storm_base(quiet).component_debug == {}  # type: ignore[union-attr]


def test_the_events_log_rotates_at_its_cap_keeping_its_backups(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "worker-t-1-6700-events.log"
    logger = EventLogger(path, "t-1", max_bytes=2_000, backups=2).start()
    spout = Runner("words", 1, spout=True)
    try:
        logger.apply([spout], {"words": {"enable": True, "samplingpct": 100.0}})
        for i in range(60):
            spout.instance.emit([f"sentence {i:03d} " + "x" * 80], msg_id=i)
            if i % 10 == 9:  # several writes, so that the cap is crossed between them
                wait_for(lambda n=i + 1: logger.written == n, 30, f"{i + 1} sampled tuples written")
    finally:
        logger.stop()
    files = sorted(path.parent.iterdir())
    assert [f.name for f in files] == [path.name, path.name + ".1", path.name + ".2"]
    kept = [json.loads(line)["values"][0][:12] for f in (files[2], files[1], files[0])
            for line in f.read_text().splitlines()]
    assert kept == sorted(kept) and kept[-1] == "sentence 059"  # oldest dropped, order kept
    assert all(f.stat().st_size <= 2_000 + 10 * 200 for f in files)  # one write's lines past the cap


def test_a_zero_cap_never_rotates(tmp_path: Path) -> None:
    path = tmp_path / "worker-t-1-6700-events.log"
    logger = EventLogger(path, "t-1", max_bytes=0).start()
    spout = Runner("words", 1, spout=True)
    try:
        logger.apply([spout], {"words": {"enable": True, "samplingpct": 100.0}})
        for i in range(30):
            spout.instance.emit(["y" * 200], msg_id=i)
        wait_for(lambda: logger.written == 30, 30, "30 sampled tuples written")
    finally:
        logger.stop()
    assert [f.name for f in tmp_path.iterdir()] == [path.name]
    assert len(path.read_text().splitlines()) == 30


class Recording:
    """A component whose four collector methods record exactly what they were called with and
    answer a value of their own."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        for name in ("emit", "emit_direct", "emit_many", "emit_batch"):
            setattr(self, name, self._method(name))

    def _method(self, name: str) -> Any:
        def method(*args: Any) -> Any:
            self.calls.append((name, args))
            return f"{name}-result"
        return method


@pytest.mark.parametrize("spout", [True, False], ids=["spout", "bolt"])
def test_every_wrapped_method_passes_its_call_through_and_samples_each_tuple(tmp_path: Path,
                                                                            spout: bool) -> None:
    """Sampling at 100% changes nothing a component sees: each collector method gets exactly its
    arguments (by position or by the collector's own keyword names) and its answer comes back;
    every tuple emitted is sampled with its stream and, for a spout, its message id."""
    runner = Runner("words" if spout else "split", 4, spout=spout)
    runner.instance = Recording()  # type: ignore[assignment]
    logger = EventLogger(tmp_path / "events.log", "t-1")
    logger.apply([runner], {runner.component_id: {"enable": True, "samplingpct": 100.0}})
    inst: Any = runner.instance
    second = "msg_id" if spout else "anchors"
    seconds = "msg_ids" if spout else "anchors"
    ids = ["m-1", "m-2"] if spout else ["anchor"]
    assert inst.emit(["a"]) == "emit-result"
    assert inst.emit(["b"], **{second: "m-0" if spout else ["anchor"]}, stream="s1") == "emit-result"
    assert inst.emit_direct(7, ["c"]) == "emit_direct-result"
    assert inst.emit_direct(8, ["d"], **{second: "m-3" if spout else ["anchor"]}, stream="s2") \
        == "emit_direct-result"
    assert inst.emit_many((v for v in (["e"], ["f"])), **{seconds: ids if spout else ["anchor"]},
                          stream="s3") == "emit_many-result"
    assert inst.emit_batch([["g"]]) == "emit_batch-result"
    anchor = None if spout else ["anchor"]
    assert inst.calls == [
        ("emit", (["a"], None, "default")),
        ("emit", (["b"], "m-0" if spout else anchor, "s1")),
        ("emit_direct", (7, ["c"], None, "default")),
        ("emit_direct", (8, ["d"], "m-3" if spout else anchor, "s2")),
        ("emit_many", ([["e"], ["f"]], ids if spout else anchor, "s3")),
        ("emit_batch", ([["g"]], None, "default")),
    ]
    logger.stop()  # writes what is pending
    sampled = [(e["component"], e["task"], e["stream"], e["values"], e["message_id"])
               for e in logger.recent()]
    ids_of = (lambda i: i) if spout else (lambda i: None)
    c = runner.component_id
    assert sampled == [(c, 4, "default", ["a"], None), (c, 4, "s1", ["b"], ids_of("m-0")),
                       (c, 4, "default", ["c"], None), (c, 4, "s2", ["d"], ids_of("m-3")),
                       (c, 4, "s3", ["e"], ids_of("m-1")), (c, 4, "s3", ["f"], ids_of("m-2")),
                       (c, 4, "default", ["g"], None)]
    assert logger.written == 7 and logger.sampling == {4: 100.0}


def test_a_logger_that_falls_behind_keeps_the_newest_and_counts_the_dropped(tmp_path: Path) -> None:
    logger = EventLogger(tmp_path / "events.log", "t-1")  # no thread: nothing drains until stop
    spout = Runner("words", 1, spout=True)
    logger.apply([spout], {"words": {"enable": True, "samplingpct": 100.0}})
    assert logger.dropped == 0
    for i in range(PENDING_LIMIT + 5):
        spout.instance.emit([i])
    logger.stop()
    lines = (tmp_path / "events.log").read_text().splitlines()
    assert len(lines) == logger.written == PENDING_LIMIT and logger.dropped >= 1
    assert json.loads(lines[0])["values"] == [5] and json.loads(lines[-1])["values"] == [PENDING_LIMIT + 4]
    assert [e["values"] for e in logger.recent()] == [[i] for i in range(PENDING_LIMIT + 5 - RECENT_EVENTS,
                                                                            PENDING_LIMIT + 5)]
