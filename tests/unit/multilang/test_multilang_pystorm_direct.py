"""pystorm components driven in the test's thread (stormpy.multilang._pystorm_adapter): the
adapted bolt or spout is bound to a RecordingCollector, prepared with the context of a real
topology (its inputs' fields included) and called as its executor calls it, so each behaviour is
checked in milliseconds (test_multilang_pystorm_adapter.py runs the same classes in LocalCluster).
The kit's script components run ``SEEN["do"]``, the test's own code, inside pystorm."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pystorm_kit as kit
import pytest

from stormpy import TopologyBuilder, Tuple
from stormpy.multilang import ShellSpout, pystorm_component
from stormpy.multilang._pystorm_adapter import (
    TICK_KEY,
    PystormBolt,
    PystormSpout,
    require_pystorm,
)
from stormpy.multilang._shell import ShellComponentError
from stormpy.testing import FeederSpout, RecordingCollector, test_tuple
from stormpy.topology._context import TopologyContext
from stormpy.topology._layout import compute_layout

#: the task ids the collector answers to undirected emits
ANSWER = [4, 9]


@pytest.fixture(autouse=True)
def _clear() -> Iterator[None]:
    kit.SEEN.clear()
    yield
    kit.SEEN.clear()


def script(fn: Callable[..., Any]) -> None:
    """What the kit's script component does (``SEEN["do"]``)."""
    kit.SEEN["do"] = [fn]


class Rig:
    def __init__(self, component: Any, collector: RecordingCollector, context: TopologyContext):
        self.component = component
        self.collector = collector
        self.context = context

    def execute(self, values: list[Any], component: str = "feeder", stream: str = "default",
                task: int = 3) -> Tuple:
        tup = test_tuple(values, component=component, stream=stream, task=task)
        self.component.execute(tup)
        return tup

    def tick(self) -> Tuple:
        tup = test_tuple([3], component="__system", stream="__tick", task=-1)
        self.component.execute(tup)
        return tup

    def errors(self) -> list[str]:
        assert all(isinstance(e, ShellComponentError) for e in self.collector.errors)
        return [str(e) for e in self.collector.errors]

    @property
    def instance(self) -> Any:
        return self.component._inst


def adapted(cls: type, conf: dict[str, Any] | None = None, *, spout: bool = False,
            tick_secs: float | None = None) -> Rig:
    """``cls`` adapted as the component "adapted" of a topology whose spouts "feeder" (field
    "word") and "2nd-src" (stream "my-words": "w", "n") feed it; prepared (or opened) on a
    recording collector whose undirected emits answer :data:`ANSWER`."""
    conf = dict(conf or {})
    b = TopologyBuilder()
    if spout:
        b.set_spout("adapted", pystorm_component(cls))
    else:
        b.set_spout("feeder", FeederSpout(["word"]))
        b.set_spout("2nd-src", ShellSpout("true").declare({"my-words": ["w", "n"]}))
        b.set_bolt("adapted", pystorm_component(cls, tick_secs=tick_secs)) \
            .shuffle_grouping("feeder").shuffle_grouping("2nd-src", "my-words")
    spec = b.create_topology()
    kwargs = spec.components["adapted"].kwargs
    layout = compute_layout(spec, conf)
    [task] = layout.component_tasks["adapted"]
    context = TopologyContext("topo-1", spec, layout, task, [task], conf)
    component = (PystormSpout if spout else PystormBolt)(**kwargs)
    collector = RecordingCollector()
    collector.bind(component, kwargs=kwargs, component_id="adapted")
    obj: Any = component
    emit = obj.emit

    def answering_emit(*args: Any, **kw: Any) -> list[int]:
        emit(*args, **kw)
        return list(ANSWER)
    obj.emit = answering_emit
    if spout:
        component.open(conf, context)
    else:
        component.prepare(conf, context)
    return Rig(component, collector, context)


def emitted(rig: Rig) -> list[tuple[Any, ...]]:
    """Each emit as (values, stream, anchors' values, direct task)."""
    return [(e.values, e.stream, [a.values for a in e.anchors], e.task)
            for e in rig.collector.emitted]


# --- the instance and what it is given -----------------------------------------------------

