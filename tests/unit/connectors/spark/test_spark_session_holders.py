"""Holding and releasing the process's SparkSession never waits for Spark to start:
``retain_spark`` and ``release_spark`` run on the executor loop (a Spark bolt's ``prepare`` and
``cleanup``), so they must return while another task of the same worker is starting the session
off the loop (a loop blocked for the JVM's start misses its heartbeats and the supervisor restarts
the worker). A last release during a start stops the session once the start is over, unless a
holder came meanwhile."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from stormpy.connectors.spark import _session as spark_session
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


def _start_in_background(slow_start: SlowStart) -> threading.Thread:
    starter = threading.Thread(target=spark_session.get_spark, args=({},), daemon=True)
    starter.start()
    assert slow_start.started.wait(30), "get_spark never began starting the session"
    return starter


def _returns(call: Any) -> None:
    """``call`` returns on a thread of its own (waited for generously, never forever)."""
    done = threading.Event()
    threading.Thread(target=lambda: (call(), done.set()), daemon=True).start()
    wait_for(done.is_set, 30, f"{call.__name__} while the session is starting")


def test_last_release_during_a_start_stops_the_session_once_started(slow_start: SlowStart) -> None:
    spark_session.retain_spark()
    starter = _start_in_background(slow_start)
    _returns(spark_session.release_spark)
    assert not slow_start.release.is_set() and slow_start.stopped == 0
    slow_start.release.set()
    starter.join(30)
    wait_for(lambda: slow_start.stopped == 1, 30, "the session stopped after its start")
    assert spark_session._session is None


def test_a_holder_arriving_before_the_start_ends_keeps_the_session(slow_start: SlowStart) -> None:
    spark_session.retain_spark()
    starter = _start_in_background(slow_start)
    _returns(spark_session.release_spark)
    _returns(spark_session.retain_spark)  # a new task prepares while the start still runs
    slow_start.release.set()
    starter.join(30)
    stops = [t for t in threading.enumerate() if t.name == "stormpy-spark-stop"]
    for thread in stops:
        thread.join(30)
    assert spark_session._session is slow_start and slow_start.stopped == 0
    spark_session.release_spark()  # nothing starts now: the last release stops it at once
    assert slow_start.stopped == 1 and spark_session._session is None


def test_release_with_holders_left_keeps_the_session(slow_start: SlowStart) -> None:
    slow_start.release.set()
    spark_session.retain_spark()
    spark_session.retain_spark()
    assert spark_session.get_spark({}) is slow_start
    spark_session.release_spark()
    assert spark_session._session is slow_start and slow_start.stopped == 0
    spark_session.release_spark()
    assert slow_start.stopped == 1
