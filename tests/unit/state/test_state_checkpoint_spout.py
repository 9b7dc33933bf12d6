"""The checkpoint spout's protocol on its own (simulated monotonic clock, memory store): the
normal prepare/commit cycle at the checkpoint interval, recovery after a failure or a restart
from each saved phase, and what it saves before it acts."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from stormpy.state import CHECKPOINT_STREAM, MemoryBackend, Store
from stormpy.state import _checkpoint as cp
from stormpy.state._checkpoint import CheckpointSpout
from stormpy.testing import RecordingCollector

TOPOLOGY = "test-topology"  # RecordingCollector's topology id


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(cp, "time", SimpleNamespace(monotonic=c.monotonic))
    return c


BACKEND: list[MemoryBackend] = []


@pytest.fixture(autouse=True)
def backend(monkeypatch: pytest.MonkeyPatch) -> MemoryBackend:
    """One memory backend per test, the one every context of RecordingCollector gets (the
    LocalCluster's role), so a spout opened again finds what it saved."""
    BACKEND[:] = [MemoryBackend()]
    monkeypatch.setattr("stormpy.testing._unit.MemoryBackend", lambda: BACKEND[0])
    return BACKEND[0]


def store_of(name: str) -> Store:
    """The memory provider's store of the checkpoint spout (per topology id, not name)."""
    return BACKEND[0].store("checkpoints", TOPOLOGY).sub("$state", "$checkpointspout")


def open_spout(name: str, keep: bool = False, **conf: Any
               ) -> tuple[CheckpointSpout, RecordingCollector]:
    """The spout of topology ``name``, opened on a fresh store (``keep``: on what it holds)."""
    if not keep:
        BACKEND[0].drop(TOPOLOGY)
    col = RecordingCollector()
    spout = col.prepare(CheckpointSpout(), {"topology.name": name, **conf},
                        component_id="$checkpointspout")
    return spout, col


def step(spout: CheckpointSpout, col: RecordingCollector) -> list[Any] | None:
    """One next_tuple call: the [txid, action] it emitted (checked to carry itself as message id
    on the checkpoint stream), or None."""
    before = len(col.emitted)
    spout.next_tuple()
    if len(col.emitted) == before:
        return None
    [e] = col.emitted[before:]
    assert e.stream == CHECKPOINT_STREAM and e.msg_id == e.values
    return e.values


def test_a_fresh_spout_initialises_then_checkpoints_at_the_interval(clock: Clock) -> None:
    spout, col = open_spout("fresh", **{"topology.state.checkpoint.interval.ms": 200})
    assert spout.interval == 0.2
    assert step(spout, col) == [0, "initstate"]
    assert step(spout, col) is None  # one checkpoint at a time
    clock.now += 5
    spout.ack([0, "initstate"])
    clock.now += 0.199
    assert step(spout, col) is None  # the interval counts from the end of recovery
    clock.now += 0.001
    assert step(spout, col) == [1, "prepare"]
    assert store_of("fresh").get("txstate") == [1, "preparing"]  # saved before it is emitted
    assert step(spout, col) is None
    spout.ack([1, "prepare"])
    assert store_of("fresh").get("txstate") == [1, "committing"]
    assert step(spout, col) == [1, "commit"]  # at once, not after an interval
    spout.ack([1, "commit"])
    assert store_of("fresh").get("txstate") == [1, "committed"]
    assert (spout.txid, spout.phase) == (1, "committed")
    assert step(spout, col) is None
    clock.now += 0.199
    assert step(spout, col) is None  # the interval counts from the last prepare
    clock.now += 0.001
    assert step(spout, col) == [2, "prepare"]


@pytest.mark.parametrize("interval", [None, 0, ""])
def test_the_default_interval_is_one_second(clock: Clock, interval: Any) -> None:
    spout, col = open_spout("default", **{"topology.state.checkpoint.interval.ms": interval})
    assert spout.interval == 1.0
    step(spout, col)
    spout.ack([0, "initstate"])
    clock.now += 0.999
    assert step(spout, col) is None
    clock.now += 0.001
    assert step(spout, col) == [1, "prepare"]


def test_a_failed_prepare_rolls_back_then_initialises_again(clock: Clock) -> None:
    spout, col = open_spout("rollback", **{"topology.state.checkpoint.interval.ms": 10})
    step(spout, col)
    spout.ack([0, "initstate"])
    clock.now += 1
    assert step(spout, col) == [1, "prepare"]
    spout.fail([1, "prepare"])
    assert step(spout, col) == [1, "rollback"]
    spout.ack([1, "rollback"])
    assert store_of("rollback").get("txstate") == [0, "committed"]
    assert step(spout, col) == [0, "initstate"]  # still recovering until INITSTATE is acked
    spout.fail([0, "initstate"])
    assert step(spout, col) == [0, "initstate"]
    spout.ack([0, "initstate"])
    clock.now += 1
    assert step(spout, col) == [1, "prepare"]


def test_a_failed_commit_is_committed_again(clock: Clock) -> None:
    spout, col = open_spout("commit", **{"topology.state.checkpoint.interval.ms": 10})
    step(spout, col)
    spout.ack([0, "initstate"])
    clock.now += 1
    step(spout, col)
    spout.ack([1, "prepare"])
    assert step(spout, col) == [1, "commit"]
    spout.fail([1, "commit"])
    assert step(spout, col) == [1, "commit"]
    spout.ack([1, "commit"])
    assert step(spout, col) == [1, "initstate"]
    spout.ack([1, "initstate"])
    assert store_of("commit").get("txstate") == [1, "committed"]


@pytest.mark.parametrize(("saved", "first"), [
    ([4, "committed"], [4, "initstate"]), ([5, "preparing"], [5, "rollback"]),
    ([5, "committing"], [5, "commit"])])
def test_a_restarted_spout_recovers_from_the_saved_phase(clock: Clock, saved: list[Any],
                                                         first: list[Any]) -> None:
    store_of("restart").put("txstate", saved)
    spout, col = open_spout("restart", keep=True)
    assert (spout.txid, spout.phase, spout.recovering) == (saved[0], saved[1], True)
    assert step(spout, col) == first


def test_the_store_is_the_topologys_memory_and_closed_with_the_spout(clock: Clock) -> None:
    col = RecordingCollector()
    spout = col.prepare(CheckpointSpout(), {}, component_id="$checkpointspout")
    assert spout.store.location == f"memory:checkpoints/{TOPOLOGY}/$state/$checkpointspout"
    closed: list[bool] = []
    spout.store.close = lambda: closed.append(True)  # type: ignore[method-assign]
    spout.close()
    assert closed == [True]
    assert list(CheckpointSpout.declare_outputs({})) == [CHECKPOINT_STREAM]
    assert list(CheckpointSpout.declare_outputs({})[CHECKPOINT_STREAM].fields) == ["txid", "action"]
    assert CheckpointSpout.declare_outputs({})[CHECKPOINT_STREAM].name == CHECKPOINT_STREAM
