"""A daemon's first ZooKeeper connection (``stormpy.cluster.zk_start``): it waits for a ZooKeeper
that does not answer yet, with Storm's retry keys, logging each wait, instead of failing at once."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from stormpy.cluster import ZkConnectionError
from stormpy.cluster.zk_start import connect_at_start
from stormpy.config import DEFAULTS, SettingError, check_value
from stormpy.host.waiting import wait_for

FAST = {"storm.zookeeper.servers": ["zk-a", "zk-b"], "storm.zookeeper.port": 2181,
        "storm.zookeeper.retry.interval": 1, "storm.zookeeper.retry.intervalceiling.millis": 4}


class FlakyZooKeeper:
    """``connect`` for :func:`connect_at_start`: fails ``failures`` times, then returns a state."""

    def __init__(self, failures: int, error: Exception | None = None) -> None:
        self.failures = failures
        self.error = error or ZkConnectionError("could not connect to ZooKeeper at zk-a:2181 within 0.5 s")
        self.attempts = 0
        self.state = object()

    def __call__(self, conf: Any) -> Any:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise self.error
        return self.state


def test_storms_retry_keys_have_storms_defaults() -> None:
    assert DEFAULTS["storm.zookeeper.retry.times"] == 5
    assert DEFAULTS["storm.zookeeper.retry.interval"] == 1000
    assert DEFAULTS["storm.zookeeper.retry.intervalceiling.millis"] == 30000
    with pytest.raises(SettingError, match="storm.zookeeper.retry.times"):
        check_value("storm.zookeeper.retry.times", -2)


def test_a_zookeeper_that_answers_late_is_waited_for_and_each_wait_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    zk = FlakyZooKeeper(failures=3)
    with caplog.at_level(logging.INFO, logger="test.zk_start"):
        state = connect_at_start(FAST, threading.Event(), logging.getLogger("test.zk_start"),
                                 connect=zk)
    assert state is zk.state and zk.attempts == 4
    waits = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(waits) == 3
    assert waits[0].startswith("waiting for ZooKeeper at zk-a:2181,zk-b:2181: attempt 1 failed")
    assert "could not connect to ZooKeeper" in waits[0] and "(5 retries left)" in waits[0]
    assert "(3 retries left)" in waits[2]
    assert any("connected to ZooKeeper at zk-a:2181,zk-b:2181 after 4 attempts" in r.getMessage()
               for r in caplog.records if r.levelno == logging.INFO)


def test_the_last_error_propagates_after_the_retries() -> None:
    zk = FlakyZooKeeper(failures=100)
    with pytest.raises(ZkConnectionError, match="could not connect"):
        connect_at_start({**FAST, "storm.zookeeper.retry.times": 2}, threading.Event(),
                         logging.getLogger("test.zk_start"), connect=zk)
    assert zk.attempts == 3


def test_no_retries_fails_at_the_first_attempt() -> None:
    zk = FlakyZooKeeper(failures=1)
    with pytest.raises(ZkConnectionError):
        connect_at_start({**FAST, "storm.zookeeper.retry.times": 0}, threading.Event(),
                         logging.getLogger("test.zk_start"), connect=zk)
    assert zk.attempts == 1


def test_minus_one_retries_until_zookeeper_answers() -> None:
    zk = FlakyZooKeeper(failures=12)
    state = connect_at_start({**FAST, "storm.zookeeper.retry.times": -1}, threading.Event(),
                             logging.getLogger("test.zk_start"), connect=zk)
    assert state is zk.state and zk.attempts == 13


def test_a_stop_ends_the_wait_with_the_error() -> None:
    zk = FlakyZooKeeper(failures=100)
    stop = threading.Event()
    conf = {**FAST, "storm.zookeeper.retry.times": -1,
            "storm.zookeeper.retry.interval": 3_600_000,
            "storm.zookeeper.retry.intervalceiling.millis": 3_600_000}
    outcome: list[BaseException] = []

    def start() -> None:
        try:
            connect_at_start(conf, stop, logging.getLogger("test.zk_start"), connect=zk)
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            outcome.append(exc)

    thread = threading.Thread(target=start, daemon=True)
    thread.start()
    wait_for(lambda: zk.attempts >= 1, 30, "the first attempt")
    stop.set()
    thread.join(60)  # the hour-long backoff must not be waited out
    assert not thread.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], ZkConnectionError)
    assert zk.attempts == 1


def test_another_error_is_not_retried() -> None:
    zk = FlakyZooKeeper(failures=1, error=ValueError("storm.zookeeper.servers: bad host"))
    with pytest.raises(ValueError, match="bad host"):
        connect_at_start(FAST, threading.Event(), logging.getLogger("test.zk_start"), connect=zk)
    assert zk.attempts == 1


class NoteWaits(threading.Event):
    """A stop event that is never set: its waits are noted and return at once."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        assert timeout is not None
        self.waits.append(timeout)
        return False


def test_the_waits_double_from_the_interval_up_to_the_ceiling_in_milliseconds() -> None:
    zk = FlakyZooKeeper(failures=5)
    stop = NoteWaits()
    conf = {**FAST, "storm.zookeeper.retry.interval": 1500,
            "storm.zookeeper.retry.intervalceiling.millis": 5000}
    assert connect_at_start(conf, stop, logging.getLogger("test.zk_start"), connect=zk) is zk.state
    assert stop.waits == [1.5, 3.0, 5.0, 5.0, 5.0]
    low = NoteWaits()
    connect_at_start({**conf, "storm.zookeeper.retry.intervalceiling.millis": 1}, low,
                     logging.getLogger("test.zk_start"), connect=FlakyZooKeeper(failures=2))
    assert low.waits == [1.5, 1.5]  # a ceiling below the interval: the interval


def test_the_config_is_handed_to_connect_and_a_first_success_is_not_logged_as_a_wait(
        caplog: pytest.LogCaptureFixture) -> None:
    seen: list[Any] = []

    def connect(conf: Any) -> Any:
        seen.append(conf)
        return "state"

    with caplog.at_level(logging.INFO, logger="test.zk_start"):
        assert connect_at_start(FAST, NoteWaits(), logging.getLogger("test.zk_start"),
                                connect=connect) == "state"
    assert seen == [FAST]
    assert not [r for r in caplog.records if r.name == "test.zk_start"]
    with caplog.at_level(logging.INFO, logger="test.zk_start"):
        connect_at_start(FAST, NoteWaits(), logging.getLogger("test.zk_start"),
                         connect=FlakyZooKeeper(failures=1))
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.INFO] == [
        "connected to ZooKeeper at zk-a:2181,zk-b:2181 after 2 attempts"]
