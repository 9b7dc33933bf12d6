"""The worker raises the generation-0 GC threshold (never lowers it) from its config."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from stormpy import TopologyBuilder
from stormpy.testing import Capture, FeederSpout
from stormpy.worker import Worker, WorkerConfig


@pytest.fixture
def gc_threshold() -> Iterator[None]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 11, 12)
    yield
    gc.set_threshold(*saved)


def _worker(conf: dict[str, object]) -> Worker:
    b = TopologyBuilder()
    b.set_spout("f", FeederSpout(["n"]))
    b.set_bolt("sink", Capture()).shuffle_grouping("f")
    return Worker(WorkerConfig("t", b.create_topology(), conf))


def test_the_default_raises_the_threshold(gc_threshold: None) -> None:
    _worker({}).tune_gc()
    assert gc.get_threshold()[0] == 50000


def test_a_configured_threshold_is_used_and_never_lowers_it(gc_threshold: None) -> None:
    _worker({"topology.worker.gc.threshold": 20000}).tune_gc()
    assert gc.get_threshold() == (20000, 11, 12)  # the older generations are left alone
    _worker({"topology.worker.gc.threshold": 5000}).tune_gc()
    assert gc.get_threshold()[0] == 20000


def test_zero_leaves_the_interpreter_setting(gc_threshold: None) -> None:
    _worker({"topology.worker.gc.threshold": 0}).tune_gc()
    assert gc.get_threshold()[0] == 700


@pytest.mark.parametrize("setting", [0, None])
def test_without_a_threshold_a_disabled_collector_stays_disabled(gc_threshold: None,
                                                                 setting: object) -> None:
    gc.set_threshold(0, 11, 12)  # automatic collection off
    _worker({"topology.worker.gc.threshold": setting}).tune_gc()
    assert gc.get_threshold() == (0, 11, 12)
