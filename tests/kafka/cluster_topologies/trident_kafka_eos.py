"""The Kafka-to-Kafka Trident word count: KafkaOpaqueSpout → split → opaque SQLite counts → each
new count written to an output topic by the transactional Kafka sink (or, with
``exactly_once=False``, its at-least-once mode), key the word, value the count; and a
transactional topology copying rows to Kafka through ``KafkaTransactionalCommitterBolt``."""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import Any

from stormpy.connectors.kafka._opaque import KafkaOpaqueSpout
from stormpy.connectors.kafka._transactional_sink import KafkaTransactionalConfig
from stormpy.connectors.kafka._trident_sink import (
    KafkaTransactionalCommitterBolt,
    KafkaTransactionalStateFactory,
    KafkaTransactionalUpdater,
)
from stormpy.topology._spec import TopologySpec
from stormpy.topology._tuple import Tuple
from stormpy.transactional import Committer, MemoryTransactionalSpout, TransactionalTopologyBuilder
from stormpy.trident import OPAQUE, Count, Filter, StateFactory, TridentTopology, TridentTuple

#: failures injected by FailOnceAfterWrite, by name (one process: local mode)
FAILS: dict[str, int] = defaultdict(int)
_lock = threading.Lock()


def split_value(tuple_: Any) -> list[list[str]]:
    return [[w] for w in (tuple_["value"] or "").split()]


class FailOnceAfterWrite(Filter):
    """Fails the batch once (per ``name``) right after the sink committed records to Kafka and
    before the topology records the commit: the crash window the sink must get right."""

    def __init__(self, name: str) -> None:
        self.name = name

    def is_keep(self, tuple_: TridentTuple) -> bool:
        with _lock:
            if tuple_[0] > 0 and FAILS[self.name] == 0:
                FAILS[self.name] += 1
                raise RuntimeError("injected failure after the Kafka commit")
        return True


def build(bootstrap: str, source: str, output: str, database: str, txid: str, prefix: str, *,
          exactly_once: bool = True, fail_after_write: str | None = None,
          batch_records: int = 200) -> TopologySpec:
    sink = KafkaTransactionalConfig(bootstrap, topic=output, key_field="word",
                                    message_field="count", transactional_id_prefix=prefix,
                                    exactly_once=exactly_once,
                                    producer_props={"linger.ms": 5})
    t = TridentTopology()
    written = t.new_stream(txid, KafkaOpaqueSpout(bootstrap, source, batch_records)) \
        .parallelism_hint(2) \
        .flat_map(split_value, ["word"]).parallelism_hint(2) \
        .group_by(["word"]) \
        .persistent_aggregate(StateFactory.sqlite(database, "counts", OPAQUE), Count(), ["count"]) \
        .parallelism_hint(2) \
        .new_values_stream() \
        .partition_persist(KafkaTransactionalStateFactory(sink), ["word", "count"],
                           KafkaTransactionalUpdater(), ["written"]) \
        .new_values_stream()
    if fail_after_write is not None:
        written.filter(FailOnceAfterWrite(fail_after_write))
    return t.build()


class FailOnceAfterCommit(Committer):
    """Downstream of ``KafkaTransactionalCommitterBolt`` in a transactional topology: fails the
    commit once (per ``name``) after the sink wrote records to Kafka."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.written = 0

    def execute(self, tup: Tuple) -> None:
        self.written += tup.values[1]

    def finish_batch(self) -> None:
        with _lock:
            if self.written > 0 and FAILS[self.name] == 0:
                FAILS[self.name] += 1
                raise RuntimeError("injected failure after the Kafka commit")


def build_transactional(bootstrap: str, output: str, rows: list[list[str]], prefix: str,
                        fail_after_commit: str, tx_id: str) -> TopologySpec:
    """A transactional topology copying ``rows`` (``[key, message]``, two partitions, 25 per
    batch) to ``output`` through ``KafkaTransactionalCommitterBolt``."""
    config = KafkaTransactionalConfig(bootstrap, topic=output, transactional_id_prefix=prefix)
    spout = MemoryTransactionalSpout({0: rows[::2], 1: rows[1::2]}, ["key", "message"], 25)
    builder = TransactionalTopologyBuilder(tx_id, "rows", spout, 2)
    builder.set_bolt("to-kafka", KafkaTransactionalCommitterBolt, 2,
                     kwargs={"config": config.to_doc()}).fields_grouping("rows", ["key"])
    builder.set_bolt("check", FailOnceAfterCommit, 1,
                     kwargs={"name": fail_after_commit}).global_grouping("to-kafka")
    return builder.create_topology()
