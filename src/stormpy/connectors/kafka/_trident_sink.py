"""The exactly-once Kafka sink for Trident and transactional topologies (see
:mod:`stormpy.connectors.kafka._transactional_sink` for the protocol).

* Trident: ``stream.partition_persist(KafkaTransactionalStateFactory(config),
  ["key", "message"], KafkaTransactionalUpdater())`` — each partition's part of a committed batch
  is one Kafka transaction of its task (the state is a :class:`KafkaTransactionalState`).
* Transactional topologies: ``builder.set_bolt("to-kafka", KafkaTransactionalCommitterBolt,
  n, kwargs={"config": config.to_doc()})`` — a ``Committer``: each task's tuples of a batch (values
  after the attempt, by field name) are one Kafka transaction in the commit phase.

Contract: a batch's records on a task are written in one Kafka transaction when the batch
commits; a txid whose transaction committed before (a replay after any crash, also one between
the Kafka commit and the topology's commit record) writes nothing; an attempt that fails leaves
nothing visible to ``read_committed`` consumers. No call to Kafka runs on the executor loop: the
Trident state's commit (which opens the sink when needed: ``init_transactions``, the marker read)
is its ``commit_later`` and runs in the background, as the committer bolt's
``finish_in_background`` does. The updater emits ``[records]`` on the new-values stream: the
records of the batch, 0 for a replay the open sink knows committed (a sink still to be opened
learns it in the commit, which then writes nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from stormpy.connectors.kafka._transactional_sink import (
    KafkaTransactionalConfig,
    KafkaTransactionalSink,
    Record,
    transactional_id,
)
from stormpy.topology._context import TopologyContext
from stormpy.topology._tuple import Tuple
from stormpy.transactional._api import BatchOutputCollector, Committer
from stormpy.transactional._attempt import TransactionAttempt
from stormpy.trident._operation import TridentCollector, TridentTuple
from stormpy.trident._state import StateFactory, StateUpdater

__all__ = ["KafkaTransactionalCommitterBolt", "KafkaTransactionalState",
           "KafkaTransactionalStateFactory", "KafkaTransactionalUpdater"]

_FACTORY_PATH = f"{__name__}:KafkaTransactionalStateFactory"


def _topology_name(conf: Mapping[str, Any], context: TopologyContext) -> str:
    name = conf.get("topology.name")
    return str(name) if name else context.topology_id


def task_sink(config: KafkaTransactionalConfig, conf: Mapping[str, Any],
              context: TopologyContext) -> KafkaTransactionalSink:
    """The sink of the task ``context`` describes, with its stable transactional.id; its counters
    are the task metric ``kafkaTransactionalSink`` (batches, records, skipped_batches, aborted,
    opens, last_txid)."""
    tid = transactional_id(config.transactional_id_prefix, _topology_name(conf, context),
                           context.component_id, context.task_index)
    sink = KafkaTransactionalSink(config, tid)
    context.register_metric("kafkaTransactionalSink", sink.metrics)
    return sink


class KafkaTransactionalState:
    """A task's Trident state over a :class:`KafkaTransactionalSink`: ``write(records)`` between
    ``begin_commit(txid)`` and ``commit(txid)``, which commits them as txid's transaction;
    ``commit_later(txid)`` takes the batch's records and returns that commit as a callable (the
    bolt runs it off the executor loop)."""

    def __init__(self, sink: KafkaTransactionalSink) -> None:
        self.sink = sink
        self.txid: int | None = None
        self.records: list[Record] = []
        self.written = 0

    def begin_commit(self, txid: int) -> None:
        self.txid = txid
        self.records = []

    def write(self, records: Sequence[Record]) -> None:
        if self.txid is None:
            raise RuntimeError("Kafka transactional state written outside a commit "
                               "(begin_commit not called)")
        self.records.extend(records)

    def already_committed(self) -> bool:
        """Whether the txid being committed is known, without a call to Kafka, to be in Kafka
        already: only an open sink knows; an unopened one answers False and its commit decides
        (it opens, reads the marker and skips a committed txid)."""
        if self.txid is None:
            return False
        sink = self.sink
        return sink.config.exactly_once and sink.producer is not None and sink.committed(self.txid)

    def commit_later(self, txid: int) -> Callable[[], None]:
        """The batch's commit, to run off the executor loop: the records written so far go into
        txid's Kafka transaction (or nothing, for a committed txid)."""
        records, self.records, self.txid = self.records, [], None

        def commit() -> None:
            self.written = len(records) if self.sink.commit_batch(txid, records) else 0
        return commit

    def commit(self, txid: int) -> None:
        self.commit_later(txid)()

    def close(self) -> None:
        self.sink.close()