def test_the_instance_is_set_up_as_pystorm_sets_it_up() -> None:
    script(lambda bolt, tup: None)
    rig = adapted(kit.ScriptBolt, {"topology.name": "words", "topology.debug": True, "x.y": [1]})
    [inst] = kit.SEEN["initialize"]
    assert inst is rig.instance
    [(conf, ctx)] = kit.SEEN["initialize_args"]  # initialize(storm_conf, context) as pystorm
    assert conf is inst.storm_conf and ctx is inst.context
    assert inst.topology_name == "words" and inst.debug is True
    assert inst.task_id == rig.context.task_id and isinstance(inst.task_id, int)
    assert inst.component_name == "adapted"
    assert inst.storm_conf["x.y"] == [1] and inst.storm_conf["topology.name"] == "words"
    assert inst.context["componentid"] == "adapted" and inst.context["taskid"] == inst.task_id
    assert inst.context["source->stream->fields"] == {"feeder": {"default": ["word"]},
                                                      "2nd-src": {"my-words": ["w", "n"]}}
    assert inst.logger.name == "pystorm.component.adapted"


def test_the_topology_name_is_the_topology_id_when_unset_and_debug_off_by_default() -> None:
    script(lambda bolt, tup: None)
    rig = adapted(kit.ScriptBolt)
    assert rig.instance.topology_name == "topo-1"
    assert rig.instance.debug is False


@pytest.mark.parametrize("cls", [kit.ScriptBolt, kit.GeneralScriptBolt])
def test_a_tuple_reaches_process_with_its_ids_source_and_named_values(cls: type) -> None:
    script(lambda bolt, tup: None)
    rig = adapted(cls)
    rig.execute(["x"], task=3)
    rig.execute(["y", 2], component="2nd-src", stream="my-words", task=5)
    rig.execute([1, 2, 3], component="elsewhere", stream="s", task=6)
    first, second, third = kit.SEEN["tuples"]
    assert (first.id, first.component, first.stream, first.task) == ("1", "feeder", "default", 3)
    assert type(first.values).__name__ == "FeederDefaultTuple" and first.values.word == "x"
    assert (second.id, second.component, second.stream, second.task) == (
        "2", "2nd-src", "my-words", 5)
    # names made identifiers as pystorm makes them: non-word characters and a leading digit
    assert type(second.values).__name__ == "_2Nd_SrcMy_WordsTuple"
    assert (second.values.w, second.values.n) == ("y", 2)
    assert third.id == "3" and third.values == (1, 2, 3)  # a stream not declared: a plain tuple
    if cls is kit.GeneralScriptBolt:  # the class's own read_tuple ran (and acked by its own ack)
        assert kit.SEEN["own"] == ["read_tuple", "ack"] * 3
    else:
        assert "own" not in kit.SEEN


def test_the_classs_own_emit_ack_and_fail_are_the_ones_called() -> None:
    def do(bolt: Any, tup: Any) -> None:
        bolt.emit(["w"])
        bolt.fail(tup)
        bolt.auto_ack = False
    script(do)
    rig = adapted(kit.GeneralScriptBolt)
    x = rig.execute(["x"])
    assert kit.SEEN["own"] == ["read_tuple", "emit", "fail"]
    assert emitted(rig) == [(["w"], "default", [["x"]], None)] and rig.collector.failed == [x]


# --- emits --------------------------------------------------------------------------------

@pytest.mark.parametrize("cls", [kit.ScriptBolt, kit.GeneralScriptBolt])
def test_emits_are_anchored_to_the_current_tuple_and_it_is_acked_after_process(cls: type) -> None:
    answers = []

    def do(bolt: Any, tup: Any) -> None:
        answers.append(bolt.emit([tup.values[0]]))
        answers.append(bolt.emit((tup.values[0] + "!",), stream=None,
                                 need_task_ids=True))
        answers.append(bolt.emit(["a", 1], stream="pair", anchors=[]))
    script(do)
    rig = adapted(cls)
    x = rig.execute(["x"])
    assert emitted(rig) == [(["x"], "default", [["x"]], None), (["x!"], "default", [["x"]], None),
                            (["a", 1], "pair", [], None)]
    assert answers == [None, ANSWER, None]
    assert rig.collector.acked == [x] and rig.collector.failed == [] and rig.errors() == []


