"""Holding the process's SparkSession never waits for Spark to start: ``retain_spark`` runs on the
executor loop (a Spark bolt's ``prepare``), so it must return while another task of the same
worker is starting the session off the loop (a loop blocked for the JVM's start misses its
heartbeats and the supervisor restarts the worker)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from stormpy.connectors.spark import session as spark_session
from stormpy.host.waiting import wait_for


class SlowStart:
    """Stands in for ``_create``: blocks until released, like a JVM starting on a busy host."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.stopped = 0

    def __call__(self, settings: Any, probe_secs: float = 5.0) -> Any:
        self.started.set()
        assert self.release.wait(60), "the test never released the session start"
        return self

    def stop(self) -> None:
        self.stopped += 1


@pytest.fixture
def slow_start(monkeypatch: pytest.MonkeyPatch) -> Iterator[SlowStart]:
    start = SlowStart()
    monkeypatch.setattr(spark_session, "require_spark", lambda: None)
    monkeypatch.setattr(spark_session, "_create", start)
    monkeypatch.setattr(spark_session, "is_alive", lambda s: s is start and start.stopped == 0)
    monkeypatch.setattr(spark_session, "_session", None)
    monkeypatch.setattr(spark_session, "_holders", 0)
    yield start
    start.release.set()


def test_retain_returns_while_another_thread_starts_the_session(slow_start: SlowStart) -> None:
    starter = threading.Thread(target=spark_session.get_spark, args=({},), daemon=True)
    starter.start()
    assert slow_start.started.wait(30), "get_spark never began starting the session"
    retained = threading.Event()
    holder = threading.Thread(target=lambda: (spark_session.retain_spark(), retained.set()),
                              daemon=True)
    holder.start()
    wait_for(retained.is_set, 30, "retain_spark while the session is starting")
    assert not slow_start.release.is_set()  # the session was still starting meanwhile
    slow_start.release.set()
    starter.join(30)
    assert spark_session._session is slow_start
    spark_session.release_spark()  # the last holder stops the session
    assert slow_start.stopped == 1 and spark_session._session is None


def test_the_last_release_stops_only_when_nothing_retained_it_again(
        slow_start: SlowStart) -> None:
    slow_start.release.set()
    spark_session.retain_spark()
    spark_session.retain_spark()
    assert spark_session.get_spark({}) is slow_start
    spark_session.release_spark()
    assert slow_start.stopped == 0 and spark_session._session is slow_start
    spark_session.release_spark()
    assert slow_start.stopped == 1