class KafkaTransactionalStateFactory(StateFactory):
    """``KafkaTransactionalStateFactory(KafkaTransactionalConfig(...))`` (or its keyword
    arguments): the Kafka sink as a Trident state, for ``partition_persist`` with
    :class:`KafkaTransactionalUpdater`."""

    def __init__(self, config: KafkaTransactionalConfig | None = None, **settings: Any) -> None:
        if config is None:
            config = KafkaTransactionalConfig(**settings)
        elif settings:
            raise TypeError("KafkaTransactionalStateFactory: give a config or its settings, "
                            "not both")
        super().__init__("external", f"kafka:{config.transactional_id_prefix}")
        #: the sink's settings (the base class's ``config`` is a Redis state's provider config)
        self.kafka = config.validate()

    def doc(self) -> dict[str, Any]:
        return {**super().doc(), "factory": _FACTORY_PATH, "kafka": self.kafka.to_doc()}

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> KafkaTransactionalStateFactory:
        return cls(KafkaTransactionalConfig.from_doc(doc["kafka"]))

    @property
    def key(self) -> tuple[Any, ...]:
        cfg = self.kafka
        return ("kafka", cfg.bootstrap_servers, cfg.topic, cfg.topic_field,
                cfg.transactional_id_prefix, cfg.commit_log)

    def make_state(self, conf: Mapping[str, Any], context: Any) -> KafkaTransactionalState:
        return KafkaTransactionalState(task_sink(self.kafka, conf, context))


class KafkaTransactionalUpdater(StateUpdater):
    """Maps each tuple to a record by the config's fields (``key_field``, ``message_field``,
    ``topic_field``) and writes the partition's batch; emits ``[records]`` (0 for a replay the
    open sink knows committed)."""

    def update_state(self, state: Any, tuples: list[TridentTuple],
                     collector: TridentCollector) -> None:
        if not isinstance(state, KafkaTransactionalState):
            raise TypeError("KafkaTransactionalUpdater needs a KafkaTransactionalStateFactory "
                            f"state, got {type(state).__name__}")
        if state.already_committed():  # a replay: nothing is mapped or written
            collector.emit([0])
            return
        cfg = state.sink.config
        records = []
        for t in tuples:
            record = cfg.record_of(t.__getitem__, "KafkaTransactionalUpdater")
            if record is not None:
                records.append(record)
        state.write(records)
        collector.emit([len(records)])


class KafkaTransactionalCommitterBolt(Committer):
    """A transactional topology's committer writing each batch's tuples to Kafka exactly once.
    Keyword argument ``config``: a :class:`KafkaTransactionalConfig` doc; its fields name the
    tuple fields (after the attempt) that hold key, message and topic. Emits
    ``[attempt, records written]`` (0 for a replay whose txid committed before)."""

    outputs = ["id", "written"]

    #: each task's sink (kept across its batches), by (topology, component, task index)
    _sinks: dict[tuple[str, str, int], KafkaTransactionalSink] = {}

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = KafkaTransactionalConfig.from_doc(config)

    @staticmethod
    def _task_key(context: TopologyContext) -> tuple[str, str, int]:
        return context.topology_id, context.component_id, context.task_index

    @classmethod
    def cleanup_task(cls, conf: Mapping[str, Any], context: TopologyContext) -> None:
        sink = cls._sinks.pop(cls._task_key(context), None)
        if sink is not None:
            sink.close()

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: BatchOutputCollector, id: TransactionAttempt) -> None:  # noqa: A002
        super().prepare(conf, context, collector, id)
        key = self._task_key(context)
        if key not in self._sinks:
            self._sinks[key] = task_sink(self.config, conf, context)
        self.sink = self._sinks[key]
        self.records: list[Record] = []

    def execute(self, tup: Tuple) -> None:
        fields = tup.fields
        if fields is None:
            raise ValueError(f"tuple from {tup.component}/{tup.stream} has no declared fields; "
                             "KafkaTransactionalCommitterBolt maps fields by name")
        names, values = fields.to_list(), tup.values

        def get(name: str) -> Any:
            try:
                return values[names.index(name)]
            except ValueError:
                raise KeyError(name) from None
        record = self.config.record_of(get, f"tuple from {tup.component}/{tup.stream}")
        if record is not None:
            self.records.append(record)

    def finish_batch(self) -> None:
        txid = self.id.transaction_id
        records = self.records

        def done(written: int) -> None:
            self.emit([self.id, written])
        self.collector.finish_in_background(
            lambda: len(records) if self.sink.commit_batch(txid, records) else 0, done)
