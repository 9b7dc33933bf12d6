"""The KafkaBolt's columnar side: a batch's records and the delivery state of one batch.

``batch_records`` turns a ``ColumnBatch`` into its topics, keys and values (bytes or None), in
row order, before anything is produced: with the default field mapper and a fixed topic straight
from the batch's columns, otherwise through the bolt's topic selector and mapper on one stand-in
``Tuple`` per row. ``BatchDelivery`` is what the bolt keeps per batch while its rows are in
flight; its ``on_delivery`` is the one delivery callback every row of the batch shares.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stormpy.connectors.kafka._bolt_config import to_bytes
from stormpy.topology import ColumnBatch, Tuple

__all__ = ["BatchDelivery", "batch_records"]

#: (tuple, (key field, message field)) -> (topic or None, key, value) through the bolt's mapper
TupleRecord = Callable[[Tuple, tuple[str, str]], tuple[str | None, Any, Any]]


class BatchDelivery:
    """The rows of one batch on their way to the broker.

    ``unproduced``: rows not yet handed to the client (held for queue space included);
    ``in_flight``: rows handed over whose delivery report has not been applied; ``error``: the
    first error of any row (the batch then fails as a whole); ``done``: acked or failed already.
    Counted on the executor loop only: ``on_delivery`` (run on the thread serving the client's
    reports) just appends this object to the bolt's delivered or failed rows.
    """

    __slots__ = ("batch", "unproduced", "in_flight", "error", "done", "on_delivery")

    def __init__(self, batch: ColumnBatch, delivered: Callable[[BatchDelivery], None],
                 failed: Callable[[tuple[BatchDelivery, Any]], None]) -> None:
        self.batch = batch
        self.unproduced = batch.n
        self.in_flight = 0
        self.error: Any = None
        self.done = False

        def on_delivery(err: Any, _msg: Any) -> None:
            if err is None:
                delivered(self)
            else:
                failed((self, err))
        self.on_delivery = on_delivery


def _as_bytes(values: list[Any], what: str) -> list[Any]:
    """``values`` with every value neither bytes nor None converted (``to_bytes``); the same list
    when nothing needs converting."""
    for v in values:
        if type(v) is not bytes and v is not None:
            return [v if type(v) is bytes or v is None else to_bytes(v, what) for v in values]
    return values


def batch_records(batch: ColumnBatch, topic: str | None, by_field: bool, fields: tuple[str, str],
                  tuple_record: TupleRecord) -> tuple[list[str | None], list[Any], list[Any]]:
    """Topics (None: no topic for that row), keys and values of every row of ``batch``.

    ``topic`` is the fixed topic (None: chosen per tuple by ``tuple_record``); ``by_field`` says
    the bolt uses the default field mapper, whose key and message field names are ``fields``.
    Raises what the mapper raises (a missing message field, a value that is not bytes-like), so
    the caller fails the batch before any of it is produced.
    """
    n = batch.n
    names = batch.fields
    if by_field and topic is not None:
        key_field, message_field = fields
        if names is None or message_field not in names:
            raise KeyError(f"KafkaBolt: batch from {batch.component}/{batch.stream} has no field "
                           f"{message_field!r} (KafkaBoltConfig.message_field; fields: "
                           f"{names.to_list() if names is not None else []})")
        values = batch.column(message_field)
        keys = batch.column(key_field) if key_field in names else [None] * n
        return [topic] * n, _as_bytes(keys, "key"), _as_bytes(values, "message")
    topics: list[str | None] = []
    keys = []
    values = []
    for row in batch.rows:
        t, k, v = tuple_record(Tuple(row, batch.stream, batch.task, batch.component, names), fields)
        topics.append(t)
        keys.append(k)
        values.append(v)
    return topics, _as_bytes(keys, "key"), _as_bytes(values, "message")