@pytest.mark.parametrize("cls", [kit.ScriptBolt, kit.GeneralScriptBolt])
def test_explicit_anchors_by_tuple_or_id_and_no_auto_anchor(cls: type) -> None:
    held: list[Any] = []

    def do(bolt: Any, tup: Any) -> None:
        if not held:
            held.append(tup)
            bolt.auto_ack = False
            return
        bolt.emit(["both"], anchors=[held[0], tup.id])
        bolt.emit(["first"], anchors=[held[0].id])
        bolt.auto_anchor = False
        bolt.emit(["loose"])
        bolt.emit(["anchored"], anchors=[tup])
    script(do)
    rig = adapted(cls)
    rig.execute(["a"])
    rig.execute(["b"])
    assert emitted(rig) == [(["both"], "default", [["a"], ["b"]], None),
                            (["first"], "default", [["a"]], None),
                            (["loose"], "default", [], None),
                            (["anchored"], "default", [["b"]], None)]
    assert rig.collector.acked == [] and rig.errors() == []


@pytest.mark.parametrize("cls", [kit.ScriptBolt, kit.GeneralScriptBolt])
def test_direct_emits_go_to_the_task_and_answer_it(cls: type) -> None:
    answers = []

    def do(bolt: Any, tup: Any) -> None:
        answers.append(bolt.emit(["d"], stream="direct", direct_task=12, need_task_ids=True))
        answers.append(bolt.emit(["e"], stream="direct", direct_task=0))
    script(do)
    rig = adapted(cls)
    rig.execute(["x"])
    assert emitted(rig) == [(["d"], "direct", [["x"]], 12), (["e"], "direct", [["x"]], 0)]
    assert answers == [[12], None]


@pytest.mark.parametrize("cls", [kit.ScriptBolt, kit.GeneralScriptBolt])
def test_an_emit_of_no_list_fails_the_tuple_reports_and_rebuilds(cls: type) -> None:
    script(lambda bolt, tup: bolt.emit("text"))
    rig = adapted(cls)
    x = rig.execute(["x"])
    assert rig.collector.failed == [x] and rig.collector.acked == []
    [error] = rig.errors()
    assert error.startswith(f"pystorm component adapted:{rig.context.task_id}: Python TypeError "
                            "raised while processing Tuple Tuple(id='1', component='feeder'")
    assert "All Tuples must be either lists or tuples, received <class 'str'> instead." in error
    assert len(kit.SEEN["initialize"]) == 2  # pystorm would exit: the instance is rebuilt


@pytest.mark.parametrize("cls", [kit.ScriptBolt, kit.GeneralScriptBolt])
def test_an_emit_anchored_to_an_acked_or_unknown_tuple_is_reported_and_sent_unanchored(
        cls: type) -> None:
    def do(bolt: Any, tup: Any) -> None:
        bolt.emit(["before"])
        bolt.ack(tup)
        bolt.emit(["after"])  # still auto-anchored to the acked tuple
        bolt.emit(["ghost"], anchors=["77"])
        bolt.auto_ack = False
    script(do)
    rig = adapted(cls)
    x = rig.execute(["x"])
    task = rig.context.task_id
    assert emitted(rig) == [(["before"], "default", [["x"]], None),
                            (["after"], "default", [], None), (["ghost"], "default", [], None)]
    assert rig.collector.acked == [x]
    assert rig.errors() == [
        f"pystorm bolt adapted:{task} anchored an emit onto unknown tuple id '1'",
        f"pystorm bolt adapted:{task} anchored an emit onto unknown tuple id '77'"]


@pytest.mark.parametrize("cls", [kit.ScriptBolt, kit.GeneralScriptBolt])
def test_an_emit_anchored_to_an_object_of_no_known_kind_is_reported_as_an_unknown_id(
        cls: type) -> None:
    """Not a crash of the component (a list is no key of the tuples held)."""
    script(lambda bolt, tup: bolt.emit(["odd"], anchors=[["not", "an", "id"]]))
    rig = adapted(cls)
    x = rig.execute(["x"])
    assert emitted(rig) == [(["odd"], "default", [], None)]
    assert rig.errors() == [f"pystorm bolt adapted:{rig.context.task_id} anchored an emit onto "
                            "unknown tuple id ['not', 'an', 'id']"]
    assert rig.collector.acked == [x] and len(kit.SEEN["initialize"]) == 1


def test_emits_anchored_to_the_same_tuples_again_map_them_each_time() -> None:
    def do(bolt: Any, tup: Any) -> None:
        for word in tup.values[0].split():
            bolt.emit([word])
    script(do)
    rig = adapted(kit.ScriptBolt)
    rig.execute(["a b"])
    rig.execute(["c"])
    assert emitted(rig) == [(["a"], "default", [["a b"]], None), (["b"], "default", [["a b"]], None),
                            (["c"], "default", [["c"]], None)]
    assert [t.values for t in rig.collector.acked] == [["a b"], ["c"]]


