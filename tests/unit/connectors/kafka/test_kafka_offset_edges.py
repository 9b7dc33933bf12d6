"""Edges of the Kafka offset bookkeeping and retry schedule: the starting floor, message ids of
every accepted shape, commits by plain offset, the defaults and the millisecond config."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from stormpy.config import SettingError
from stormpy.connectors._offsets import AckedPrefix
from stormpy.connectors.kafka import (
    KafkaSpoutMessageId,
    OffsetManager,
    RetryExponentialBackoff,
    TopicPartition,
)

TP = TopicPartition("t", 0)


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def test_a_new_manager_keeps_its_partition_start_and_has_not_committed() -> None:
    om = OffsetManager(TP, 5)
    assert om.tp == TP and om.initial_fetch_offset == 5 and om.committed_offset == 5
    assert om.has_committed is False
    assert "t" in repr(om) and "committed=5" in repr(om)
    om.commit(5)
    assert om.has_committed is True


def test_offsets_below_the_initial_fetch_offset_are_never_tracked() -> None:
    om = OffsetManager(TP, 5)
    om.add_to_emit_msgs(4)      # the offset right below the start: already committed
    om.add_to_emit_msgs(3)
    assert om.num_uncommitted_offsets == 0 and not om.contains_emitted(4)
    assert om.add_to_ack_msgs(KafkaSpoutMessageId("t", 0, 4)) is False
    assert om.add_to_ack_msgs(3) is False
    assert om.find_next_commit_offset() is None
    om.add_to_emit_msgs(5)
    assert om.contains_emitted(5) and not om.contains_emitted(6)


def test_an_offset_of_zero_start_accepts_offset_zero() -> None:
    om = OffsetManager(TP, 0)
    assert om.add_to_ack_msgs(0) is True
    assert om.find_next_commit_offset().offset == 1


def test_message_ids_of_every_documented_shape() -> None:
    om = OffsetManager(TP, 0)
    for o in range(4):
        om.add_to_emit_msgs(o)
    assert om.add_to_ack_msgs(SimpleNamespace(offset=0))    # a record-like object with .offset
    assert om.add_to_ack_msgs(("t", 0, 1))                  # a plain (topic, partition, offset)
    assert om.add_to_ack_msgs(KafkaSpoutMessageId("t", 0, 2))
    assert om.contains(SimpleNamespace(offset=0)) and om.contains(("t", 0, 1)) and om.contains(2)
    assert not om.contains(SimpleNamespace(offset=3))
    with pytest.raises(TypeError, match="not a Kafka message id"):
        om.add_to_ack_msgs(SimpleNamespace(offset="x"))
    with pytest.raises(TypeError, match=r"not a Kafka message id .*'abc'"):
        om.contains("abc")


def test_commit_takes_a_plain_offset_and_a_repeated_commit_covers_nothing() -> None:
    om = OffsetManager(TP, 0)
    for o in range(3):
        om.add_to_ack_msgs(o)
    assert om.commit(2) == 2 and om.committed_offset == 2
    assert om.commit(2) == 0 and om.commit(1) == 0 and om.committed_offset == 2
    assert om.num_acked_uncommitted == 1 and om.is_acked(2) and not om.is_acked(1)


def test_acked_prefix_edges() -> None:
    prefix = AckedPrefix()
    assert prefix.first() is None and prefix.floor is None and prefix.latest is None
    assert prefix.ack(7) is True
    prefix.emit(3)
    assert prefix.first() == 3 and prefix.is_emitted(7) and prefix.is_emitted(3)
    assert not prefix.is_emitted(5) and not prefix.is_emitted(8)
    with pytest.raises(IndexError, match=r"asked for uncommitted position #0, there are 2"):
        prefix.nth(0)
    with pytest.raises(IndexError, match=r"#3, there are 2"):
        prefix.nth(3)
    assert prefix.commit_through(3) == 0 and prefix.floor == 3
    prefix.emit(3)                      # exactly the floor: committed already, ignored
    assert prefix.pending == 1 and prefix.first() == 7 and not prefix.is_emitted(3)
    assert prefix.ack(3) is False


def test_retry_defaults() -> None:
    retry = RetryExponentialBackoff()
    settings = (retry.initial_delay, retry.delay_period, retry.max_retries, retry.max_delay)
    assert settings == (0.0, 0.002, None, 10.0)


@pytest.mark.parametrize("kwargs, message", [
    ({"initial_delay": -1}, "RetryExponentialBackoff.initial_delay: must be a number of seconds >= 0, "
                            "got -1"),
    ({"delay_period": "x"}, "RetryExponentialBackoff.delay_period: must be a number of seconds >= 0, "
                            "got 'x'"),
    ({"max_delay": -0.5}, "RetryExponentialBackoff.max_delay: must be a number of seconds >= 0, "
                          "got -0.5"),
    ({"max_retries": -1}, "RetryExponentialBackoff.max_retries: must be an integer >= 0, got -1"),
])
def test_bad_retry_delays_are_named_exactly(kwargs: dict, message: str) -> None:
    with pytest.raises(SettingError) as err:
        RetryExponentialBackoff(**kwargs)
    assert str(err.value) == message


def test_retry_from_the_config_in_milliseconds() -> None:
    retry = RetryExponentialBackoff.from_doc(
        {"initial_delay_ms": 250, "delay_period_ms": 40, "max_retries": 3, "max_delay_ms": 1500})
    settings = (retry.initial_delay, retry.delay_period, retry.max_retries, retry.max_delay)
    assert settings == (0.25, 0.04, 3, 1.5)


def test_earliest_retriable_offset_is_the_smallest_whatever_the_schedule_order() -> None:
    clock = Clock()
    retry = RetryExponentialBackoff(0, 0, None, 0, clock=clock)
    other = TopicPartition("u", 0)
    for topic, offset in (("t", 4), ("t", 9), ("u", 7), ("t", 6), ("u", 2)):
        retry.schedule(KafkaSpoutMessageId(topic, 0, offset, num_fails=1))
    assert retry.earliest_retriable_offsets() == {TP: 4, other: 2}


def test_scheduled_ids_of_one_partition_and_new_ids() -> None:
    retry = RetryExponentialBackoff(0, 0, None, 0, clock=Clock())
    mine = [KafkaSpoutMessageId("t", 0, o, num_fails=1) for o in (1, 2)]
    others = [KafkaSpoutMessageId("t", 1, 1, num_fails=1), KafkaSpoutMessageId("u", 0, 1, num_fails=1)]
    for m in (*mine, *others):
        retry.schedule(m)
    assert sorted(retry.scheduled_ids(TP)) == mine
    assert retry.scheduled_ids(TopicPartition("v", 0)) == []
    fresh = retry.get_message_id(TopicPartition("w", 3), 8)
    assert tuple(fresh) == ("w", 3, 8) and fresh.num_fails == 0
