"""pystorm components in-process (stormpy.multilang._pystorm_adapter): pystorm's own classes keep
their semantics with no subprocess: Tuple fields, auto-anchoring, auto-ack, auto-fail and the
error on an exception (and a rebuilt instance where pystorm would exit), task ids of emits,
direct emits, log / metrics / raise_exception, batching bolts' group keys and ticks, spouts'
ack/fail/activate/deactivate, and ReliableSpout's replays."""

from __future__ import annotations

from collections.abc import Iterator

import pystorm_kit as kit
import pystorm_wordcount as wordcount
import pytest
from mlkit import FailSome

from stormpy import TopologyBuilder  # noqa: E402
from stormpy.multilang import pystorm_component  # noqa: E402
from stormpy.testing import Capture, FeederSpout, LocalCluster, wait_for  # noqa: E402

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _clear() -> Iterator[None]:
    kit.SEEN.clear()
    yield
    kit.SEEN.clear()




def test_tuples_auto_anchoring_and_auto_ack() -> None:
    feeder = FeederSpout(["word"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("record", pystorm_component(kit.RecordBolt)).shuffle_grouping("feeder")
    b.set_bolt("judge", FailSome, kwargs={"fail": ["x"]}).shuffle_grouping("record")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", {}, b.create_topology())
        feeder.feed(["x"], 1)
        feeder.feed(["y"], 2)
        wait_for(lambda: feeder.failed == [1] and feeder.acked == [2], 20,
                 "x failed downstream (its emit was anchored), y acked")
        assert cluster.errors("t") == []
    (component, task, ctx_component), = kit.SEEN["initialize"]
    assert component == ctx_component == "record" and isinstance(task, int)
    first = kit.SEEN["tuples"][0]
    assert type(first).__name__ == "Tuple"  # pystorm's namedtuple
    assert (first.component, first.stream, first.values.word) == ("feeder", "default", "x")
    assert isinstance(first.id, str) and isinstance(first.task, int)
    assert type(first.values).__name__ == "FeederDefaultTuple"  # the source stream's fields


def test_a_bolt_without_auto_anchoring_emits_unanchored_unless_it_anchors() -> None:
    """Both words fail downstream: only the explicitly anchored one fails its spout tuple."""
    feeder = FeederSpout(["word"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("free", pystorm_component(kit.UnanchoredBolt)).shuffle_grouping("feeder")
    b.set_bolt("judge", FailSome, kwargs={"fail": ["loose", "anchored"]}).shuffle_grouping("free")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", {}, b.create_topology())
        feeder.feed(["loose"], 1)
        feeder.feed(["anchored"], 2)
        wait_for(lambda: feeder.acked == [1] and feeder.failed == [2], 20,
                 "the unanchored emit's failure not reaching its input, the anchored one's reaching it")
        assert cluster.errors("t") == []


def test_emits_answer_task_ids_and_direct_emits_go_to_the_task() -> None:
    feeder, sink, direct = FeederSpout(["word"]), Capture(), Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("ids", pystorm_component(kit.TaskIdsBolt)).shuffle_grouping("feeder")
    b.set_bolt("sink", sink).shuffle_grouping("ids")
    b.set_bolt("direct-sink", direct).direct_grouping("ids", "direct")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", {}, b.create_topology())
        feeder.feed(["w"], 1)
        wait_for(lambda: feeder.acked == [1] and direct.values, 20, "the tuple acked")
        sink_task = next(iter(sink.by_task))
    assert kit.SEEN["tasks"] == [[sink_task]]
    (target, answered), = kit.SEEN["direct"]
    assert answered == [target] and list(direct.by_task) == [target]
    assert direct.values == [["w"]]


def test_log_metrics_and_raise_exception() -> None:
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("tools", pystorm_component(kit.ToolsBolt)).shuffle_grouping("feeder")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", {}, b.create_topology())
        feeder.feed([7], 1)
        wait_for(lambda: feeder.acked == [1], 20, "the tuple acked by hand")
        errors = cluster.errors("t", "tools")
        assert len(errors) == 1
        assert "ValueError raised while processing Tuple" in errors[0]["error"]
        assert "FeederDefaultTuple(n=7)" in errors[0]["error"]  # pystorm's own report
        metrics = cluster.get_metrics("t")["tools"]
        assert [m["seen"] for m in metrics.values()] == [7]


@pytest.mark.parametrize(("cls", "builds"), [(kit.CrashBolt, 2), (kit.CrashKeepRunningBolt, 1)])
def test_an_exception_fails_the_tuple_reports_it_and_keeps_the_worker(
        cls: type, builds: int) -> None:
    feeder, sink = FeederSpout(["word"]), Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("crash", pystorm_component(cls)).shuffle_grouping("feeder")
    b.set_bolt("sink", sink).shuffle_grouping("crash")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", {}, b.create_topology())
        feeder.feed(["boom"], 1)
        feeder.feed(["fine"], 2)
        wait_for(lambda: feeder.failed == [1] and feeder.acked == [2], 20,
                 "boom auto-failed, fine acked")
        errors = cluster.errors("t", "crash")
        assert len(errors) == 1 and "ValueError" in errors[0]["error"]
        assert "boom" in errors[0]["error"]
        assert sink.values == [["fine"]]
    # pystorm exits on an exception unless exit_on_exception is off: the adapter rebuilds instead
    assert len(kit.SEEN["initialize"]) == builds


def test_batching_bolt_groups_by_key_and_processes_on_ticks() -> None:
    feeder, sink = FeederSpout(["word"]), Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("batch", pystorm_component(kit.GroupCountBolt, tick_secs=1)) \
        .shuffle_grouping("feeder")
    b.set_bolt("sink", sink).shuffle_grouping("batch")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, b.create_topology())
        for i, word in enumerate(["a", "b", "a"]):
            feeder.feed([word], i)
        cluster.wait_until_quiet("t")
        assert sink.values == [] and feeder.acked == []  # held until a batch closes
        cluster.advance_time(3)
        wait_for(lambda: sorted(feeder.acked) == [0, 1, 2], 20, "the batch acked")
    assert sorted(sink.values) == [["a", 2], ["b", 1]]
    assert sorted(kit.SEEN["batches"]) == [("a", ["a", "a"]), ("b", ["b"])]


def test_tickless_batching_bolt_batches_every_secs_between_batches() -> None:
    feeder, sink = FeederSpout(["word"]), Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("batch", pystorm_component(kit.TicklessGroupCountBolt)).shuffle_grouping("feeder")
    b.set_bolt("sink", sink).shuffle_grouping("batch")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, b.create_topology())
        for i, word in enumerate(["a", "b", "b"]):
            feeder.feed([word], i)
        cluster.wait_until_quiet("t")
        assert sink.values == []
        cluster.advance_time(2)
        wait_for(lambda: sorted(feeder.acked) == [0, 1, 2], 20, "the batch acked")
    assert sorted(sink.values) == [["a", 1], ["b", 2]]


def test_spout_ack_fail_and_activation() -> None:
    b = TopologyBuilder()
    b.set_spout("words", pystorm_component(kit.ListSpout))
    b.set_bolt("judge", FailSome, kwargs={"fail": ["b"]}).shuffle_grouping("words")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", {}, b.create_topology())
        wait_for(lambda: sorted(kit.SEEN["acked"]) == ["a", "c"] and kit.SEEN["failed"] == ["b"],
                 20, "a and c acked, b failed")
        cluster.deactivate("t")
        wait_for(lambda: kit.SEEN["deactivate"], 20, "deactivate called")
        cluster.activate("t")
        wait_for(lambda: len(kit.SEEN["activate"]) >= 1, 20, "activate called")


def test_reliable_spout_replays_failed_tuples() -> None:
    b = TopologyBuilder()
    b.set_spout("sentences", pystorm_component(wordcount.SentenceSpout))
    b.set_bolt("judge", FailSome, kwargs={"fail": ["bad"]}).shuffle_grouping("sentences")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", {wordcount.SENTENCES_KEY: ["good", "bad"]},
                                b.create_topology())
        # max_fails = 5: five replays, then pystorm gives up on the sixth fail
        stats = wait_for(lambda: (s := cluster.get_stats("t")["sentences"])["failed"] == 6 and s,
                         20, "bad failed six times")
        assert stats["acked"] == 1 and stats["emitted"] == 7


def test_an_emit_anchored_to_an_acked_tuple_is_reported() -> None:
    feeder, sink = FeederSpout(["word"]), Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("late", pystorm_component(kit.AckThenEmitBolt)).shuffle_grouping("feeder")
    b.set_bolt("sink", sink).shuffle_grouping("late")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", {}, b.create_topology())
        feeder.feed(["w"], 1)
        wait_for(lambda: feeder.acked == [1] and len(sink.values) == 2, 20, "both emits")
        errors = cluster.errors("t", "late")
        assert len(errors) == 1 and "anchored an emit onto unknown tuple id" in errors[0]["error"]