# --- acks and fails -----------------------------------------------------------------------

@pytest.mark.parametrize("cls", [kit.ScriptBolt, kit.GeneralScriptBolt])
def test_acks_and_fails_by_tuple_or_id_and_of_unknown_ids(cls: type) -> None:
    held: list[Any] = []

    def do(bolt: Any, tup: Any) -> None:
        bolt.auto_ack = False
        held.append(tup)
        if len(held) == 3:
            bolt.ack(held[0])
            bolt.fail(held[1].id)
            bolt.ack(tup.id)
            bolt.fail(held[0])  # acked already
            bolt.ack("nope")
    script(do)
    rig = adapted(cls)
    a, b, c = rig.execute(["a"]), rig.execute(["b"]), rig.execute(["c"])
    assert rig.collector.acked == [a, c] and rig.collector.failed == [b]
    task = rig.context.task_id
    assert rig.errors() == [
        f"pystorm bolt adapted:{task}: fail of unknown tuple id '1' (never given, or already "
        "acked or failed)",
        f"pystorm bolt adapted:{task}: ack of unknown tuple id 'nope' (never given, or already "
        "acked or failed)"]


@pytest.mark.parametrize("cls", [kit.ScriptBolt, kit.GeneralScriptBolt])
@pytest.mark.parametrize("bad_id", [5, ["a", "list"]])
def test_an_ack_of_an_id_of_no_known_kind_is_reported(cls: type, bad_id: Any) -> None:
    script(lambda bolt, tup: (setattr(bolt, "auto_ack", False), bolt.ack(bad_id)))
    rig = adapted(cls)
    rig.execute(["a"])
    assert rig.collector.acked == [] and len(kit.SEEN["initialize"]) == 1
    assert rig.errors() == [f"pystorm bolt adapted:{rig.context.task_id}: ack of unknown tuple "
                            f"id {bad_id!r} (never given, or already acked or failed)"]


# --- exceptions ---------------------------------------------------------------------------

def test_an_exception_fails_the_tuple_reports_it_and_rebuilds_failing_what_was_held() -> None:
    def do(bolt: Any, tup: Any) -> None:
        bolt.auto_ack = False
        if tup.values[0] == "boom":
            raise ValueError("boom")
    script(do)
    rig = adapted(kit.ScriptBolt)
    held = rig.execute(["held"])
    boom = rig.execute(["boom"])
    assert rig.collector.failed == [boom, held]  # pystorm's auto-fail, then the dropped one
    [error] = rig.errors()
    assert "ValueError" in error and "boom" in error
    first, second = kit.SEEN["initialize"]
    assert rig.instance is second and first is not second
    script(lambda bolt, tup: bolt.ack("1"))  # the old instance's id: forgotten
    rig.execute(["next"])
    assert "ack of unknown tuple id '1'" in rig.errors()[-1]


def test_without_exit_on_exception_the_instance_and_its_tuples_are_kept() -> None:
    def do(bolt: Any, tup: Any) -> None:
        bolt.auto_ack = False
        bolt.exit_on_exception = False
        if tup.values[0] == "boom":
            raise ValueError("boom")
    script(do)
    rig = adapted(kit.ScriptBolt)
    held = rig.execute(["held"])
    boom = rig.execute(["boom"])
    assert rig.collector.failed == [boom] and len(kit.SEEN["initialize"]) == 1
    script(lambda bolt, tup: bolt.ack("1"))
    rig.execute(["next"])
    assert rig.collector.acked == [held] and len(rig.errors()) == 1


def test_an_exception_while_handling_an_exception_is_logged_and_the_instance_rebuilt(
        caplog: pytest.LogCaptureFixture) -> None:
    def do(bolt: Any, tup: Any) -> None:
        def broken(*args: Any) -> None:
            raise RuntimeError("cannot report")
        bolt.raise_exception = broken
        raise ValueError("first")
    script(do)
    rig = adapted(kit.ScriptBolt)
    with caplog.at_level(logging.WARNING, logger="stormpy.multilang.adapted"):
        rig.execute(["x"])
    task = rig.context.task_id
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.ERROR,
         f"adapted:{task}: handling ValueError('first') failed: RuntimeError('cannot report')"),
        (logging.WARNING, f"adapted:{task}: rebuilding the pystorm component after "
                          "ValueError('first') (pystorm would exit)")]
    assert len(kit.SEEN["initialize"]) == 2


