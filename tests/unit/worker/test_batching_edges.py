"""Micro-batch bookkeeping (stormpy._batching) at its edges: which settings are refused, age measured from
when a batch opened, oldest-first closing under a limit, draining at shutdown, and what a batch's
``BatchInfo`` reports."""

from __future__ import annotations

from time import perf_counter

import pytest

from stormpy._batching import CLOSED_BY_COUNT, CLOSED_BY_TIME, BatchCollector, BatchSource
from stormpy.connectors.spark import BatchInfo
from stormpy.topology import Fields, Tuple


def tup(*values: object, stream: str = "default", component: str = "src",
        fields: tuple[str, ...] | None = ("k", "v")) -> Tuple:
    return Tuple(list(values), stream, 1, component, None if fields is None else Fields(fields))


def test_idle_seconds_must_be_positive_when_given() -> None:
    for bad in (0, -1):
        with pytest.raises(ValueError, match=rf"^idle_seconds must be positive or None, got {bad}$"):
            BatchCollector(10, 1.0, bad)
    assert BatchCollector(10, 1.0, 0.5).idle_seconds == 0.5


def test_a_stream_without_declared_fields_is_refused_naming_it() -> None:
    c = BatchCollector(10, 1.0, None)
    with pytest.raises(ValueError, match=r"^tuples from words/raw have no declared fields; a batch "
                                         r"needs them as its column names$"):
        c.add(tup("x", component="words", stream="raw", fields=None))


def test_a_batch_knows_its_source_and_when_it_closed() -> None:
    c = BatchCollector(batch_size=2, batch_seconds=10, idle_seconds=None)
    c.add(tup("a", 1, component="words", stream="s"))
    before = perf_counter()
    batch = c.add(tup("b", 2, component="words", stream="s"))
    assert batch is not None
    assert batch.source == BatchSource("words", "s")
    assert before <= batch.closed_at <= perf_counter()
    assert batch.touched_at == batch.opened_at == 0.0


def test_age_counts_from_when_the_batch_opened_not_from_the_start() -> None:
    c = BatchCollector(batch_size=100, batch_seconds=2, idle_seconds=None)
    c.advance(5.0)
    c.add(tup("a", 1))
    [batch] = c.open.values()
    assert batch.opened_at == batch.touched_at == 5.0
    c.advance(1.0)
    assert c.take_due(1) == []
    c.advance(1.0)
    [closed] = c.take_due(1)
    assert closed.reason == CLOSED_BY_TIME


def test_no_limit_no_batch() -> None:
    c = BatchCollector(batch_size=100, batch_seconds=1, idle_seconds=None)
    c.add(tup("a", 1, stream="s1"))
    c.add(tup("b", 2, stream="s2"))
    c.advance(2.0)
    assert c.take_due(0) == [] and c.take_due(-1) == []
    assert len(c.open) == 2


def test_due_batches_close_oldest_first_whatever_their_names() -> None:
    c = BatchCollector(batch_size=100, batch_seconds=1, idle_seconds=None)
    c.add(tup("a", 1, stream="zz"))
    c.advance(0.5)
    c.add(tup("b", 2, stream="aa"))
    c.advance(1.0)
    assert [b.source.stream for b in c.take_due(1)] == ["zz"]


def test_drain_hands_back_every_open_batch_and_forgets_them() -> None:
    c = BatchCollector(batch_size=100, batch_seconds=10, idle_seconds=None)
    c.add(tup("a", 1, stream="s1"))
    c.add(tup("b", 2, stream="s2"))
    c.add(tup("c", 3, stream="s1"))
    drained = c.drain()
    assert sorted((b.source.stream, len(b)) for b in drained) == [("s1", 2), ("s2", 1)]
    assert c.open == {} and c.drain() == []


def test_batch_info_reports_the_batch_it_describes() -> None:
    c = BatchCollector(batch_size=2, batch_seconds=10, idle_seconds=None)
    c.add(tup("a", 1, component="words", stream="s"))
    batch = c.add(tup("b", 2, component="words", stream="s"))
    assert batch is not None
    batch.batch_id = 7
    batch.started_at = batch.closed_at + 1.0
    batch.finished_at = batch.closed_at + 3.5
    error = RuntimeError("boom")
    info = BatchInfo.of(batch, 4, error)
    assert info == BatchInfo(7, "words", "s", 2, CLOSED_BY_COUNT, batch.closed_at,
                             batch.closed_at + 1.0, batch.closed_at + 3.5, 4, error)
    assert not info.ok and info.latency == pytest.approx(3.5) and info.queued == pytest.approx(1.0)
    assert BatchInfo.of(batch, 0, None).ok
