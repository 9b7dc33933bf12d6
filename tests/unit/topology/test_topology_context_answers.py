"""What a task's context answers: its ids, its component's tasks and its index among them, any
component's tasks, output fields, the code directory, the state backend, metric registration
(names checked, kinds kept apart, values that travel) and task hooks (checked, prepared at once,
kept in order)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from stormpy import Bolt, Spout, Stream, TopologyBuilder, TopologyContext
from stormpy.topology import TaskHook
from stormpy.topology._layout import compute_layout
from stormpy.topology._offloop import OffLoop
from stormpy.topology._user_metrics import Counter, Gauge, Histogram, Meter, Timer


class Words(Spout):
    outputs = [Stream(["word", "n"]), Stream(["x"], name="side")]


class Sink(Bolt):
    outputs = ["total"]

    def execute(self, tup: Any) -> None:
        self.ack(tup)


def context(task_index: int = 2, conf: dict[str, Any] | None = None, **kw: Any) -> TopologyContext:
    b = TopologyBuilder()
    b.set_spout("words", Words, 2)
    b.set_bolt("sink", Sink, 2, tasks=4).shuffle_grouping("words")
    spec = b.create_topology()
    layout = compute_layout(spec, {"topology.acker.executors": 1})
    task = layout.component_tasks["sink"][task_index]
    return TopologyContext("topo-1", spec, layout, task, (task, 99), conf or {}, **kw)


def test_ids_tasks_and_index() -> None:
    ctx = context(2, conf={"k": 1}, worker_port=6701)
    tasks = ctx.layout.component_tasks["sink"]
    assert len(tasks) == 4
    assert (ctx.topology_id, ctx.component_id, ctx.task_id) == ("topo-1", "sink", tasks[2])
    assert ctx.task_index == 2
    assert ctx.component_tasks == tasks
    assert ctx.worker_tasks == [tasks[2], 99] and isinstance(ctx.worker_tasks, list)
    assert ctx.worker_port == 6701 and ctx.conf == {"k": 1}
    assert ctx.tasks_of("words") == ctx.layout.component_tasks["words"]
    assert len(ctx.tasks_of("words")) == 2
    assert ctx.component_of(ctx.tasks_of("words")[1]) == "words"
    assert ctx.component_of(tasks[0]) == "sink"
    assert repr(ctx) == f"TopologyContext('topo-1', 'sink', task={tasks[2]})"
    assert context(0).task_index == 0 and context(3).task_index == 3
    assert context().worker_port is None


def test_unknown_components_are_named() -> None:
    with pytest.raises(KeyError) as err:
        context().tasks_of("nope")
    assert err.value.args == ("unknown component 'nope'",)


def test_output_fields_of_this_or_another_component() -> None:
    ctx = context()
    assert ctx.output_fields().to_list() == ["total"]
    assert ctx.output_fields("default").to_list() == ["total"]
    assert ctx.output_fields(component="words").to_list() == ["word", "n"]
    assert ctx.output_fields("side", "words").to_list() == ["x"]
    with pytest.raises(KeyError):
        ctx.output_fields("side")


def test_the_code_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert context(conf={"worker.code.dir": str(tmp_path)}).code_dir == tmp_path
    monkeypatch.chdir(tmp_path)
    assert context().code_dir == tmp_path
    assert context(conf={"worker.code.dir": ""}).code_dir == tmp_path


def test_off_loop_and_state_belong_to_running_tasks() -> None:
    ctx = context()
    with pytest.raises(RuntimeError) as err:
        ctx.off_loop  # noqa: B018
    assert str(err.value) == f"{ctx!r} belongs to no running task: it has no off_loop"
    with pytest.raises(RuntimeError) as err:
        ctx.state_store()
    assert str(err.value) == f"{ctx!r} has no state backend (contexts made by the runtime have one)"

    class Backend:
        asked: list[tuple[str, str]] = []

        def store(self, area: str, topology_id: str) -> Any:
            self.asked.append((area, topology_id))
            return f"store:{area}"

    backend = Backend()
    off = OffLoop.__new__(OffLoop)
    ctx = context(state=backend, off_loop=off)
    assert ctx.off_loop is off and ctx.state_backend is backend
    assert ctx.state_store() == "store:checkpoints"
    assert ctx.state_store("transactional") == "store:transactional"
    assert backend.asked == [("checkpoints", "topo-1"), ("transactional", "topo-1")]


@pytest.mark.parametrize("name", ["", None, 3])
def test_metric_names_must_be_non_empty_strings(name: Any) -> None:
    ctx = context()
    for register in (lambda: ctx.register_metric(name, lambda: 1), lambda: ctx.register_counter(name),
                     lambda: ctx.register_gauge(name, lambda: 1), lambda: ctx.register_histogram(name),
                     lambda: ctx.register_meter(name), lambda: ctx.register_timer(name)):
        with pytest.raises(ValueError) as err:
            register()
        assert str(err.value) == f"metric name must be a non-empty string, got {name!r}"
    assert not ctx.has_metrics and ctx.metric_values() == {}


def test_register_metric_takes_a_function_and_replaces() -> None:
    ctx = context()
    with pytest.raises(TypeError) as err:
        ctx.register_metric("m", 5)  # type: ignore[arg-type]
    assert str(err.value) == "metric 'm': expected a function returning the value, got 5"
    assert not ctx.has_metrics
    ctx.register_metric("m", lambda: {"a": [1, 2]})
    assert ctx.has_metrics
    assert ctx.metric_values() == {"m": {"a": [1, 2]}}
    ctx.register_metric("m", lambda: 7)
    assert ctx.metric_values() == {"m": 7}
    ctx.register_counter("c").inc(2)
    ctx.register_metric("c", lambda: "plain")  # a plain metric replaces a counter of that name
    assert ctx.metric_values() == {"m": 7, "c": "plain"}
    assert isinstance(ctx.register_counter("c2"), Counter)


def test_each_kind_is_kept_and_found_again() -> None:
    ctx = context()
    counter = ctx.register_counter("c")
    histogram = ctx.register_histogram("h")
    meter = ctx.register_meter("m")
    timer = ctx.register_timer("t")
    assert (type(counter), type(histogram), type(meter), type(timer)) == (Counter, Histogram, Meter, Timer)
    assert ctx.register_counter("c") is counter
    assert ctx.register_histogram("h") is histogram
    assert ctx.register_meter("m") is meter
    assert ctx.register_timer("t") is timer
    counter.inc(3)
    histogram.update(5)
    values = ctx.metric_values()
    assert values["c"] == {"type": "counter", "count": 3}
    assert values["h"]["type"] == "histogram" and values["h"]["count"] == 1 and values["h"]["max"] == 5
    assert values["m"]["type"] == "meter" and values["t"]["type"] == "timer"


def test_a_gauge_replaces_any_metric_of_its_name() -> None:
    ctx = context()
    box = [1]
    gauge = ctx.register_gauge("g", lambda: box[0])
    assert isinstance(gauge, Gauge)
    box[0] = 4
    assert ctx.metric_values() == {"g": {"type": "gauge", "value": 4}}
    ctx.register_metric("p", lambda: 1)
    ctx.register_gauge("p", lambda: 2)
    assert ctx.metric_values() == {"g": {"type": "gauge", "value": 4}, "p": {"type": "gauge", "value": 2}}
    ctx.register_counter("c")
    ctx.register_gauge("c", lambda: 3)
    assert ctx.metric_values()["c"] == {"type": "gauge", "value": 3}
    with pytest.raises(TypeError):
        ctx.register_gauge("x", 3)  # type: ignore[arg-type]


def test_a_name_taken_by_another_kind_is_refused() -> None:
    ctx = context()
    ctx.register_counter("c")
    with pytest.raises(ValueError) as err:
        ctx.register_timer("c")
    assert str(err.value) == f"metric 'c' of sink:{ctx.task_id} is already a counter, not a timer"
    ctx.register_metric("plain", lambda: 1)
    with pytest.raises(ValueError) as err:
        ctx.register_histogram("plain")
    assert str(err.value) == \
        f"metric 'plain' of sink:{ctx.task_id} is already registered with register_metric"
    assert ctx.metric_values() == {"c": {"type": "counter", "count": 0}, "plain": 1}


def test_a_failing_metric_is_left_out_and_reported_once(caplog: pytest.LogCaptureFixture) -> None:
    ctx = context()
    ctx.register_metric("ok", lambda: 1)
    ctx.register_metric("raises", lambda: 1 / 0)
    ctx.register_metric("object", lambda: object())
    ctx.register_metric("intkeys", lambda: {1: "a"})
    with caplog.at_level(logging.WARNING, logger="stormpy.topology"):
        assert ctx.metric_values() == {"ok": 1}
        assert ctx.metric_values() == {"ok": 1}
    assert ctx.failed_metrics == ["intkeys", "object", "raises"]
    warnings = [r.getMessage() for r in caplog.records if r.name == "stormpy.topology"]
    assert len(warnings) == 3
    assert all("is left out" in w for w in warnings)


class Hook(TaskHook):
    def __init__(self) -> None:
        self.prepared: list[tuple[Any, Any]] = []

    def prepare(self, conf: Any, context: Any) -> None:
        self.prepared.append((conf, context))


def test_task_hooks_are_checked_prepared_and_kept_in_order() -> None:
    ctx = context(conf={"k": 2})
    first, second = Hook(), Hook()
    ctx.add_task_hook(first)
    ctx.add_task_hook(second)
    assert first.prepared == [({"k": 2}, ctx)]
    assert ctx.hooks == [first, second]
    ctx.hooks.clear()
    assert ctx.hooks == [first, second]

    class Partial:
        def prepare(self, conf: Any, context: Any) -> None:
            raise AssertionError("not prepared when refused")

        emit = 3

    partial = Partial()
    with pytest.raises(TypeError) as err:
        ctx.add_task_hook(partial)
    assert str(err.value) == (
        f"task hook {partial!r} lacks ['cleanup', 'emit', 'spout_ack', 'spout_fail', "
        "'bolt_execute', 'bolt_ack', 'bolt_fail']: subclass stormpy.topology.TaskHook")
    assert ctx.hooks == [first, second]


def test_bytes_travel_as_bytes() -> None:
    ctx = context()
    ctx.register_metric("raw", lambda: b"\xff\x00")
    ctx.register_metric("text", lambda: {"k": "é"})
    assert ctx.metric_values() == {"raw": b"\xff\x00", "text": {"k": "é"}}


def test_a_plain_metric_takes_the_name_from_a_kind() -> None:
    ctx = context()
    ctx.register_counter("c").inc()
    ctx.register_metric("c", lambda: 5)
    with pytest.raises(ValueError) as err:
        ctx.register_counter("c")
    assert str(err.value) == f"metric 'c' of sink:{ctx.task_id} is already registered with register_metric"
    assert ctx.metric_values() == {"c": 5}