# --- log, error, metrics, unknown messages ---------------------------------------------------

def test_log_messages_reach_the_components_logger_at_their_level(
        caplog: pytest.LogCaptureFixture) -> None:
    def do(bolt: Any, tup: Any) -> None:
        bolt.log("warned", level="warning")
        bolt.log("plain")
        bolt.log("traced", level="trace")
        bolt.send_message({"command": "log", "msg": "no level"})
        bolt.send_message({"command": "log", "msg": "odd level", "level": 9})
    script(do)
    rig = adapted(kit.ScriptBolt)
    with caplog.at_level(1, logger="stormpy.multilang.adapted"):
        rig.execute(["x"])
    task = rig.context.task_id
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("stormpy.multilang.adapted", logging.WARNING, f"adapted:{task}: warned"),
        ("stormpy.multilang.adapted", logging.INFO, f"adapted:{task}: plain"),
        ("stormpy.multilang.adapted", 5, f"adapted:{task}: traced"),
        ("stormpy.multilang.adapted", logging.INFO, f"adapted:{task}: no level"),
        ("stormpy.multilang.adapted", logging.INFO, f"adapted:{task}: odd level")]


def test_raise_exception_is_reported_and_the_tuple_goes_on() -> None:
    script(lambda bolt, tup: bolt.raise_exception(ValueError("reported"), tup))
    rig = adapted(kit.ScriptBolt)
    x = rig.execute(["x"])
    [error] = rig.errors()
    assert error.startswith(f"pystorm component adapted:{rig.context.task_id}: Python ValueError "
                            "raised while processing Tuple Tuple(id='1', component='feeder', "
                            "stream='default', task=3, values=FeederDefaultTuple(word='x'))")
    assert rig.collector.acked == [x] and len(kit.SEEN["initialize"]) == 1


def test_metrics_are_task_metrics_holding_the_last_value() -> None:
    def do(bolt: Any, tup: Any) -> None:
        bolt.report_metric("seen", tup.values[0])
        bolt.report_metric("also", {"n": 1})
        bolt.send_message({"command": "metrics", "name": "", "params": 1})
        bolt.send_message({"command": "metrics", "name": 5, "params": 1})
    script(do)
    rig = adapted(kit.ScriptBolt)
    rig.execute([7])
    assert rig.context.metric_values() == {"seen": 7, "also": {"n": 1}}
    rig.execute([8])
    assert rig.context.metric_values() == {"seen": 8, "also": {"n": 1}}
    assert rig.errors() == []


def test_sync_is_quiet_and_an_unknown_message_is_reported() -> None:
    def do(bolt: Any, tup: Any) -> None:
        bolt.send_message({"command": "sync"})
        bolt.send_message({"command": "bogus", "x": 1})
        bolt.send_message(["not", "a", "map"])
    script(do)
    rig = adapted(kit.ScriptBolt)
    rig.execute(["x"])
    task = rig.context.task_id
    assert rig.errors() == [
        f"pystorm component adapted:{task} sent an unknown message {{'command': 'bogus', 'x': 1}}",
        f"pystorm component adapted:{task} sent an unknown message ['not', 'a', 'map']"]


def test_an_unknown_message_is_quoted_up_to_200_characters() -> None:
    script(lambda bolt, tup: bolt.send_message({"command": "bogus", "x": "y" * 300}))
    rig = adapted(kit.ScriptBolt)
    rig.execute(["x"])
    text = repr({"command": "bogus", "x": "y" * 300})[:200]
    assert rig.errors() == [
        f"pystorm component adapted:{rig.context.task_id} sent an unknown message {text}"]


# --- batching bolts -----------------------------------------------------------------------

def test_declare_config_sets_the_tick_frequency_only_when_given() -> None:
    assert PystormBolt.declare_config({"tick_secs": 2.5}) == {TICK_KEY: 2.5}
    assert PystormBolt.declare_config({"tick_secs": None}) == {}
    assert PystormBolt.declare_config({}) == {}
    assert TICK_KEY == "topology.tick.tuple.freq.secs"


