"""The Kinesis shard reader's edges on simulated time: AT_TIMESTAMP positions, where a reopened
iterator starts, exponential backoff and its reset, the pause after an empty batch, errors of
GetShardIterator, prefetching only below one batch, and cancelling a queued request on close."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from test_kinesis_parts import ClientError, DeferredPool, FakeKinesis, cfg

from stormpy.connectors.kinesis import (
    BufferedGetter,
    KinesisStreamError,
    Position,
    ShardGetter,
)
from stormpy.connectors.kinesis._getter import MAX_BACKOFF_S, MIN_BACKOFF_S, RetryLater


def gets(client: FakeKinesis) -> int:
    return sum(1 for c in client.calls if c[0] == "get")


def test_an_at_timestamp_position_asks_for_that_instant_in_utc() -> None:
    config = cfg(initial_position="AT_TIMESTAMP", initial_timestamp=1_700_000_000.5)
    start = Position.initial(config)
    assert start == Position("AT_TIMESTAMP", None, 1_700_000_000.5)
    assert start.request() == {"ShardIteratorType": "AT_TIMESTAMP",
                               "Timestamp": datetime(2023, 11, 14, 22, 13, 20, 500000, tzinfo=UTC)}
    assert Position.after("7").request() == {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER",
                                             "StartingSequenceNumber": "7"}


def test_an_iterator_expiring_before_any_read_reopens_after_the_start_checkpoint() -> None:
    client = FakeKinesis({"s0": ["5", "9", "10"]})
    getter = ShardGetter(client, cfg(), "s0", Position.after("5"))
    assert getter.last_read == "5" and getter.millis_behind is None
    client.errors.append("ExpiredIteratorException")
    with pytest.raises(RetryLater, match="iterator expired"):
        getter.fetch(10)
    assert [r.sequence_number for r in getter.fetch(10)] == ["9", "10"]
    assert client.calls.count(("iterator", ("s0", "AFTER_SEQUENCE_NUMBER", "5"))) == 2
    assert ShardGetter(client, cfg(), "s0", Position("TRIM_HORIZON")).last_read is None
    assert ShardGetter(client, cfg(), "s0", Position("AT_SEQUENCE_NUMBER", "9")).last_read is None


class IteratorErrors(FakeKinesis):
    def __init__(self, code: str) -> None:
        super().__init__({"s0": ["1"]})
        self.code = code

    def get_shard_iterator(self, **kw: Any) -> dict[str, Any]:
        raise ClientError(self.code)


def test_get_shard_iterator_errors_name_the_call_and_shard() -> None:
    with pytest.raises(KinesisStreamError) as err:
        ShardGetter(IteratorErrors("ResourceNotFoundException"), cfg(), "s0",
                    Position("TRIM_HORIZON")).fetch(5)
    assert str(err.value).startswith("GetShardIterator on shard s0 failed for ")
    assert "does not exist" in str(err.value)
    with pytest.raises(RetryLater, match="^GetShardIterator on shard s0: ProvisionedThroughputExceeded"):
        ShardGetter(IteratorErrors("ProvisionedThroughputExceededException"), cfg(), "s0",
                    Position("TRIM_HORIZON")).fetch(5)


def test_backoff_doubles_up_to_its_cap_and_a_success_resets_it() -> None:
    client = FakeKinesis({"s0": ["1", "2", "3"]})
    clock = [0.0]
    getter = BufferedGetter(ShardGetter(client, cfg(), "s0", Position("TRIM_HORIZON")), 1, 0.5,
                            lambda: clock[0])
    expected = MIN_BACKOFF_S
    client.errors.append("ProvisionedThroughputExceededException")
    assert getter.next() is None and gets(client) == 1
    for n in range(2, 10):  # backed off 0.05, 0.1, ... capped at 5 s
        called_at = clock[0]
        client.errors.append("ProvisionedThroughputExceededException")
        clock[0] = called_at + expected - 0.001
        assert getter.next() is None and gets(client) == n - 1  # still backed off
        clock[0] = called_at + expected
        assert getter.next() is None and gets(client) == n
        expected = min(MAX_BACKOFF_S, expected * 2)
    clock[0] += expected
    assert expected == MAX_BACKOFF_S
    assert getter.next() is not None  # the call after the last backoff succeeds
    client.errors.append("ProvisionedThroughputExceededException")
    getter.next()
    before = gets(client)
    clock[0] += MIN_BACKOFF_S  # back to the smallest backoff after a success
    getter.next()
    assert gets(client) == before + 1
    assert getter.backoffs == 10 and getter.errors == 0 and getter.fetches == gets(client)


def test_errors_are_counted_one_by_one() -> None:
    client = FakeKinesis({"s0": ["1"]})
    clock = [0.0]
    reported: list[BaseException] = []
    getter = BufferedGetter(ShardGetter(client, cfg(), "s0", Position("TRIM_HORIZON")), 2, 0.5,
                            lambda: clock[0], on_error=reported.append)
    client.errors += ["InternalFailure", "InternalFailure"]
    getter.next()
    clock[0] += 10.0
    getter.next()
    assert getter.errors == 2 and len(reported) == 2 and getter.fetches == 2


def test_an_empty_batch_pauses_the_shard_for_the_empty_sleep() -> None:
    client = FakeKinesis({"s0": []})
    clock = [100.0]
    getter = BufferedGetter(ShardGetter(client, cfg(), "s0", Position("TRIM_HORIZON")), 2, 0.5,
                            lambda: clock[0])
    assert getter.next() is None and gets(client) == 1
    clock[0] = 100.499
    assert getter.next() is None and gets(client) == 1
    clock[0] = 100.5
    assert getter.next() is None and gets(client) == 2


def test_the_next_batch_is_asked_for_only_when_less_than_a_batch_is_buffered() -> None:
    client = FakeKinesis({"s0": [str(i) for i in range(1, 10)]})
    pool = DeferredPool()
    getter = BufferedGetter(ShardGetter(client, cfg(), "s0", Position("TRIM_HORIZON")), 2, 0.5,
                            lambda: 0.0, submit=pool.submit)
    getter.next()
    pool.run_one()
    assert getter.buffered == 2 and getter.fetches == 1
    assert getter.next() is not None and getter.fetches == 2  # 1 left: ask for more
    pool.run_one()
    assert getter.buffered == 3
    assert getter.next() is not None and getter.buffered == 2 and getter.fetches == 2  # a batch left


class Job:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


def test_close_cancels_a_queued_request_and_ignores_jobs_without_cancel() -> None:
    client = FakeKinesis({"s0": ["1"]})
    jobs: list[Job] = []

    def submit(fn: Any, on_done: Any) -> Job:
        jobs.append(Job())
        return jobs[-1]

    getter = BufferedGetter(ShardGetter(client, cfg(), "s0", Position("TRIM_HORIZON")), 2, 0.5,
                            lambda: 0.0, submit=submit)
    getter.next()
    assert getter.in_flight and len(jobs) == 1
    getter.close()
    assert jobs[0].cancelled
    plain = BufferedGetter(ShardGetter(client, cfg(), "s0", Position("TRIM_HORIZON")), 2, 0.5,
                           lambda: 0.0, submit=lambda fn, on_done: object())
    plain.next()
    plain.close()  # a job without cancel(): nothing to cancel, no error
