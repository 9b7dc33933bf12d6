"""The one background loop (stormpy.host.service): rounds on simulated time through ``poll``,
``run_once`` as the direct seam, error logging with the service's name, waking and stopping the
real thread (waits on conditions, never on time)."""

from __future__ import annotations

import logging
import threading

import pytest

from stormpy.host.backoff import Backoff
from stormpy.host.service import Service
from stormpy.host.waiting import wait_for


class Rounds:
    """A tick that counts its calls and can be told to fail or to ask for a delay."""

    def __init__(self) -> None:
        self.calls = 0
        self.fail: BaseException | None = None
        self.next_delay: float | None = None

    def __call__(self) -> float | None:
        self.calls += 1
        if self.fail is not None:
            raise self.fail
        return self.next_delay


def test_poll_runs_a_round_only_when_due_on_simulated_time() -> None:
    rounds = Rounds()
    service = Service("sim", rounds, interval=10.0)
    assert service.poll(now=100.0) == 110.0  # due at once before the first round
    assert rounds.calls == 1
    assert service.poll(now=109.9) == 110.0
    assert rounds.calls == 1
    assert service.poll(now=110.0) == 120.0
    assert rounds.calls == 2
    assert service.rounds == 2


def test_a_tick_may_ask_for_its_next_round_sooner_or_later() -> None:
    rounds = Rounds()
    service = Service("sim", rounds, interval=10.0)
    rounds.next_delay = 2.5
    assert service.poll(now=0.0) == 2.5
    rounds.next_delay = -1.0  # overdue: the next round is due at once, not in the past
    assert service.poll(now=2.5) == 2.5
    rounds.next_delay = None
    assert service.poll(now=2.5) == 12.5


def test_wake_runs_the_next_poll_before_it_is_due() -> None:
    rounds = Rounds()
    service = Service("sim", rounds, interval=10.0)
    service.poll(now=0.0)
    service.wake()
    assert service.poll(now=1.0) == 11.0
    assert rounds.calls == 2
    assert service.poll(now=2.0) == 11.0  # the wake was used up
    assert rounds.calls == 2


def test_a_wake_during_a_round_runs_one_more_round_at_once() -> None:
    rounds = Rounds()

    def woken_while_running() -> None:
        rounds()
        service.wake()  # as another thread's wake arriving during the round

    service = Service("sim", woken_while_running, interval=10.0)
    service.poll(now=0.0)
    assert service.poll(now=1.0) == 11.0 and rounds.calls == 2
    service2 = Service("sim2", rounds, interval=10.0)
    service2.poll(now=0.0)
    assert service2.poll(now=1.0) == 10.0 and rounds.calls == 3  # no wake: not due


def test_a_wake_from_another_thread_while_the_round_runs_is_not_lost() -> None:
    """A topology submitted while the replicator runs its round reaches the standby at once:
    the wake that arrives mid-round starts the next round right after it, not an hour later."""
    in_round, release, second = threading.Event(), threading.Event(), threading.Event()
    calls: list[int] = []

    def tick() -> None:
        calls.append(1)
        if len(calls) == 1:
            in_round.set()
            release.wait(60)
        else:
            second.set()

    service = Service("mid-round", tick, interval=3600.0).start()
    try:
        wait_for(in_round.is_set, 30, "the first round")
        service.wake()
        release.set()
        wait_for(second.is_set, 30, "the round the mid-round wake asked for")
    finally:
        release.set()
        assert service.stop(timeout=30)


def test_run_once_is_the_direct_seam() -> None:
    rounds = Rounds()
    service = Service("direct", rounds, interval=3.0)
    assert service.run_once() == 3.0
    assert rounds.calls == 1


def test_a_subclass_provides_the_tick() -> None:
    class Counting(Service):
        def __init__(self) -> None:
            super().__init__("counting", interval=1.0)
            self.count = 0

        def tick(self) -> float | None:
            self.count += 1
            return None

    service = Counting()
    service.run_once()
    assert service.count == 1
    with pytest.raises(NotImplementedError, match="bare"):
        Service("bare", interval=1.0).tick()


def test_an_unexpected_error_is_logged_with_the_name_and_traceback_and_the_loop_goes_on(
        caplog: pytest.LogCaptureFixture) -> None:
    rounds = Rounds()
    service = Service("worker n1:6700 link", rounds, interval=5.0)
    rounds.fail = RuntimeError("boom")
    with caplog.at_level(logging.ERROR, logger="stormpy.host.service"):
        assert service.run_once() == 5.0
        assert service.run_once() == 5.0
    records = [r for r in caplog.records if "worker n1:6700 link: round failed" in r.getMessage()]
    assert [r.getMessage().endswith(f"({n} in a row)") for n, r in enumerate(records, 1)] == [True, True]
    assert all(r.exc_info is not None for r in records)
    assert (service.failures, service.errors) == (2, 2)
    rounds.fail = None
    service.run_once()
    assert (service.failures, service.errors) == (0, 2)


