"""Multilang faults: a subprocess that dies, hangs, writes garbage, sends an unknown command or
acks a tuple id it was never given is reported as an error of its task naming what it sent; the
tuples it held are failed (and replayed by the reliable spout), the SUBPROCESS is restarted, and
the worker runs on: nothing is lost. Each fault is played by tests/multilang/replay.py (run 0
commits the fault, the restarted run 1 echoes)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mlkit import Replayer, conf, no_subprocess_left_behind, replay_bolt, replay_spout

from stormpy import TopologyBuilder
from stormpy.testing import Capture, FeederSpout, LocalCluster, wait_for

pytestmark = pytest.mark.timeout(60)

FAST = {"topology.subprocess.timeout.secs": 2}


@pytest.fixture(autouse=True)
def _no_subprocess_left_behind() -> Iterator[None]:
    yield from no_subprocess_left_behind()


@pytest.mark.parametrize(("exchange", "reported"), [
    ("fault_dies", "subprocess exited (exit code 1)"),
    ("fault_hangs", "subprocess heartbeat timeout"),
    ("fault_garbage", "sent garbage: not JSON: 'this is not json'"),
    ("fault_unknown_command", "unknown command 'frobnicate'"),
    ("fault_unknown_ack", "ack of unknown tuple id 'no-such-id'"),
])
def test_a_bolt_subprocess_fault_is_reported_its_tuples_replayed_and_it_restarts(
        tmp_path: Path, exchange: str, reported: str) -> None:
    feeder, sink = FeederSpout(["word"]), Capture()
    replayer = Replayer(feeder)
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("split", replay_bolt(exchange, tmp_path)).shuffle_grouping("feeder")
    b.set_bolt("sink", sink).shuffle_grouping("split")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(**FAST), b.create_topology())
        for i, word in enumerate(["a", "b", "c"]):
            replayer.feed([word], i)
        wait_for(lambda: sorted(feeder.acked) == [0, 1, 2], 30,
                 "every tuple acked after the restart")
        assert replayer.replays >= 1  # the tuple the first subprocess held was failed, replayed
        assert {v[0] for v in sink.values} == {"a", "b", "c"}
        errors = cluster.errors("t")
        assert len(errors) == 1, errors
        assert errors[0]["component"] == "split"
        assert f"split:{errors[0]['task']}" in errors[0]["error"]
        assert reported in errors[0]["error"]
        assert (tmp_path / "runs").read_text() == "2"  # restarted once
        replayer.feed(["d"], 3)  # the worker is healthy and the new subprocess works
        wait_for(lambda: 3 in feeder.acked, 20, "a tuple after the fault")


@pytest.mark.parametrize(("exchange", "reported"), [
    ("spout_fault_dies", "subprocess exited (exit code 1)"),
    ("spout_fault_hangs", "subprocess heartbeat timeout"),
])
def test_a_spout_subprocess_fault_is_reported_and_it_restarts(
        tmp_path: Path, exchange: str, reported: str) -> None:
    sink = Capture()
    b = TopologyBuilder()
    b.set_spout("words", replay_spout(exchange, tmp_path))
    b.set_bolt("sink", sink).shuffle_grouping("words")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(**FAST), b.create_topology())
        wait_for(lambda: ["y"] in sink.values, 30, "the restarted spout's tuple")
        errors = cluster.errors("t")
        assert len(errors) == 1, errors
        assert errors[0]["component"] == "words"
        assert reported in errors[0]["error"]
        wait_for(lambda: cluster.get_stats("t")["words"]["acked"] >= 1, 20,
                 "the new subprocess's tuple acked")


def test_a_tuple_the_serializer_cannot_carry_is_failed_and_reported(tmp_path: Path) -> None:
    feeder, sink = FeederSpout(["word"]), Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("split", replay_bolt("echo", tmp_path)).shuffle_grouping("feeder")
    b.set_bolt("sink", sink).shuffle_grouping("split")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(), b.create_topology())
        feeder.feed([b"\x00bytes"], 1)  # JSON has no bytes
        feeder.feed(["text"], 2)
        wait_for(lambda: feeder.failed == [1] and feeder.acked == [2], 20,
                 "the bytes failed, the text acked")
        errors = cluster.errors("t")
        assert len(errors) == 1 and "cannot be sent to the subprocess (json)" in errors[0]["error"]
        assert sink.values == [["text"]]
        assert (tmp_path / "runs").read_text() == "1"  # no restart for that
