"""KafkaSpoutConfig: every setting of the Kafka spout, with storm-kafka-client's names and defaults.

A settings class in the one style of :mod:`stormpy._settings`: ``validate()`` checks and
normalises it, ``to_doc()`` gives the msgpack-serialisable mapping that travels in the topology
spec as the spout's constructor argument (components are never pickled), and ``from_doc()``
rebuilds and validates it. Invalid values raise :class:`KafkaConfigError` (a
:class:`~stormpy.config.SettingError`) naming the setting (``KafkaSpoutConfig.topics: ...``), at
submit time (the builder calls ``KafkaSpout.declare_outputs``) and in ``open``.

Settings (Storm's name in parentheses where it differs):

* ``bootstrap_servers``, ``group_id`` — required; ``topics`` (a list) or ``topic_pattern`` (a
  regular expression matched against whole topic names, internal ``__`` topics excluded).
* ``consumer_props`` — any librdkafka consumer property, passed through (``enable.auto.commit``
  must stay off: the processing guarantee decides when offsets are committed). The spout sets
  ``fetch.queue.backoff.ms`` to 10 unless given here (librdkafka's 1,000 ms default idles a fast
  spout once its prefetch queue is full) and ``reconnect.backoff.ms`` to 10 (with the 100 ms
  default a new consumer's first metadata request usually waited ~50 ms); see
  ``spout.CONSUMER_DEFAULTS``.
* ``processing_guarantee`` — ``AT_LEAST_ONCE`` (default), ``AT_MOST_ONCE``, ``NO_GUARANTEE``.
* ``first_poll_offset_strategy`` — ``UNCOMMITTED_EARLIEST`` (default), ``EARLIEST``, ``LATEST``,
  ``UNCOMMITTED_LATEST``.
* ``offset_commit_period_ms`` (offsetCommitPeriodMs) 30,000; ``max_uncommitted_offsets`` 10,000,000;
  ``poll_timeout_ms`` 200; ``partition_refresh_period_ms`` 2,000; ``max_poll_records`` 500
  (Kafka's ``max.poll.records``).
* ``retry`` — ``{"initial_delay_ms": 0, "delay_period_ms": 2, "max_retries": None, "max_delay_ms":
  10000}`` (Storm's default retry service; ``None`` = no limit).
* ``record_translator`` — import path of a ``RecordTranslator`` subclass (default: fields ``topic,
  partition, offset, key, value``) and ``record_translator_args`` its constructor arguments.
* ``emit_null_tuples`` False; ``tuple_listener`` — import path of a ``KafkaTupleListener``.
* ``fail_fast`` False — a record the translator cannot handle raises instead of being reported,
  counted and acked past.
* ``batch_acking`` False (stormpy's own; no Storm equivalent) — AT_LEAST_ONCE only: the new
  records of a poll are emitted as ONE tracked batch per stream (the collector's ``emit_batch``:
  one tuple tree, one acker entry and, towards bolts with ``execute_columns``, one
  ``ColumnBatch`` per bolt task) instead of a tracked tuple per record. Message ids stay per
  record: an acked batch acks each offset; a failed or timed-out batch schedules each of its
  offsets for a retry, and retried records are emitted one tracked tuple each, so a record that
  keeps failing does not take its batch with it towards ``max_retries``. Off: Storm's per-record
  trees. The untracked guarantees always emit a poll as one untracked batch (same semantics).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from enum import Enum, StrEnum
from typing import Any

import msgpack

from stormpy._settings import (
    check_flag,
    check_import_path,
    check_int,
    check_mapping,
    check_number,
    check_text,
    settings_from_doc,
)
from stormpy.config import SettingError

__all__ = ["DEFAULT_RETRY", "FirstPollOffsetStrategy", "KafkaConfigError", "KafkaSpoutConfig",
           "ProcessingGuarantee"]


class KafkaConfigError(SettingError):
    """A Kafka spout or bolt setting is missing or invalid; ``setting`` names it
    (``KafkaSpoutConfig.group_id``)."""


class ProcessingGuarantee(StrEnum):
    """When the offset of a record counts as processed (storm-kafka-client's enum)."""

    AT_LEAST_ONCE = "AT_LEAST_ONCE"
    AT_MOST_ONCE = "AT_MOST_ONCE"
    NO_GUARANTEE = "NO_GUARANTEE"


class FirstPollOffsetStrategy(StrEnum):
    """Where a partition starts the first time this topology polls it."""

    EARLIEST = "EARLIEST"
    LATEST = "LATEST"
    UNCOMMITTED_EARLIEST = "UNCOMMITTED_EARLIEST"
    UNCOMMITTED_LATEST = "UNCOMMITTED_LATEST"


DEFAULT_RETRY: dict[str, Any] = {"initial_delay_ms": 0, "delay_period_ms": 2, "max_retries": None,
                                 "max_delay_ms": 10_000}
DEFAULT_TRANSLATOR = "stormpy.connectors.kafka:DefaultRecordTranslator"
_FORBIDDEN_PROPS = {
    "enable.auto.commit": "offsets are committed by the spout according to processing_guarantee; "
                          "use ProcessingGuarantee.NO_GUARANTEE for periodic commits of the position",
    "bootstrap.servers": "set bootstrap_servers instead",
    "group.id": "set group_id instead",
}


def _err(setting: str, problem: str) -> KafkaConfigError:
    return KafkaConfigError(f"KafkaSpoutConfig.{setting}", problem)


def _enum(setting: str, cls: type[Enum], value: Any) -> Any:
    if isinstance(value, cls):
        return value
    try:
        return cls(value)
    except ValueError:
        names = ", ".join(m.value for m in cls)
        raise _err(setting, f"unknown value {value!r} (one of {names})") from None


@dataclass
class KafkaSpoutConfig:
    """The Kafka spout's settings (see the module doc). Construct, then ``validate()`` (done by
    ``from_doc`` and by the spout)."""

    bootstrap_servers: str
    group_id: str
    topics: list[str] | None = None
    topic_pattern: str | None = None
    consumer_props: dict[str, Any] = field(default_factory=dict)
    processing_guarantee: ProcessingGuarantee | str = ProcessingGuarantee.AT_LEAST_ONCE
    first_poll_offset_strategy: FirstPollOffsetStrategy | str = FirstPollOffsetStrategy.UNCOMMITTED_EARLIEST
    offset_commit_period_ms: int = 30_000
    max_uncommitted_offsets: int = 10_000_000
    poll_timeout_ms: int = 200
    partition_refresh_period_ms: int = 2_000
    max_poll_records: int = 500
    retry: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_RETRY))
    record_translator: str = DEFAULT_TRANSLATOR
    record_translator_args: dict[str, Any] = field(default_factory=dict)
    emit_null_tuples: bool = False
    tuple_listener: str | None = None
    fail_fast: bool = False
    batch_acking: bool = False

    def validate(self) -> KafkaSpoutConfig:
        """Check every setting and normalise the enums; KafkaConfigError names the first bad one."""
        err = KafkaConfigError
        name = "KafkaSpoutConfig."
        check_text(name + "bootstrap_servers", self.bootstrap_servers,
                   "a non-empty 'host:port[,host:port]' string", error=err)
        check_text(name + "group_id", self.group_id, "a non-empty string (offsets are committed "
                                                     "to this consumer group)", error=err)
        if (self.topics is None) == (self.topic_pattern is None):
            raise _err("topics", "give exactly one of topics (a list of names) and topic_pattern "
                                 "(a regular expression)")
        if self.topics is not None:
            if (isinstance(self.topics, str) or not isinstance(self.topics, (list, tuple))
                    or not self.topics or not all(isinstance(t, str) and t for t in self.topics)):
                raise _err("topics", f"must be a non-empty list of topic names, got {self.topics!r}")
            self.topics = list(self.topics)
        if self.topic_pattern is not None:
            check_text(name + "topic_pattern", self.topic_pattern, "a regular expression", error=err)
            try:
                re.compile(self.topic_pattern)
            except re.error as exc:
                raise _err("topic_pattern", f"invalid regular expression {self.topic_pattern!r}: "
                                            f"{exc}") from None
        props = check_mapping(name + "consumer_props", self.consumer_props,
                              "a mapping of librdkafka properties", error=err)
        for key, value in props.items():
            if key in _FORBIDDEN_PROPS and not (key == "enable.auto.commit"
                                                and str(value).lower() == "false"):
                raise _err("consumer_props", f"{key!r} cannot be set here: {_FORBIDDEN_PROPS[key]}")
        self.processing_guarantee = _enum("processing_guarantee", ProcessingGuarantee,
                                          self.processing_guarantee)
        self.first_poll_offset_strategy = _enum("first_poll_offset_strategy", FirstPollOffsetStrategy,
                                                self.first_poll_offset_strategy)
        for setting, low in (("offset_commit_period_ms", 1), ("max_uncommitted_offsets", 1),
                             ("poll_timeout_ms", 0), ("partition_refresh_period_ms", 1),
                             ("max_poll_records", 1)):
            check_int(name + setting, getattr(self, setting), low, error=err)
        self._validate_retry()
        check_import_path(name + "record_translator", self.record_translator, error=err)
        check_mapping(name + "record_translator_args", self.record_translator_args, error=err)
        if self.tuple_listener is not None:
            check_import_path(name + "tuple_listener", self.tuple_listener, error=err)
        for flag in ("emit_null_tuples", "fail_fast", "batch_acking"):
            check_flag(name + flag, getattr(self, flag), error=err)
        try:
            msgpack.packb(self._raw_doc())
        except (TypeError, ValueError, OverflowError) as exc:
            raise _err("consumer_props", f"settings must be plain data msgpack can carry: {exc}") from None
        return self

    def _validate_retry(self) -> None:
        retry = check_mapping("KafkaSpoutConfig.retry", self.retry, f"a mapping like {DEFAULT_RETRY}",
                              error=KafkaConfigError)
        unknown = set(retry) - set(DEFAULT_RETRY)
        if unknown:
            raise _err("retry", f"unknown keys {sorted(unknown)} (known: {sorted(DEFAULT_RETRY)})")
        merged = {**DEFAULT_RETRY, **retry}
        for key in ("initial_delay_ms", "delay_period_ms", "max_delay_ms"):
            check_number(f"KafkaSpoutConfig.retry[{key!r}]", merged[key], 0, unit="milliseconds",
                         error=KafkaConfigError)
        if merged["max_retries"] is not None:
            check_int("KafkaSpoutConfig.retry['max_retries']", merged["max_retries"], 0,
                      error=KafkaConfigError)
        self.retry = merged

    @property
    def guarantee(self) -> ProcessingGuarantee:
        return ProcessingGuarantee(self.processing_guarantee)

    @property
    def first_poll(self) -> FirstPollOffsetStrategy:
        return FirstPollOffsetStrategy(self.first_poll_offset_strategy)

    def _raw_doc(self) -> dict[str, Any]:
        doc = asdict(self)
        for key in ("processing_guarantee", "first_poll_offset_strategy"):
            value = doc[key]
            doc[key] = value.value if isinstance(value, Enum) else value
        return doc

    def to_doc(self) -> dict[str, Any]:
        """The validated settings as plain data (msgpack-serialisable)."""
        self.validate()
        return self._raw_doc()

    @classmethod
    def from_doc(cls, doc: Any) -> KafkaSpoutConfig:
        """Rebuild and validate a config from ``to_doc()`` output (or a hand-written mapping)."""
        return settings_from_doc(cls, doc, error=KafkaConfigError)
