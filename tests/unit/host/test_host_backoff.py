"""The one backoff (stormpy.host.backoff): growth, cap, jitter, reset, and both shapes of use
(a blocking loop asking for the delay, a scheduler asking for the next attempt's time)."""

from __future__ import annotations

import random

import pytest

from stormpy.host.backoff import Backoff


def test_delays_double_from_first_up_to_the_cap() -> None:
    backoff = Backoff(0.5, 4.0)
    assert [backoff.failed() for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert backoff.failures == 6
    assert backoff.last_delay == 4.0


def test_the_factor_sets_the_growth() -> None:
    backoff = Backoff(1.0, 100.0, factor=3.0)
    assert [backoff.failed() for _ in range(4)] == [1.0, 3.0, 9.0, 27.0]


def test_reset_starts_over() -> None:
    backoff = Backoff(1.0, 8.0)
    backoff.failed()
    backoff.failed()
    backoff.reset()
    assert backoff.failures == 0
    assert backoff.last_delay == 0.0
    assert backoff.failed() == 1.0


def test_free_failures_retry_at_once_first() -> None:
    backoff = Backoff(1.0, 60.0, free_failures=1)
    assert [backoff.failed() for _ in range(5)] == [0.0, 1.0, 2.0, 4.0, 8.0]


def test_the_pure_rule_needs_no_state_and_never_overflows() -> None:
    backoff = Backoff(1.0, 30.0, free_failures=1)
    assert [backoff.delay(n) for n in (0, 1, 2, 3, 7)] == [0.0, 0.0, 1.0, 2.0, 30.0]
    assert backoff.delay(10_000) == 30.0
    assert backoff.failures == 0


def test_jitter_shortens_a_delay_by_at_most_its_fraction_and_keeps_the_cap() -> None:
    backoff = Backoff(1.0, 8.0, jitter=0.5, rng=random.Random(7))
    delays = [backoff.failed() for _ in range(40)]
    plain = [Backoff(1.0, 8.0).delay(n) for n in range(1, 41)]
    assert all(p * 0.5 <= d <= p for d, p in zip(delays, plain, strict=True))
    assert any(d < p for d, p in zip(delays, plain, strict=True))
    assert max(delays) <= 8.0


def test_a_scheduler_gets_the_next_attempts_time_on_its_own_clock() -> None:
    backoff = Backoff(2.0, 10.0)
    assert backoff.ready(0.0)
    assert backoff.failed_at(100.0) == 102.0
    assert not backoff.ready(101.9)
    assert backoff.ready(102.0)
    assert backoff.failed_at(102.0) == 106.0
    backoff.reset()
    assert backoff.ready(0.0)
    assert backoff.next_attempt == 0.0


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"first": 0.0, "cap": 1.0}, "first"),
    ({"first": 2.0, "cap": 1.0}, "cap"),
    ({"first": 1.0, "cap": 2.0, "factor": 0.5}, "factor"),
    ({"first": 1.0, "cap": 2.0, "jitter": 1.5}, "jitter"),
    ({"first": 1.0, "cap": 2.0, "free_failures": -1}, "free_failures"),
])
def test_bad_settings_are_refused_by_name(kwargs: dict[str, float], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        Backoff(**kwargs)  # type: ignore[arg-type]


def test_the_bounds_of_each_setting_and_their_messages() -> None:
    assert [Backoff(2.0, 2.0).failed() for _ in range(2)] == [2.0, 2.0]  # cap == first
    flat = Backoff(1.5, 9.0, factor=1.0)
    assert [flat.failed() for _ in range(3)] == [1.5, 1.5, 1.5]
    assert Backoff(1.0, 2.0, jitter=1.0).jitter == 1.0 and Backoff(1.0, 2.0, jitter=0.0).jitter == 0.0
    assert Backoff(1.0, 2.0, free_failures=0).failed() == 1.0
    for kwargs, message in (
            ({"first": 0, "cap": 1.0}, "Backoff: first must be > 0 seconds, got 0"),
            ({"first": 2.0, "cap": 1.5}, "Backoff: cap must be >= first (2.0), got 1.5"),
            ({"first": 1.0, "cap": 2.0, "factor": 0.5}, "Backoff: factor must be >= 1, got 0.5"),
            ({"first": 1.0, "cap": 2.0, "jitter": -0.25},
             "Backoff: jitter must be between 0 and 1, got -0.25"),
            ({"first": 1.0, "cap": 2.0, "jitter": 1.25}, "Backoff: jitter must be between 0 and 1, got 1.25"),
            ({"first": 1.0, "cap": 2.0, "free_failures": -1}, "Backoff: free_failures must be >= 0, got -1")):
        with pytest.raises(ValueError) as raised:
            Backoff(**kwargs)  # type: ignore[arg-type]
        assert str(raised.value) == message


def test_the_settings_are_kept_as_floats_and_shown() -> None:
    backoff = Backoff(1, 30, factor=3, jitter=0.5, free_failures=2)
    assert (backoff.first, backoff.cap, backoff.factor, backoff.jitter, backoff.free_failures) == (
        1.0, 30.0, 3.0, 0.5, 2)
    assert all(isinstance(v, float) for v in (backoff.first, backoff.cap, backoff.factor, backoff.jitter))
    assert (backoff.failures, backoff.last_delay, backoff.next_attempt) == (0, 0.0, 0.0)
    backoff.failed()
    assert repr(backoff) == "Backoff(first=1, cap=30, factor=3, jitter=0.5, failures=1)"


def test_jitter_draws_from_the_given_generator_only() -> None:
    class Fixed(random.Random):
        def random(self) -> float:
            return 0.5
    backoff = Backoff(4.0, 100.0, jitter=0.5, rng=Fixed())
    assert [backoff.failed() for _ in range(3)] == [3.0, 6.0, 12.0]  # each shortened by a quarter
    assert backoff.last_delay == 12.0
    free = Backoff(4.0, 100.0, jitter=0.5, free_failures=1, rng=Fixed())
    assert free.failed() == 0.0 and free.failed_at(10.0) == 13.0
    unseeded = Backoff(4.0, 100.0, jitter=1.0)
    assert all(0.0 <= unseeded.failed() <= 4.0 * 2 ** i for i in range(5))


def test_delays_under_a_second_are_jittered_too() -> None:
    class Half(random.Random):
        def random(self) -> float:
            return 0.5
    backoff = Backoff(0.5, 4.0, jitter=0.5, rng=Half())
    assert [backoff.failed() for _ in range(3)] == [0.375, 0.75, 1.5]
