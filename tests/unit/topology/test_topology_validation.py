"""Invalid topologies are refused at build time with an error naming what is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy import BasicBolt, Bolt, InvalidTopologyError, Spout, Stream, TopologyBuilder, TopologySpec
from stormpy.topology._imports import import_object
from stormpy.topology._spec import refuse_local_classes


class Words(Spout):
    outputs = ["word", "n"]


class Multi(Spout):
    outputs = [Stream(["x"]), Stream(["y"], name="side"), Stream(["z"], name="d", direct=True)]


class Sink(Bolt):
    def execute(self, tup: Any) -> None:
        self.ack(tup)


class Echo(BasicBolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        self.emit(tup.values)


def builder() -> TopologyBuilder:
    b = TopologyBuilder()
    b.set_spout("words", Words, 2)
    return b


def test_valid_topology_round_trips_through_its_document() -> None:
    b = builder()
    b.set_bolt("echo", Echo, 3, tasks=6).fields_grouping("words", ["word"])
    b.set_bolt("sink", Sink, config={"topology.tick.tuple.freq.secs": 5}).global_grouping("echo")
    spec = b.create_topology()
    again = TopologySpec.from_doc(spec.to_doc())
    assert again.to_doc() == spec.to_doc()
    assert again.components["echo"].num_tasks == 6
    assert again.components["echo"].num_executors == 3
    assert again.stream_fields("words", "default").to_list() == ["word", "n"]


@pytest.mark.parametrize("make, message", [
    (lambda b: b.set_bolt("x", Sink).shuffle_grouping("nope"), "unknown component 'nope'"),
    (lambda b: b.set_bolt("x", Sink).shuffle_grouping("words", "side"), "unknown stream 'side'"),
    (lambda b: b.set_bolt("x", Sink).fields_grouping("words", ["wrd"]), "unknown field 'wrd'"),
    (lambda b: b.set_bolt("x", Sink).partial_key_grouping("words", "zz"), "unknown field 'zz'"),
    (lambda b: b.set_bolt("x", Sink), "bolt 'x' subscribes to no stream"),
    (lambda b: b.set_bolt("x", Sink, 0).shuffle_grouping("words"), "parallelism must be an integer"),
    (lambda b: b.set_bolt("x", Sink, 2, tasks=0).shuffle_grouping("words"), "tasks must be"),
    (lambda b: b.set_bolt("__x", Sink).shuffle_grouping("words"), "reserved"),
    (lambda b: b.set_bolt("x", Sink, kwargs={"f": object()}).shuffle_grouping("words"),
     "msgpack-serialisable"),
])
def test_invalid_subscriptions_and_settings_are_named(make, message: str) -> None:
    b = builder()
    make(b)
    with pytest.raises(InvalidTopologyError, match=message):
        b.create_topology()


def test_no_spouts() -> None:
    b = TopologyBuilder()
    b.set_bolt("sink", Sink).shuffle_grouping("sink")
    with pytest.raises(InvalidTopologyError, match="no spouts"):
        b.create_topology()


def test_duplicate_component_id() -> None:
    b = builder()
    with pytest.raises(InvalidTopologyError, match="duplicate component id 'words'"):
        b.set_bolt("words", Sink)


def test_direct_streams_need_direct_grouping_and_vice_versa() -> None:
    b = TopologyBuilder()
    b.set_spout("m", Multi)
    b.set_bolt("x", Sink).shuffle_grouping("m", "d")
    with pytest.raises(InvalidTopologyError, match="is direct"):
        b.create_topology()
    b = TopologyBuilder()
    b.set_spout("m", Multi)
    b.set_bolt("x", Sink).direct_grouping("m", "side")
    with pytest.raises(InvalidTopologyError, match="not declared direct"):
        b.create_topology()


def test_not_a_component_class() -> None:
    with pytest.raises(InvalidTopologyError, match="not a Spout subclass"):
        TopologyBuilder().set_spout("s", Sink)
    with pytest.raises(InvalidTopologyError, match="not an instance"):
        TopologyBuilder().set_spout("s", Words())


def test_function_local_classes_are_refused_on_the_way_to_a_cluster() -> None:
    """A local class builds (LocalCluster runs it), but a spec document naming it is refused,
    with the "module level" message, by the client before submitting and by from_doc (Nimbus,
    workers); another process cannot import it either."""
    class Local(Spout):
        outputs = ["x"]

    b = TopologyBuilder()
    b.set_spout("s", Local)
    spec = b.create_topology()
    doc = spec.to_doc()
    with pytest.raises(InvalidTopologyError, match="component 's': class .*Local .*module level"):
        refuse_local_classes(doc)
    with pytest.raises(InvalidTopologyError, match="module level"):
        TopologySpec.from_doc(doc)
    forged = doc["components"]["s"]["class"].rsplit("@", 1)[0] + "@0"
    with pytest.raises(ImportError, match="module level"):
        import_object(forged)
    refuse_local_classes(builder().create_topology().to_doc())  # module-level classes pass


def test_malformed_spec_documents_are_named() -> None:
    with pytest.raises(InvalidTopologyError, match="components"):
        TopologySpec.from_doc({"version": 1})
    doc = builder().set_spout("other", Words) and None
    good = builder()
    good.set_bolt("sink", Sink).shuffle_grouping("words")
    d = good.create_topology().to_doc()
    del d["components"]["sink"]["class"]
    with pytest.raises(InvalidTopologyError, match="component 'sink'"):
        TopologySpec.from_doc(d)
    assert doc is None


def test_custom_grouping_referenced_by_path() -> None:
    b = builder()
    b.set_bolt("x", Sink).custom_grouping("words", "tests_mod:Nope")
    spec = b.create_topology()
    assert spec.components["x"].inputs[0].grouping.custom_class == "tests_mod:Nope"


def test_declarer_settings_land_in_the_spec() -> None:
    b = builder()
    (b.set_bolt("echo", Echo, 2).shuffle_grouping("words")
        .set_num_tasks(4).set_debug(True).set_max_spout_pending(7)
        .add_configurations({"topology.tick.tuple.freq.secs": 3}))
    comp = b.create_topology().components["echo"]
    assert comp.num_tasks == 4 and comp.num_executors == 2
    assert comp.config == {"topology.debug": True, "topology.max.spout.pending": 7,
                           "topology.tick.tuple.freq.secs": 3, "topology.tasks": 4}


def test_context_describes_the_task_and_the_topology() -> None:
    from stormpy.topology._context import TopologyContext
    from stormpy.topology._layout import compute_layout

    b = builder()
    b.set_bolt("echo", Echo, 2, tasks=3).shuffle_grouping("words")
    spec = b.create_topology()
    layout = compute_layout(spec, {"topology.acker.executors": 1})
    task = layout.component_tasks["echo"][1]
    ctx = TopologyContext("t-1", spec, layout, task, [task], {})
    assert ctx.component_id == "echo" and ctx.task_index == 1
    assert ctx.tasks_of("words") == layout.component_tasks["words"]
    assert ctx.output_fields().to_list() == ["word"]
    assert ctx.output_fields(component="words").to_list() == ["word", "n"]
    assert ctx.component_of(task) == "echo"


class Forgot(Bolt):
    def handle(self, tup: Any) -> None:
        self.ack(tup)


class Misspelt(Bolt):
    def exectue(self, tup: Any) -> None:
        self.ack(tup)


class StormStyleBasic(BasicBolt):
    def execute(self, tup: Any) -> None:  # Storm's BaseBasicBolt.execute; here it is process
        self.emit(tup.values)


class ProcessOnPlainBolt(Bolt):
    def process(self, tup: Any) -> None:
        self.ack(tup)


class Batches(Bolt):
    def execute_batch(self, tuples: list[Any]) -> None:
        self.ack_many(tuples)


class Columns(Bolt):
    def execute_columns(self, batch: Any) -> None:
        self.ack(batch)


class Inherited(Sink):
    outputs = ["word"]


@pytest.mark.parametrize("bolt, message", [
    (Forgot, r"^component 'x': Forgot defines no execute\(tuple\): as a Bolt it would do "
             r"nothing with its input$"),
    (Misspelt, r"Misspelt defines no execute\(tuple\).*; rename exectue\(\) to execute\(\)\?$"),
    (StormStyleBasic, r"StormStyleBasic defines no process\(tuple\): as a BasicBolt.*; "
                      r"rename execute\(\) to process\(\)\?$"),
    (ProcessOnPlainBolt, r"rename process\(\) to execute\(\)\?$"),
    (Bolt, "Bolt defines no execute"),
])
def test_a_bolt_without_its_entry_point_is_refused_naming_the_method(bolt: type, message: str) -> None:
    """A bolt that defines no method the runtime calls would hold every input un-acked (each
    tree times out and replays, forever): the builder refuses it, naming the method and a
    near-miss the class does define."""
    b = builder()
    with pytest.raises(InvalidTopologyError, match=message):
        b.set_bolt("x", bolt).shuffle_grouping("words")


@pytest.mark.parametrize("bolt", [Sink, Echo, Batches, Columns, Inherited])
def test_every_form_of_entry_point_is_accepted(bolt: type) -> None:
    b = builder()
    b.set_bolt("x", bolt).shuffle_grouping("words")
    assert "x" in b.create_topology().components


def test_a_windowed_bolt_without_execute_window_is_refused() -> None:
    from stormpy.windowing import Count, WindowedBolt

    class Average(WindowedBolt):
        def execute_window(self, window: Any) -> None:
            pass

    b = builder()
    with pytest.raises(InvalidTopologyError, match=r"component 'avg': .*Average defines no "
                       r"execute\(window\).*rename execute_window\(\) to execute\(\)\?$"):
        b.set_bolt("avg", Average.with_window(Count(4), Count(2))).shuffle_grouping("words")
