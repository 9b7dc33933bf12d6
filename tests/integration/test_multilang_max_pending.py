"""``topology.shellbolt.max.pending``: a shell bolt queues at most that many tuples for its
subprocess's stdin; while its subprocess does not read, further tuples wait in the bolt, and
they all go out, in order, once it reads again (nothing lost)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mlkit import Replayer, conf, no_subprocess_left_behind

from stormpy import TopologyBuilder
from stormpy.multilang import ShellBolt
from stormpy.testing import Capture, FeederSpout, LocalCluster, wait_for

pytestmark = pytest.mark.timeout(120)

MAX_PENDING = 3
#: 8 kB values: a few fill the subprocess's stdin pipe (64 kB on Linux) while it holds
VALUES = [f"{i:03d}-" + "x" * 8000 for i in range(40)]


@pytest.fixture(autouse=True)
def _no_subprocess_left_behind() -> Iterator[None]:
    yield from no_subprocess_left_behind()


def test_a_shell_bolt_holds_tuples_back_beyond_max_pending_and_sends_them_all_in_order(
        tmp_path: Path) -> None:
    release = tmp_path / "release"
    feeder, sink = FeederSpout(["value"]), Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("echo", ShellBolt(sys.executable, "held_echo.py", env={
        "RELEASE_FILE": str(release)}).declare(["value"])).shuffle_grouping("feeder")
    b.set_bolt("sink", sink).shuffle_grouping("echo")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(**{"topology.shellbolt.max.pending": MAX_PENDING,
                                             "topology.subprocess.timeout.secs": 120}),
                                b.create_topology())

        def metrics() -> dict[str, Any]:
            tasks = cluster.get_metrics("t").get("echo", {})
            return next(iter(tasks.values()), {})

        for i, value in enumerate(VALUES):
            feeder.feed([value], i)
        # the subprocess holds: its pipe fills (64 kB: at most 8 of the values; one more in
        # its own input buffer), MAX_PENDING tuples queue for the writer, the rest wait
        wait_for(lambda: metrics().get("multilangWaiting", 0) >= len(VALUES) - 20, 60,
                 "tuples waiting in the bolt for room")
        # the writer's queue holds at most MAX_PENDING tuples (and a heartbeat)
        assert metrics()["multilangQueued"] <= MAX_PENDING + 1
        assert sink.values == [] and feeder.acked == []
        release.touch()
        wait_for(lambda: sorted(feeder.acked) == list(range(len(VALUES))), 60,
                 "every tuple acked once the subprocess reads again")
        assert [v[0] for v in sink.values] == VALUES  # nothing lost, order kept
        assert metrics()["multilangWaiting"] == 0
        assert cluster.errors("t") == []


def test_tuples_waiting_for_room_when_the_subprocess_dies_go_to_the_next_one(
        tmp_path: Path) -> None:
    release, marker = tmp_path / "release", tmp_path / "died"
    feeder, sink = FeederSpout(["value"]), Capture()
    replayer = Replayer(feeder)
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("echo", ShellBolt(sys.executable, "held_echo.py", env={
        "RELEASE_FILE": str(release), "DIE_MARKER": str(marker)}).declare(["value"])) \
        .shuffle_grouping("feeder")
    b.set_bolt("sink", sink).shuffle_grouping("echo")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(**{"topology.shellbolt.max.pending": MAX_PENDING,
                                             "topology.subprocess.timeout.secs": 120}),
                                b.create_topology())

        def waiting() -> int:
            tasks = cluster.get_metrics("t").get("echo", {})
            return int(next(iter(tasks.values()), {}).get("multilangWaiting", 0))

        for i, value in enumerate(VALUES):
            replayer.feed([value], i)
        wait_for(lambda: waiting() >= len(VALUES) - 20, 60, "tuples waiting in the bolt")
        release.touch()  # the subprocess dies: what it held is failed, the rest kept
        wait_for(lambda: sorted(set(feeder.acked)) == list(range(len(VALUES))), 60,
                 "every tuple acked after the restart")
        assert marker.exists()
        # the replays are only of tuples the dead subprocess was given
        assert 1 <= replayer.replays <= 20
        assert sorted({v[0] for v in sink.values}) == VALUES
        errors = cluster.errors("t")
        assert len(errors) == 1 and "subprocess exited (exit code 1)" in errors[0]["error"]
