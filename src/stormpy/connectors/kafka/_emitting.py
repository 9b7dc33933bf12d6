"""How the Kafka spout turns a polled batch of records into tuples: one ``emit_many`` per stream.

:class:`RecordEmitter` is the part of :class:`~stormpy.connectors.kafka._spout.KafkaSpout` that
runs per record, on the executor loop. ``_emit_batch(records)`` goes through a polled batch once:

* a **new** record (AT_LEAST_ONCE: its offset lies above every offset emitted or committed on its
  partition; the other guarantees: any record) cannot be acked, in flight, committed or scheduled
  for a retry, so it is only translated and queued, with a fresh message id under AT_LEAST_ONCE;
  its partition's offset manager takes the run of new offsets in one call;
* any other record (a replay after a seek back) goes through every check of storm-kafka-client's
  ``emitOrRetryTuple``: skipped when acked, in flight, committed or not yet due for its retry;
* a record the translator rejects is reported and acked past (``fail_fast``: the spout stops); a
  translator returning None acks the record directly unless ``emit_null_tuples``.

The queued tuples are emitted per stream (in record order within a stream), then reported to the
tuple listener's ``on_emit``: under AT_LEAST_ONCE with one ``emit_many`` (a tracked tuple tree per
record), or, with ``batch_acking``, the new records as ONE ``emit_batch`` (one tuple tree for the
batch, message ids still per record; replays stay one tree per record); under the other
guarantees as one untracked ``emit_batch`` (the same as an untracked ``emit_many``, and one
``ColumnBatch`` per task towards bolts with ``execute_columns``). Records of partitions no longer
assigned are dropped. The default translator's values are built inline (no call per record);
its records arrive as those values already (``consume_rows``: ``[topic, partition, offset, key,
value]``, indexed like a ``KafkaRecord``) and are emitted as they are. With the default
translator and no AT_LEAST_ONCE there is nothing to do per record here: the polled rows go to
``emit_batch`` as they are (the waiting records are all of assigned partitions, since a
revocation drops the others from ``waiting`` and from a batch held for its AT_MOST_ONCE commit).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, cast

from stormpy.connectors.kafka._messages import KafkaSpoutMessageId, TopicPartition
from stormpy.connectors.kafka._offset_manager import OffsetManager
from stormpy.connectors.kafka._partitions import PartitionsAndCommits
from stormpy.connectors.kafka._translator import KafkaRecord, KafkaTuple, PolledRecord, RecordTranslator
from stormpy.topology import DEFAULT_STREAM

__all__ = ["KafkaRecordError", "RecordEmitter"]

_new_id = tuple.__new__  # a fresh KafkaSpoutMessageId (no fails) without the Python-level __new__

#: stream -> (values lists, message ids or None) waiting for their emit_many
_Out = dict[str, tuple[list[list[Any]], list[Any] | None]]


class KafkaRecordError(RuntimeError):
    """A record the translator could not handle, with ``fail_fast`` on."""


class RecordEmitter(PartitionsAndCommits):
    """Per-record work of the Kafka spout (see the module doc); state set up by ``open``."""

    translator: RecordTranslator
    _null_values: list[Any]
    _on_emit: Callable[[list[Any], Any], None] | None
    _on_ack: Callable[[Any], None] | None
    #: the default translator: records are polled as rows, its tuples' values (set by ``open``)
    _rows: bool

    def _uses_default_translator(self) -> bool:
        """True when the translator's ``apply`` is the base one (values built inline)."""
        return type(self.translator).apply is RecordTranslator.apply

    def _emit_batch(self, records: Iterable[PolledRecord]) -> None:
        """Emit the tuples of ``records`` (see the module doc)."""
        alo = self.at_least_once
        if not alo and self._rows:
            # nothing to track or translate: the rows are the tuples' values, and every waiting
            # record is of an assigned partition (a revocation drops the others)
            self.emit_batch(list(records), None, DEFAULT_STREAM)
            return
        translate = None if self._rows else self.translator.apply
        self._fold_acks()  # the replay checks below read the acked offsets
        assigned, managers = self.assigned, self.managers
        values_out: list[list[Any]] = []
        mids: list[Any] | None = [] if alo else None
        out: _Out = {DEFAULT_STREAM: (values_out, mids)}
        batched = alo and self.cfg.batch_acking
        # replays (seek backs) stay one tracked tree per record
        replays: _Out = {} if batched else out
        add_values = values_out.append
        emitted_add = self.emitted.add
        mid_cls = KafkaSpoutMessageId
        last_t: Any = None
        last_p = -1
        ok = False
        om: OffsetManager | None = None
        latest = 0
        run: list[int] = []  # new offsets of the current partition, for its offset manager
        for r in records:
            t = r[0]
            p = r[1]
            o = r[2]
            if p != last_p or t != last_t:  # a new partition: look it up once per run
                if run:
                    om.add_emitted_run(run)  # type: ignore[union-attr]
                    run = []
                last_t, last_p = t, p
                key = (t, p)
                ok = key in assigned
                if ok and alo:
                    om = managers.get(key)  # type: ignore[call-overload]
                    if om is None:
                        tp = TopicPartition(t, p)
                        om = managers[tp] = OffsetManager(tp, o)
                    latest = max(om.latest_emitted_offset, om.committed_offset - 1)
            if not ok:
                continue  # its partition was revoked
            if alo and o <= latest:  # emitted or committed before: the full checks
                if run:
                    om.add_emitted_run(run)  # type: ignore[union-attr]
                    run = []
                self._emit_one(r, om, replays)  # type: ignore[arg-type]
                continue
            try:
                tup = translate(cast(KafkaRecord, r)) if translate is not None else \
                    (r if type(r) is list else [t, p, o, r[3], r[4]])
            except Exception as exc:
                if run:
                    om.add_emitted_run(run)  # type: ignore[union-attr]
                    run = []
                self._bad_record(r, exc, om, _new_id(mid_cls, (t, p, o)) if alo else None)
                latest = o
                continue
            if type(tup) is not list:  # None or a KafkaTuple
                if run:
                    om.add_emitted_run(run)  # type: ignore[union-attr]
                    run = []
                self._place(r, tup, om, _new_id(mid_cls, (t, p, o)) if alo else None, False, out)
                latest = o
                continue
            add_values(tup)
            if alo:
                mid = _new_id(mid_cls, (t, p, o))
                emitted_add(mid)
                mids.append(mid)  # type: ignore[union-attr]
                run.append(o)
                latest = o
        if run:
            om.add_emitted_run(run)  # type: ignore[union-attr]
        on_emit = self._on_emit
        for stream, (values_list, ids) in replays.items() if batched else ():
            if values_list:
                self.emit_many(values_list, msg_ids=ids, stream=stream)
                if on_emit is not None and ids is not None:
                    for values, mid in zip(values_list, ids):
                        on_emit(values, mid)
        for stream, (values_list, ids) in out.items():
            if values_list:
                if batched or ids is None:  # one tree for the batch, or untracked
                    self.emit_batch(values_list, ids, stream)
                else:
                    self.emit_many(values_list, msg_ids=ids, stream=stream)
                if on_emit is not None and ids is not None:
                    for values, mid in zip(values_list, ids):
                        on_emit(values, mid)

    def _emit_one(self, record: PolledRecord, om: OffsetManager, out: _Out) -> None:
        """AT_LEAST_ONCE, a record at or below its partition's latest emitted offset: queue its
        tuple unless it is acked, in flight, committed or not yet due for its retry."""
        offset = record[2]
        mid = self.retry.message_id(record[0], record[1], offset)
        if om.is_acked(offset) or mid in self.emitted or offset < om.committed_offset:
            return
        scheduled = mid.num_fails > 0 and self.retry.is_scheduled(mid)  # only a failed id can be
        if scheduled and not self.retry.is_ready(mid):
            return
        try:
            tup = self.translator.apply(cast(KafkaRecord, record))  # a row: default translator
        except Exception as exc:
            self._bad_record(record, exc, om, mid)
            return
        self._place(record, tup, om, mid, scheduled, out)

    def _bad_record(self, record: PolledRecord, exc: Exception, om: OffsetManager | None,
                    mid: KafkaSpoutMessageId | None) -> None:
        """The translator raised: stop (``fail_fast``) or report, count and ack past it."""
        where = f"record {record[0]}-{record[1]} offset {record[2]} could not be translated"
        if self.cfg.fail_fast:
            raise KafkaRecordError(f"{where} (fail_fast is on): {exc!r}") from exc
        self.counters["bad_records"] += 1
        self._report(f"{where} ({exc!r}); acked past it "
                                   f"({self.counters['bad_records']} bad records so far)")
        if om is not None and mid is not None:
            self._ack_directly(om, mid)

    def _place(self, record: PolledRecord, tup: Any, om: OffsetManager | None,
               mid: KafkaSpoutMessageId | None, scheduled: bool, out: _Out) -> None:
        """Queue the translated ``tup`` of ``record`` on its stream (None: ack it directly, or an
        empty tuple with ``emit_null_tuples``), marking it emitted under AT_LEAST_ONCE."""
        if tup is None:
            if not self.cfg.emit_null_tuples:
                if om is not None and mid is not None:
                    self._ack_directly(om, mid)
                return
            tup = list(self._null_values)
        stream = tup.stream if isinstance(tup, KafkaTuple) else DEFAULT_STREAM
        entry = out.get(stream)
        if entry is None:
            entry = out[stream] = ([], [] if self.at_least_once else None)
        entry[0].append(list(tup))
        if om is None or mid is None:
            return
        self.emitted.add(mid)
        om.add_to_emit_msgs(record[2])
        if scheduled:
            self.retry.remove(mid)
        entry[1].append(mid)  # type: ignore[union-attr]

    def _ack_directly(self, om: OffsetManager, mid: KafkaSpoutMessageId) -> None:
        self.retry.remove(mid)
        self.emitted.discard(mid)
        mid.null_tuple = True
        om.add_to_emit_msgs(mid.offset)
        self.ack(mid)