def test_expected_errors_warn_without_traceback_first_and_every_nth(
        caplog: pytest.LogCaptureFixture) -> None:
    rounds = Rounds()
    rounds.fail = OSError("zookeeper unreachable")
    service = Service("ui sampler", rounds, interval=1.0, expected_errors=(OSError,), warn_every=3)
    with caplog.at_level(logging.WARNING, logger="stormpy.host.service"):
        for _ in range(7):
            service.run_once()
    warned = [r.getMessage() for r in caplog.records]
    assert warned == [f"ui sampler: round failed ({n} in a row): zookeeper unreachable" for n in (1, 3, 6)]
    assert all(r.exc_info is None for r in caplog.records)


def test_raise_errors_hands_the_error_to_the_caller() -> None:
    rounds = Rounds()
    rounds.fail = ValueError("bad")
    with pytest.raises(ValueError, match="bad"):
        Service("strict", rounds, interval=1.0).run_once(raise_errors=True)


def test_a_retry_backoff_replaces_the_interval_after_failures_and_resets_on_success() -> None:
    rounds = Rounds()
    rounds.fail = OSError("down")
    service = Service("retrying", rounds, interval=30.0, retry=Backoff(1.0, 4.0),
                      expected_errors=(OSError,))
    assert [service.poll(now=t) for t in (0.0, 1.0, 3.0, 7.0)] == [1.0, 3.0, 7.0, 11.0]
    rounds.fail = None
    assert service.poll(now=11.0) == 41.0
    rounds.fail = OSError("down again")
    assert service.poll(now=41.0) == 42.0


def test_the_thread_runs_rounds_wakes_and_stops_with_its_hooks() -> None:
    events: list[str] = []
    ran = threading.Event()

    def tick() -> None:
        events.append("tick")
        ran.set()

    service = Service("threaded", tick, interval=3600.0, on_start=lambda: events.append("start"),
                      on_stop=lambda: events.append("stop"))
    assert service.start() is service
    assert service.start() is service  # idempotent while running
    wait_for(ran.is_set, 30, "the first round")
    assert service.running
    ran.clear()
    service.wake()
    wait_for(ran.is_set, 30, "the round a wake asked for")
    assert service.stop(timeout=30)
    assert not service.running
    assert service.stopping
    assert events[0] == "start"
    assert events[-1] == "stop"
    assert events.count("tick") >= 2
    assert service.stop() is True  # idempotent
    with pytest.raises(RuntimeError, match="does not start again"):
        service.start()


def test_first_delay_holds_the_first_round_back() -> None:
    rounds = Rounds()
    service = Service("late", rounds, interval=3600.0, first_delay=3600.0)
    service.start()
    assert service.due > service.clock() + 3000
    assert service.stop(timeout=30)
    assert rounds.calls == 0


def test_a_tick_may_stop_its_own_service_and_stop_on_the_thread_does_not_join() -> None:
    outcome: list[bool] = []
    service: Service

    def tick() -> None:
        outcome.append(service.stop(timeout=30))

    service = Service("self-stopping", tick, interval=3600.0)
    service.start()
    wait_for(lambda: outcome and not service.running and not service._thread.is_alive(),  # type: ignore[union-attr]
             30, "the service to stop itself")
    assert outcome == [False]  # its own thread was still running when it asked


def test_hook_errors_are_logged_and_the_loop_still_runs(caplog: pytest.LogCaptureFixture) -> None:
    ran = threading.Event()

    def broken() -> None:
        raise RuntimeError("prepare failed")

    service = Service("hooked", ran.set, interval=3600.0, on_start=broken)
    with caplog.at_level(logging.ERROR, logger="stormpy.host.service"):
        service.start()
        wait_for(ran.is_set, 30, "a round after the failed on_start")
        assert service.stop(timeout=30)
    assert any(r.getMessage() == "hooked: on_start failed" for r in caplog.records)


def test_stop_before_start_is_harmless() -> None:
    assert Service("never", lambda: None, interval=1.0).stop() is True


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"interval": 0.0}, "interval"),
    ({"interval": 1.0, "first_delay": -1.0}, "first_delay"),
    ({"interval": 1.0, "warn_every": 0}, "warn_every"),
])
def test_bad_settings_are_refused_by_name(kwargs: dict[str, float], named: str) -> None:
    with pytest.raises(ValueError, match=f"'bad'.*{named}"):
        Service("bad", lambda: None, **kwargs)  # type: ignore[arg-type]
