"""Reading GetRecords answers: arrival times, partition keys and data as given, the latency figure
kept when an answer has none, records already read skipped after a re-opened iterator, a shard
whose iterator is gone, and errors by exception type."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from test_kinesis_parts import ClientError, cfg

from stormpy.connectors.kinesis import KinesisStreamError, Position, ShardGetter
from stormpy.connectors.kinesis._getter import RetryLater


class Scripted:
    """GetShardIterator answers ``iterator``; GetRecords answers the queued responses in order
    (an exception instance is raised)."""

    def __init__(self, *responses: Any, iterator: str | None = "it-0") -> None:
        self.responses = list(responses)
        self.iterator = iterator
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def get_shard_iterator(self, **kw: Any) -> dict[str, Any]:
        self.calls.append(("iterator", kw))
        return {} if self.iterator is None else {"ShardIterator": self.iterator}

    def get_records(self, **kw: Any) -> dict[str, Any]:
        self.calls.append(("get", kw))
        resp = self.responses.pop(0)
        if isinstance(resp, Exception):
            raise resp
        return resp


def rec(seq: str, **extra: Any) -> dict[str, Any]:
    return {"SequenceNumber": seq, "Data": bytearray(seq.encode()), **extra}


def test_records_carry_arrival_time_partition_key_and_data() -> None:
    at = datetime(2024, 1, 2, 3, 4, 5, 250000, tzinfo=UTC)
    client = Scripted({"Records": [rec("1", PartitionKey="user-1", ApproximateArrivalTimestamp=at),
                                   rec("2")],
                       "NextShardIterator": "it-1", "MillisBehindLatest": 1500},
                      {"Records": [], "NextShardIterator": "it-2"})
    getter = ShardGetter(client, cfg(), "s0", Position("TRIM_HORIZON"))
    first, second = getter.fetch(7)
    assert (first.shard_id, first.sequence_number, first.partition_key, first.data,
            first.arrival) == ("s0", "1", "user-1", b"1", at.timestamp())
    assert type(first.data) is bytes
    assert (second.partition_key, second.arrival) == ("", None)
    assert getter.millis_behind == 1500 and getter.last_read == "2"
    assert getter.fetch(7) == []
    assert getter.millis_behind == 1500  # an answer without the figure keeps the last one
    assert getter.last_read == "2" and not getter.at_end
    assert client.calls == [
        ("iterator", {"StreamName": "events", "ShardId": "s0", "ShardIteratorType": "TRIM_HORIZON"}),
        ("get", {"ShardIterator": "it-0", "Limit": 7}), ("get", {"ShardIterator": "it-1", "Limit": 7})]


def test_records_at_or_below_the_last_one_read_are_skipped() -> None:
    client = Scripted({"Records": [rec("8"), rec("9"), rec("10"), rec("10"), rec("11")],
                       "NextShardIterator": "it-1"})
    getter = ShardGetter(client, cfg(), "s0", Position.after("9"))
    assert [r.sequence_number for r in getter.fetch(10)] == ["10", "11"]
    assert getter.last_read == "11"
    fresh = ShardGetter(Scripted({"Records": [rec("0"), rec("0"), rec("1")],
                                  "NextShardIterator": None}), cfg(), "s1", Position("TRIM_HORIZON"))
    assert [r.sequence_number for r in fresh.fetch(10)] == ["0", "1"]  # sequence 0 is a record
    assert fresh.at_end and fresh.fetch(10) == []


def test_a_shard_without_an_iterator_is_at_its_end_and_asks_nothing_more() -> None:
    client = Scripted(iterator=None)
    getter = ShardGetter(client, cfg(), "s0", Position("LATEST"))
    assert getter.fetch(5) == [] and getter.at_end
    assert getter.fetch(5) == []
    assert [c[0] for c in client.calls] == ["iterator"]


class EndpointConnectionError(Exception):
    """Named as botocore's: a transient error recognised by its type."""


def test_errors_back_off_by_code_or_type_and_others_name_the_call() -> None:
    getter = ShardGetter(Scripted(EndpointConnectionError("no route")), cfg(), "s0",
                         Position("TRIM_HORIZON"))
    with pytest.raises(RetryLater) as err:
        getter.fetch(5)
    assert str(err.value) == "GetRecords on shard s0: no route"
    throttled = ShardGetter(Scripted(ClientError("ProvisionedThroughputExceededException")), cfg(),
                            "s0", Position("TRIM_HORIZON"))
    with pytest.raises(RetryLater, match="^GetRecords on shard s0: ProvisionedThroughputExceeded"):
        throttled.fetch(5)
    broken = ShardGetter(Scripted(ClientError("AccessDeniedException")), cfg(), "s0",
                         Position("TRIM_HORIZON"))
    with pytest.raises(KinesisStreamError, match="^GetRecords on shard s0 failed for "):
        broken.fetch(5)
    expired = Scripted(ClientError("ExpiredIteratorException"),
                       {"Records": [rec("3")], "NextShardIterator": "x"}, iterator="again")
    getter = ShardGetter(expired, cfg(), "s0", Position("TRIM_HORIZON"))
    with pytest.raises(RetryLater) as err:
        getter.fetch(5)
    assert str(err.value) == "shard s0: iterator expired"
    assert [r.sequence_number for r in getter.fetch(5)] == ["3"]
    assert [c[0] for c in expired.calls] == ["iterator", "get", "iterator", "get"]


def test_an_answer_without_records_is_an_empty_batch() -> None:
    getter = ShardGetter(Scripted({"NextShardIterator": "it-1"}), cfg(), "s0", Position("LATEST"))
    assert getter.fetch(5) == [] and getter.last_read is None and not getter.at_end
