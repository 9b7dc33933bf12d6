"""pystorm components driven in the test's thread (stormpy.multilang._pystorm_adapter): the
adapted bolt or spout is bound to a RecordingCollector and called as its executor calls it, so
each behaviour is checked in milliseconds (the LocalCluster tests in
test_multilang_pystorm_adapter.py check the same classes in a running topology)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pystorm_kit as kit
import pytest

from stormpy.multilang._pystorm_adapter import PystormBolt, PystormSpout
from stormpy.testing import RecordingCollector, test_tuple
from stormpy.topology._imports import class_path


@pytest.fixture(autouse=True)
def _clear() -> Iterator[None]:
    kit.SEEN.clear()
    yield
    kit.SEEN.clear()


def bolt(cls: type, conf: dict[str, Any] | None = None, **kwargs: Any) -> tuple[Any, RecordingCollector]:
    """The adapted pystorm bolt ``cls``, prepared on a recording collector."""
    collector = RecordingCollector()
    component = PystormBolt(class_path(cls), **kwargs)
    collector.prepare(component, conf, kwargs={"component": class_path(cls), **kwargs},
                      component_id="adapted", task=7)
    return component, collector


def spout(cls: type, conf: dict[str, Any] | None = None) -> tuple[Any, RecordingCollector]:
    collector = RecordingCollector()
    component = PystormSpout(class_path(cls))
    collector.prepare(component, conf, kwargs={"component": class_path(cls)},
                      component_id="adapted", task=7)
    return component, collector


def test_a_tuple_reaches_process_as_pystorm_gives_it_and_its_emit_is_anchored_and_acked() -> None:
    component, collector = bolt(kit.RecordBolt)
    assert kit.SEEN["initialize"] == [("adapted", 7, "adapted")]
    tup = test_tuple(["x"], component="feeder", stream="words", task=3)
    component.execute(tup)
    (seen,) = kit.SEEN["tuples"]
    assert (seen.id, seen.component, seen.stream, seen.task, tuple(seen.values)) == (
        "1", "feeder", "words", 3, ("x",))
    (emitted,) = collector.emitted
    assert (emitted.values, emitted.stream, emitted.anchors) == (["x"], "default", [tup])
    assert collector.acked == [tup] and collector.failed == [] and collector.errors == []
