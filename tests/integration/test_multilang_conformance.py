"""Multilang conformance: the host against recorded protocol exchanges.

Each exchange (tests/multilang/exchanges/*.json, written from Storm's multilang protocol page)
is played by tests/multilang/replay.py as the subprocess: it checks every message the host
sends (the handshake and its pid file, tuples, heartbeats, task ids, spout commands) and sends
the recorded answers; its verdict file says whether the host kept to the exchange, and the
topology's outcome (what was emitted, acked, failed, reported) says whether the host acted on
the answers.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mlkit import FailSome, conf, no_subprocess_left_behind, replay_bolt, replay_spout, verdicts

from stormpy import TopologyBuilder
from stormpy.testing import Capture, FeederSpout, LocalCluster, wait_for

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _no_subprocess_left_behind() -> Iterator[None]:
    yield from no_subprocess_left_behind()


def _ok(replay_dir: Path, run: int = 0) -> bool:
    verdict = verdicts(replay_dir).get(run)
    assert verdict in (None, "ok"), verdict
    return verdict == "ok"


@pytest.mark.parametrize("serializer", ["json", "msgpack"])
def test_bolt_emits_acks_and_fails_as_recorded(tmp_path: Path, serializer: str) -> None:
    feeder, sink = FeederSpout(["sentence"]), Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("split", replay_bolt("bolt_emit_ack_fail", tmp_path, serializer=serializer)) \
        .shuffle_grouping("feeder")
    b.set_bolt("sink", sink).shuffle_grouping("split")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(), b.create_topology())
        feeder.feed(["snow white and the seven dwarfs"], 1)
        feeder.feed(["bad input"], 2)
        wait_for(lambda: feeder.acked == [1] and feeder.failed == [2], 20,
                 "sentence 1 acked and 2 failed by the subprocess")
        wait_for(lambda: _ok(tmp_path), 20, "the player's verdict")
        assert sorted(sink.values) == [["snow"], ["white"]]
        assert cluster.errors("t") == []


def test_named_stream_and_direct_emits(tmp_path: Path) -> None:
    feeder, other, direct = FeederSpout(["sentence"]), Capture(), Capture()
    outputs = {"default": ["word"], "other": ["word"],
               "direct": {"fields": ["word"], "direct": True}}
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("split", replay_bolt("bolt_streams_direct", tmp_path, outputs=outputs)) \
        .shuffle_grouping("feeder")
    b.set_bolt("other-sink", other).shuffle_grouping("split", "other")
    b.set_bolt("direct-sink", direct, 2).direct_grouping("split", "direct")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(), b.create_topology())
        feeder.feed(["x"], 1)
        feeder.feed(["y"], 2)
        wait_for(lambda: sorted(feeder.acked) == [1, 2], 20, "both tuples acked")
        wait_for(lambda: _ok(tmp_path), 20, "the player's verdict")
        assert other.values == [["on-other"]]
        assert list(direct.by_task.values()) == [[["to-one"]]]  # one task: the one named
        assert cluster.errors("t") == []


def test_bolts_get_heartbeat_tuples(tmp_path: Path) -> None:
    feeder = FeederSpout(["sentence"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("split", replay_bolt("bolt_heartbeat", tmp_path)).shuffle_grouping("feeder")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(**{"topology.subprocess.timeout.secs": 3}),
                                b.create_topology())
        wait_for(lambda: _ok(tmp_path), 20, "two heartbeats answered")
        assert cluster.errors("t") == []


def test_error_and_metrics_commands(tmp_path: Path) -> None:
    feeder = FeederSpout(["sentence"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("split", replay_bolt("bolt_error_metrics", tmp_path)).shuffle_grouping("feeder")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(), b.create_topology())
        feeder.feed(["m"], 1)
        wait_for(lambda: feeder.acked == [1], 20, "the tuple acked")
        errors = cluster.errors("t", "split")
        assert len(errors) == 1
        assert "something broke in the subprocess" in errors[0]["error"]
        assert f"split:{errors[0]['task']}" in errors[0]["error"]

        def metric() -> object:
            tasks = cluster.get_metrics("t").get("split", {})
            return next((m.get("words-seen") for m in tasks.values()), None)
        assert wait_for(metric, 20, "the words-seen metric") == 3

        def queued() -> object:  # the tuple was acked: nothing waits for the writer
            return next(iter(cluster.get_metrics("t")["split"].values())).get("multilangQueued")
        wait_for(lambda: queued() == 0, 20, "the multilangQueued metric at 0")


@pytest.mark.parametrize("serializer", ["json", "msgpack"])
def test_spout_commands_as_recorded(tmp_path: Path, serializer: str) -> None:
    b = TopologyBuilder()
    b.set_spout("numbers", replay_spout("spout_next_ack_fail", tmp_path, serializer=serializer))
    b.set_bolt("judge", FailSome, kwargs={"fail": ["two"]}).shuffle_grouping("numbers")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(), b.create_topology())
        wait_for(lambda: _ok(tmp_path), 20, "the player's verdict")
        stats = wait_for(lambda: (s := cluster.get_stats("t")["numbers"])["acked"] == 1
                         and s["failed"] == 1 and s, 20, "one ack and one fail counted")
        assert stats["emitted"] == 2
        assert cluster.errors("t") == []


def test_spout_deactivate_and_activate(tmp_path: Path) -> None:
    b = TopologyBuilder()
    b.set_spout("numbers", replay_spout("spout_deactivate", tmp_path))
    b.set_bolt("judge", FailSome).shuffle_grouping("numbers")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(), b.create_topology())
        wait_for(lambda: (tmp_path / "runs").exists(), 20, "the subprocess started")
        cluster.deactivate("t")
        cluster.activate("t")
        wait_for(lambda: _ok(tmp_path), 20, "the player's verdict")
        assert cluster.errors("t") == []