def test_a_batching_bolts_emits_answer_no_task_ids_and_its_batch_closes_on_a_tick() -> None:
    answers = []

    def do(bolt: Any, key: Any, tups: Any) -> None:
        answers.append(bolt.emit([key], need_task_ids=True))
    script(do)
    rig = adapted(kit.ScriptBatchingBolt, tick_secs=1)
    a1, b1, a2 = rig.execute(["a"]), rig.execute(["b"]), rig.execute(["a"])
    assert rig.collector.emitted == [] and rig.collector.acked == []
    first = rig.tick()
    assert rig.collector.emitted == [] and rig.collector.acked == [first]
    tick = rig.tick()  # past ticks_between_batches (1)
    assert sorted(e.values[0] for e in rig.collector.emitted) == ["a", "b"]
    anchors = {e.values[0]: e.anchors for e in rig.collector.emitted}
    assert anchors == {"a": [a1, a2], "b": [b1]}
    assert answers == [None, None]
    assert sorted(t.values[0] for t in rig.collector.acked if t not in (first, tick)) == [
        "a", "a", "b"]


def test_a_tickless_batching_bolt_processes_its_batches_on_each_tick() -> None:
    def do(bolt: Any, key: Any, tups: Any) -> None:
        bolt.emit([key, len(tups)])
    script(do)
    threads_before = {t.name for t in threading.enumerate()}
    main_name = threading.current_thread().name
    rig = adapted(kit.ScriptTicklessBolt)
    # built without pystorm's process set-up: no batcher thread, the caller's thread not renamed
    assert {t.name for t in threading.enumerate()} == threads_before
    assert threading.current_thread().name == main_name
    a, b1, b2 = rig.execute(["a"]), rig.execute(["b"]), rig.execute(["b"])
    assert rig.collector.emitted == []
    rig.tick()
    assert sorted(e.values for e in rig.collector.emitted) == [["a", 1], ["b", 2]]
    assert sorted(t.values[0] for t in rig.collector.acked if t.values[0] != 3) == ["a", "b", "b"]
    assert {id(t) for t in rig.collector.acked} >= {id(a), id(b1), id(b2)}
    rig.collector.clear()
    rig.tick()
    assert rig.collector.emitted == []


def test_a_tickless_batch_that_raises_fails_its_tuples_reports_and_rebuilds(
        caplog: pytest.LogCaptureFixture) -> None:
    def do(bolt: Any, key: Any, tups: Any) -> None:
        raise ValueError(f"bad batch {key}")
    script(do)
    rig = adapted(kit.ScriptTicklessBolt)
    a = rig.execute(["a"])
    with caplog.at_level(logging.WARNING, logger="stormpy.multilang.adapted"):
        rig.tick()
    assert a in rig.collector.failed and rig.collector.emitted == []
    [error] = rig.errors()
    # the batch's exception, reported as pystorm reports one outside a tuple
    assert error.startswith(f"pystorm component adapted:{rig.context.task_id}: Python ValueError "
                            "raised\nTraceback")
    assert "ValueError: bad batch a" in error
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.WARNING, f"adapted:{rig.context.task_id}: rebuilding the pystorm component after "
                          "ValueError('bad batch a') (pystorm would exit)")]
    assert len(kit.SEEN["initialize"]) == 2 and rig.instance is kit.SEEN["initialize"][1]


def test_a_tickless_batch_whose_exception_cannot_be_handled_is_logged_and_rebuilt(
        caplog: pytest.LogCaptureFixture) -> None:
    def do(bolt: Any, key: Any, tups: Any) -> None:
        def broken(*args: Any) -> None:
            raise RuntimeError("cannot report")
        bolt.raise_exception = broken
        raise ValueError("bad batch")
    script(do)
    rig = adapted(kit.ScriptTicklessBolt)
    rig.execute(["a"])
    with caplog.at_level(logging.WARNING, logger="stormpy.multilang.adapted"):
        rig.tick()
    task = rig.context.task_id
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.ERROR, f"adapted:{task}: handling ValueError('bad batch') failed: "
                        "RuntimeError('cannot report')"),
        (logging.WARNING, f"adapted:{task}: rebuilding the pystorm component after "
                          "ValueError('bad batch') (pystorm would exit)")]
    assert len(kit.SEEN["initialize"]) == 2


# --- spouts -------------------------------------------------------------------------------

