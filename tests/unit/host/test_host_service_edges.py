"""The service loop's edges, exactly: the settings' bounds and messages, the delay a round asks
for, rounds timed from their end on the service's own clock, the first round's due time, the
counters, what is logged where (the service's logger, the name in every line), the thread's name
and state as shown."""

from __future__ import annotations

import logging
import threading

import pytest

from stormpy.host.backoff import Backoff
from stormpy.host.service import Service
from stormpy.host.waiting import wait_for


def test_the_settings_bounds_and_messages() -> None:
    assert Service("ok", lambda: None, interval=0.001, first_delay=0.0, warn_every=1).warn_every == 1
    for kwargs, message in (
            ({"interval": 0}, "service 'bad': interval must be > 0 seconds, got 0"),
            ({"interval": -1.5}, "service 'bad': interval must be > 0 seconds, got -1.5"),
            ({"interval": 1.0, "first_delay": -0.5}, "service 'bad': first_delay must be >= 0, got -0.5"),
            ({"interval": 1.0, "warn_every": 0}, "service 'bad': warn_every must be >= 1, got 0")):
        with pytest.raises(ValueError) as raised:
            Service("bad", lambda: None, **kwargs)  # type: ignore[arg-type]
        assert str(raised.value) == message
    service = Service("kept", lambda: None, interval=2, first_delay=3)
    assert (service.interval, service.first_delay) == (2.0, 3.0)
    assert isinstance(service.interval, float) and isinstance(service.first_delay, float)
    assert (service.due, service.rounds, service.failures, service.errors) == (0.0, 0, 0, 0)


def test_a_service_without_a_tick_says_so() -> None:
    service = Service("empty", interval=1.0)
    with pytest.raises(NotImplementedError, match=r"^service 'empty' has no tick$"):
        service.tick()
    with pytest.raises(NotImplementedError):
        service.run_once(raise_errors=True)


def test_the_delay_a_round_asks_for() -> None:
    delays: list[object] = [3, -2.0, None, 0]
    service = Service("d", lambda: delays.pop(0), interval=7)  # type: ignore[arg-type, return-value]
    assert [service.run_once() for _ in range(4)] == [3.0, 0.0, 7.0, 0.0]
    assert isinstance(Service("i", lambda: 3, interval=1).run_once(), float)


def test_rounds_are_timed_from_their_end_on_the_services_clock() -> None:
    now = [100.0]

    def slow_round() -> None:
        now[0] += 5.0  # the round takes 5 s
    service = Service("slow", slow_round, interval=10.0, clock=lambda: now[0])
    assert service.poll() == 115.0 and service.rounds == 1
    now[0] = 114.0
    assert service.poll() == 115.0 and service.rounds == 1
    now[0] = 115.0
    assert service.poll() == 130.0 and service.rounds == 2


def test_start_sets_the_first_due_time_on_the_clock() -> None:
    service = Service("late", lambda: None, interval=3600.0, first_delay=7.0, clock=lambda: 50.0)
    service.start()
    try:
        assert service.due == 57.0 and service.rounds == 0
    finally:
        assert service.stop(timeout=30)


def test_counters_count_rounds_failures_in_a_row_and_all_errors() -> None:
    outcomes: list[Exception | None] = [OSError("a"), OSError("b"), None, OSError("c")]

    def tick() -> None:
        error = outcomes.pop(0)
        if error is not None:
            raise error
    service = Service("c", tick, interval=5.0, expected_errors=(OSError,))
    seen = []
    for _ in range(4):
        service.run_once()
        seen.append((service.rounds, service.failures, service.errors))
    assert seen == [(1, 1, 1), (2, 2, 2), (3, 0, 2), (4, 1, 3)]


def test_a_failed_round_waits_the_interval_without_a_backoff_and_resets_it_with_one() -> None:
    fail = [True]

    def tick() -> None:
        if fail[0]:
            raise OSError("down")
    plain = Service("p", tick, interval=9.0, expected_errors=(OSError,))
    assert plain.run_once() == 9.0
    backoff = Backoff(1.0, 8.0)
    retried = Service("r", tick, interval=9.0, retry=backoff, expected_errors=(OSError,))
    assert [retried.run_once() for _ in range(3)] == [1.0, 2.0, 4.0]
    fail[0] = False
    assert retried.run_once() == 9.0 and backoff.failures == 0


