"""KafkaBoltConfig and the tuple → record pieces of the Kafka bolt (storm-kafka-client's KafkaBolt).

Settings (Storm's counterpart in parentheses):

* ``bootstrap_servers`` — required (``bootstrap.servers``).
* ``topic`` — a fixed topic (``DefaultTopicSelector``), or ``topic_field`` — the name of the tuple
  field holding the topic, with ``default_topic`` used when the tuple has no such field or it is
  ``None`` (``FieldNameTopicSelector``). Exactly one of ``topic`` and ``topic_field``. A tuple for
  which no topic is found is acked and skipped, as in Storm.
* ``key_field`` ``"key"``, ``message_field`` ``"message"`` — the default mapper
  (``FieldNameBasedTupleToKafkaMapper``): the key is ``None`` when the tuple has no key field; a
  missing message field is an error of that tuple. ``tuple_mapper`` — import path of a
  :class:`TupleToKafkaMapper` subclass instead, built with ``tuple_mapper_args``.
* ``producer_props`` — any librdkafka producer property, passed through (``acks``,
  ``linger.ms``, ``message.timeout.ms``, ``compression.type`` ...).
* ``fire_and_forget`` False — ack right after handing the record to the client (Storm's
  ``withFireAndForget``), without waiting for the broker.
* ``max_backlog`` 100,000 — tuples held while the client's local queue is full (``BufferError``);
  past it further tuples are failed (and replayed by a reliable spout) instead of held.

Keys and values go to Kafka as bytes: ``bytes``/``bytearray`` as they are, ``str`` UTF-8 encoded,
numbers as their decimal text, ``None`` as a null key or value; anything else is an error of the
tuple (reported, the tuple failed).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import msgpack

from stormpy._settings import check_flag, check_int, check_mapping, check_text, settings_from_doc
from stormpy.connectors.kafka._config import KafkaConfigError
from stormpy.topology import Tuple
from stormpy.topology._imports import import_object

__all__ = ["FieldNameBasedTupleToKafkaMapper", "KafkaBoltConfig", "TupleToKafkaMapper", "to_bytes"]


def _err(setting: str, problem: str) -> KafkaConfigError:
    return KafkaConfigError(f"KafkaBoltConfig.{setting}", problem)


def to_bytes(value: Any, what: str) -> bytes | None:
    """``value`` as the bytes Kafka stores (see the module doc); TypeError naming ``what``."""
    if value is None or type(value) is bytes:
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value).encode("ascii")
    raise TypeError(f"KafkaBolt: the {what} is a {type(value).__name__} ({value!r:.60}); map it to "
                    "str, bytes, a number or None (tuple_mapper)")


class TupleToKafkaMapper:
    """Maps a tuple to the key and value of its Kafka record (Storm's TupleToKafkaMapper).
    Built on every worker with ``tuple_mapper_args`` as keyword arguments."""

    def key(self, tup: Tuple) -> Any:
        """The record key (str, bytes, a number or None)."""
        raise NotImplementedError

    def message(self, tup: Tuple) -> Any:
        """The record value (str, bytes, a number or None)."""
        raise NotImplementedError


class FieldNameBasedTupleToKafkaMapper(TupleToKafkaMapper):
    """Key and value from two named fields (defaults ``key`` and ``message``); no key field means
    a null key, no message field is an error."""

    def __init__(self, key_field: str = "key", message_field: str = "message") -> None:
        self.key_field = key_field
        self.message_field = message_field

    def key(self, tup: Tuple) -> Any:
        f = tup.fields
        return tup.values[f.index_of(self.key_field)] if f is not None and self.key_field in f else None

    def message(self, tup: Tuple) -> Any:
        f = tup.fields
        if f is None or self.message_field not in f:
            raise KeyError(f"KafkaBolt: tuple from {tup.component}/{tup.stream} has no field "
                           f"{self.message_field!r} (KafkaBoltConfig.message_field; fields: "
                           f"{f.to_list() if f is not None else []})")
        return tup.values[f.index_of(self.message_field)]


@dataclass
class KafkaBoltConfig:
    """The Kafka bolt's settings (see the module doc); ``validate()`` raises KafkaConfigError
    naming the setting. ``to_doc()``/``from_doc()`` carry it in the topology spec."""

    bootstrap_servers: str
    topic: str | None = None
    topic_field: str | None = None
    default_topic: str | None = None
    key_field: str = "key"
    message_field: str = "message"
    tuple_mapper: str | None = None
    tuple_mapper_args: dict[str, Any] = field(default_factory=dict)
    producer_props: dict[str, Any] = field(default_factory=dict)
    fire_and_forget: bool = False
    max_backlog: int = 100_000

    def validate(self) -> KafkaBoltConfig:
        err = KafkaConfigError
        name = "KafkaBoltConfig."
        check_text(name + "bootstrap_servers", self.bootstrap_servers, "'host:port[,host:port...]'",
                   error=err)
        if (self.topic is None) == (self.topic_field is None):
            raise _err("topic", "set exactly one of topic (a fixed topic) and topic_field (the field "
                                f"naming the topic); got topic={self.topic!r}, "
                                f"topic_field={self.topic_field!r}")
        for setting in ("topic", "topic_field", "default_topic"):
            if getattr(self, setting) is not None:
                check_text(name + setting, getattr(self, setting), error=err)
        if self.default_topic is not None and self.topic_field is None:
            raise _err("default_topic", "only applies with topic_field")
        for setting in ("key_field", "message_field"):
            check_text(name + setting, getattr(self, setting), "a field name", error=err)
        if self.tuple_mapper is not None:
            self.mapper_class()
        check_mapping(name + "tuple_mapper_args", self.tuple_mapper_args, error=err)
        props = check_mapping(name + "producer_props", self.producer_props,
                              "a mapping of librdkafka properties", error=err)
        for key in props:
            if key == "bootstrap.servers":
                raise _err("producer_props", "'bootstrap.servers' cannot be set here: set "
                                             "bootstrap_servers instead")
            if key.endswith("_cb") or key == "on_delivery":
                raise _err("producer_props", f"{key!r} cannot be set: the bolt owns the client's "
                                             "callbacks (delivery reports ack and fail tuples)")
        check_flag(name + "fire_and_forget", self.fire_and_forget, error=err)
        check_int(name + "max_backlog", self.max_backlog, 0, error=err)
        try:
            msgpack.packb(asdict(self))
        except (TypeError, ValueError, OverflowError) as exc:
            raise _err("producer_props", f"settings must be plain data msgpack can carry: {exc}") from None
        return self

    def mapper_class(self) -> type[TupleToKafkaMapper]:
        if self.tuple_mapper is None:
            return FieldNameBasedTupleToKafkaMapper
        try:
            obj = import_object(self.tuple_mapper)
        except ImportError as exc:
            raise _err("tuple_mapper", str(exc)) from None
        if not (isinstance(obj, type) and issubclass(obj, TupleToKafkaMapper)):
            raise _err("tuple_mapper", f"{self.tuple_mapper!r} is not a TupleToKafkaMapper subclass")
        return obj

    def mapper(self) -> TupleToKafkaMapper:
        if self.tuple_mapper is None:
            return FieldNameBasedTupleToKafkaMapper(self.key_field, self.message_field)
        try:
            return self.mapper_class()(**self.tuple_mapper_args)
        except TypeError as exc:
            raise _err("tuple_mapper_args", f"{self.tuple_mapper}: {exc}") from None

    def to_doc(self) -> dict[str, Any]:
        return asdict(self.validate())

    @classmethod
    def from_doc(cls, doc: Any) -> KafkaBoltConfig:
        return settings_from_doc(cls, doc, error=KafkaConfigError)