def test_a_spout_is_opened_and_each_call_reaches_its_method() -> None:
    calls = []
    answers = []

    def do(spout: Any, command: str, tup_id: Any) -> None:
        calls.append((command, tup_id))
        if command == "next":
            answers.append(spout.emit(["w"], tup_id="m1"))
            answers.append(spout.emit(["d"], tup_id="m2", stream="direct", direct_task=3,
                                      need_task_ids=True))
            answers.append(spout.emit(["loose"], need_task_ids=True))
            answers.append(spout.emit(["elsewhere"], tup_id="m3", stream="other"))
    script(do)
    rig = adapted(kit.ScriptSpout, {"topology.name": "s"}, spout=True)
    [inst] = kit.SEEN["initialize"]
    assert inst.component_name == "adapted" and inst.topology_name == "s"
    rig.component.next_tuple()
    rig.component.ack("m1")
    rig.component.fail("m2")
    rig.component.deactivate()
    rig.component.activate()
    assert calls == [("next", None), ("ack", "m1"), ("fail", "m2"), ("deactivate", None),
                     ("activate", None)]
    assert [(e.values, e.stream, e.msg_id, e.task) for e in rig.collector.emitted] == [
        (["w"], "default", "m1", None), (["d"], "direct", "m2", 3), (["loose"], "default", None, None),
        (["elsewhere"], "other", "m3", None)]
    assert answers == [None, [3], ANSWER, None]
    assert rig.errors() == []


def test_a_spout_sending_a_bolt_command_is_reported() -> None:
    script(lambda spout, command, tup_id: spout.send_message({"command": "ack", "id": "1"}))
    rig = adapted(kit.ScriptSpout, spout=True)
    rig.component.next_tuple()
    assert rig.errors() == [f"pystorm spout adapted:{rig.context.task_id} sent ack (a bolt command)"]


def test_a_spout_that_raises_reports_and_is_rebuilt() -> None:
    def do(spout: Any, command: str, tup_id: Any) -> None:
        raise ValueError(f"bad {command}")
    script(do)
    rig = adapted(kit.ScriptSpout, spout=True)
    rig.component.next_tuple()
    [error] = rig.errors()
    assert "bad next" in error and error.startswith("pystorm component adapted:")
    assert len(kit.SEEN["initialize"]) == 2


def test_without_pystorm_the_error_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pystorm", None)  # import pystorm: ImportError
    with pytest.raises(ImportError) as missing:
        require_pystorm()
    assert str(missing.value) == ("pystorm components need the pystorm package: pip install "
                                  "'stormpy[multilang]'")


@pytest.mark.parametrize("cls", [kit.ScriptBolt, kit.GeneralScriptBolt])
def test_an_emit_with_an_unknown_anchor_keeps_its_stream_task_and_answer(cls: type) -> None:
    """The unknown anchor is reported and left out; the known ones, the stream, the direct task
    and the task ids asked for are kept."""
    answers = []

    def do(bolt: Any, tup: Any) -> None:
        answers.append(bolt.emit(["a", 1], stream="pair", anchors=["77", tup], need_task_ids=True))
        answers.append(bolt.emit(["d"], stream="direct", anchors=["78"], direct_task=6,
                                 need_task_ids=True))
    script(do)
    rig = adapted(cls)
    rig.execute(["x"])
    assert emitted(rig) == [(["a", 1], "pair", [["x"]], None), (["d"], "direct", [], 6)]
    assert answers == [ANSWER, [6]]
    task = rig.context.task_id
    assert rig.errors() == [f"pystorm bolt adapted:{task} anchored an emit onto unknown tuple id '77'",
                            f"pystorm bolt adapted:{task} anchored an emit onto unknown tuple id '78'"]


def test_an_ack_by_the_classs_own_method_ends_the_anchoring_of_the_shortcut_emits() -> None:
    def do(bolt: Any, tup: Any) -> None:
        bolt.emit(["before"])
        bolt.ack(tup)
        bolt.emit(["after"])  # auto-anchored to the tuple acked: unknown by now
        bolt.auto_ack = False
    script(do)
    rig = adapted(kit.OwnAckScriptBolt)
    x = rig.execute(["x"])
    assert kit.SEEN["own"] == ["ack"]
    assert emitted(rig) == [(["before"], "default", [["x"]], None), (["after"], "default", [], None)]
    assert rig.collector.acked == [x]
    assert rig.errors() == [f"pystorm bolt adapted:{rig.context.task_id} anchored an emit onto "
                            "unknown tuple id '1'"]
