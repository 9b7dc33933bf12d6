"""RetryExponentialBackoff with simulated time: the schedule formula, readiness, max retries."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stormpy.connectors.kafka import KafkaSpoutMessageId, RetryExponentialBackoff, TopicPartition


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def failed(offset: int, fails: int, partition: int = 0) -> KafkaSpoutMessageId:
    return KafkaSpoutMessageId("t", partition, offset, num_fails=fails)


def test_schedule_follows_the_exponential_formula_capped_by_max_delay() -> None:
    clock = Clock()
    retry = RetryExponentialBackoff(initial_delay=0.5, delay_period=0.1, max_retries=None, max_delay=1.0,
                                    clock=clock)
    assert retry.next_time(failed(0, 1)) == pytest.approx(100.5)   # initial delay
    assert retry.next_time(failed(0, 2)) == pytest.approx(100.2)   # 0.1 * 2^1
    assert retry.next_time(failed(0, 3)) == pytest.approx(100.4)   # 0.1 * 2^2
    assert retry.next_time(failed(0, 4)) == pytest.approx(100.8)   # 0.1 * 2^3
    assert retry.next_time(failed(0, 5)) == pytest.approx(101.0)   # capped at max_delay
    assert retry.next_time(failed(0, 10_000)) == pytest.approx(101.0)
    with pytest.raises(ValueError, match="has not failed"):
        retry.next_time(failed(0, 0))
    no_period = RetryExponentialBackoff(0.0, 0.0, None, 10.0, clock=clock)
    assert no_period.next_time(failed(0, 3)) == pytest.approx(100.0)  # delay_period 0: at once
    small_cap = RetryExponentialBackoff(0.0, 1.0, None, 0.5, clock=clock)
    assert small_cap.next_time(failed(0, 2)) == pytest.approx(100.5)  # max_delay below 2 * period


def test_ready_only_when_its_time_has_come() -> None:
    clock = Clock()
    retry = RetryExponentialBackoff(0.5, 0.1, None, 10.0, clock=clock)
    m = failed(3, 1)
    assert retry.schedule(m)
    assert retry.is_scheduled(m) and retry.is_scheduled(("t", 0, 3))
    assert not retry.is_ready(m) and retry.ready_message_count() == 0
    assert retry.earliest_retriable_offsets() == {}
    clock.now += 0.5
    assert retry.is_ready(m) and retry.ready_message_count() == 1
    assert retry.earliest_retriable_offsets() == {TopicPartition("t", 0): 3}
    assert retry.get_message_id(TopicPartition("t", 0), 3) is m
    assert retry.get_message_id(TopicPartition("t", 0), 4).num_fails == 0
    assert retry.remove(m) and not retry.is_scheduled(m) and not retry.remove(m)


def test_max_retries_stops_scheduling() -> None:
    retry = RetryExponentialBackoff(0, 0, max_retries=2, max_delay=0, clock=Clock())
    assert retry.schedule(failed(0, 1)) and retry.schedule(failed(0, 2))
    assert not retry.schedule(failed(0, 3))
    assert not RetryExponentialBackoff(0, 0, max_retries=0, max_delay=0).schedule(failed(0, 1))


def test_earliest_retriable_offsets_per_partition_and_retain_all() -> None:
    clock = Clock()
    retry = RetryExponentialBackoff(0, 0, None, 0, clock=clock)
    for off, part in ((7, 0), (4, 0), (9, 1), (2, 2)):
        retry.schedule(failed(off, 1, part))
    assert retry.earliest_retriable_offsets() == {TopicPartition("t", 0): 4, TopicPartition("t", 1): 9,
                                                  TopicPartition("t", 2): 2}
    assert retry.retain_all([TopicPartition("t", 0)])
    assert retry.earliest_retriable_offsets() == {TopicPartition("t", 0): 4}
    assert not retry.retain_all([("t", 0)])
    assert len(retry) == 2


def test_rescheduling_replaces_the_previous_schedule() -> None:
    clock = Clock()
    retry = RetryExponentialBackoff(0.0, 1.0, None, 60.0, clock=clock)
    m = failed(1, 1)
    retry.schedule(m)
    assert retry.is_ready(m)
    m.num_fails = 3
    retry.schedule(m)
    assert len(retry) == 1 and not retry.is_ready(m)
    clock.now += 4.0
    assert retry.is_ready(m)


@pytest.mark.parametrize("kwargs, name", [
    ({"initial_delay": -1}, "initial_delay"), ({"delay_period": "x"}, "delay_period"),
    ({"max_delay": -0.1}, "max_delay"), ({"max_retries": -1}, "max_retries"),
    ({"max_retries": 1.5}, "max_retries"),
])
def test_bad_settings_name_the_setting(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        RetryExponentialBackoff(**kwargs)


@settings(max_examples=200, deadline=None)
@given(initial=st.floats(0, 5), period=st.floats(0, 5), cap=st.floats(0, 30), fails=st.integers(1, 80))
def test_delay_is_the_formula_and_never_past_the_cap(initial: float, period: float, cap: float,
                                                     fails: int) -> None:
    clock = Clock()
    retry = RetryExponentialBackoff(initial, period, None, cap, clock=clock)
    expected = initial if fails == 1 else period * 2.0 ** (fails - 1)
    assert retry.next_time(failed(0, fails)) - clock.now == pytest.approx(min(expected, cap))