def test_everything_is_logged_on_the_services_logger_with_its_name(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test.service.own")
    errors: list[Exception] = [OSError("zk down")] * 3 + [KeyError("k")]

    def tick() -> None:
        raise errors.pop(0)
    service = Service("watcher", tick, interval=1.0, expected_errors=(OSError,), warn_every=2, log=logger)
    with caplog.at_level(logging.INFO):
        for _ in range(4):
            service.run_once()
    lines = [(r.name, r.levelname, r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert lines == [
        ("test.service.own", "WARNING", "watcher: round failed (1 in a row): zk down", False),
        ("test.service.own", "WARNING", "watcher: round failed (2 in a row): zk down", False),
        ("test.service.own", "ERROR", "watcher: round failed (4 in a row)", True)]
    assert caplog.records[-1].exc_info[1] is not None  # type: ignore[index]
    assert isinstance(caplog.records[-1].exc_info[1], KeyError)  # type: ignore[index]
    assert Service("default", interval=1.0).log is logging.getLogger("stormpy.host.service")


def test_without_expected_errors_every_failure_is_an_error_with_its_traceback(
        caplog: pytest.LogCaptureFixture) -> None:
    service = Service("strict", lambda: 1 / 0, interval=1.0, warn_every=1)  # type: ignore[arg-type, return-value]
    with caplog.at_level(logging.WARNING, logger="stormpy.host.service"):
        service.run_once()
        service.run_once()
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("ERROR", "strict: round failed (1 in a row)"), ("ERROR", "strict: round failed (2 in a row)")]
    assert all(isinstance(r.exc_info[1], ZeroDivisionError) for r in caplog.records)  # type: ignore[index]


def test_hooks_run_on_the_named_thread_and_their_failures_are_counted(
        caplog: pytest.LogCaptureFixture) -> None:
    threads: list[tuple[str, bool]] = []
    ran = threading.Event()

    def on_start() -> None:
        threads.append((threading.current_thread().name, threading.current_thread().daemon))

    def on_stop() -> None:
        raise RuntimeError("cleanup failed")
    service = Service("hooks-thread", ran.set, interval=3600.0, on_start=on_start, on_stop=on_stop)
    assert repr(service) == "Service('hooks-thread', interval=3600, idle)"
    with caplog.at_level(logging.ERROR, logger="stormpy.host.service"):
        service.start()
        wait_for(ran.is_set, 30, "the first round")
        assert repr(service) == "Service('hooks-thread', interval=3600, running)"
        assert service.running and not service.stopping
        assert service.stop(timeout=30)
    assert threads == [("hooks-thread", True)]
    assert service.errors == 1 and service.failures == 0
    assert [(r.getMessage(), isinstance(r.exc_info[1], RuntimeError)) for r in caplog.records] == [  # type: ignore[index]
        ("hooks-thread: on_stop failed", True)]
    assert repr(service) == "Service('hooks-thread', interval=3600, stopping)"
    assert not service.running and service.stopping


def test_a_stop_requested_in_a_round_ends_the_loop_before_another_poll() -> None:
    service: Service
    calls: list[int] = []

    def tick() -> float:
        calls.append(1)
        service.request_stop()
        return 0.0  # due again at once: only the stop keeps it from running
    service = Service("once", tick, interval=3600.0)
    service.start()
    wait_for(lambda: not service._thread.is_alive(), 30, "the loop to end")  # type: ignore[union-attr]
    assert calls == [1]


def test_a_thread_stuck_past_the_stop_timeout_is_reported() -> None:
    release = threading.Event()
    entered = threading.Event()

    def stuck() -> None:
        entered.set()
        release.wait(30)
    service = Service("stuck", stuck, interval=3600.0)
    service.start()
    try:
        wait_for(entered.is_set, 30, "the round to begin")
        assert service.stop(timeout=0.05) is False
        assert not service.running and service.stopping
    finally:
        release.set()
    assert service.stop(timeout=30) is True


def test_the_loop_sleeps_until_the_next_round_is_due(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    waits: list[float] = []
    service = Service("sleeper", lambda: 40.0, interval=3600.0, clock=lambda: now[0])
    real_wait = service._woken.wait

    def wait(timeout: float | None = None) -> bool:
        waits.append(timeout)  # type: ignore[arg-type]
        service.request_stop()
        return real_wait(0)
    monkeypatch.setattr(service._woken, "wait", wait)
    service.start()
    wait_for(lambda: not service._thread.is_alive(), 30, "the loop to end")  # type: ignore[union-attr]
    assert waits == [40.0]


def test_expected_errors_warn_on_the_first_and_every_20th_by_default(
        caplog: pytest.LogCaptureFixture) -> None:
    def tick() -> None:
        raise OSError("down")
    service = Service("quiet", tick, interval=1.0, expected_errors=(OSError,))
    with caplog.at_level(logging.WARNING, logger="stormpy.host.service"):
        for _ in range(40):
            service.run_once()
    assert [r.getMessage() for r in caplog.records] == [
        "quiet: round failed (1 in a row): down", "quiet: round failed (20 in a row): down",
        "quiet: round failed (40 in a row): down"]


def test_every_failed_hook_is_counted() -> None:
    def broken() -> None:
        raise RuntimeError("hook")
    ran = threading.Event()
    service = Service("two-hooks", ran.set, interval=3600.0, on_start=broken, on_stop=broken)
    service.start()
    wait_for(ran.is_set, 30, "the first round")
    assert service.stop(timeout=30)
    assert service.errors == 2 and service.rounds == 1


def test_a_round_due_at_once_is_not_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    service = Service("eager", lambda: 0.0, interval=3600.0, clock=lambda: 5.0)
    real_wait = service._woken.wait

    def wait(timeout: float | None = None) -> bool:
        waits.append(timeout)  # type: ignore[arg-type]
        if len(waits) == 3:
            service.request_stop()
        return real_wait(0)
    monkeypatch.setattr(service._woken, "wait", wait)
    service.start()
    wait_for(lambda: not service._thread.is_alive(), 30, "the loop to end")  # type: ignore[union-attr]
    assert waits == [0.0, 0.0, 0.0] and service.rounds == 3
