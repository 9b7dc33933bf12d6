"""Partition assignment and offset commits of the Kafka spout (the part that talks to the broker
about partitions and offsets); :class:`~stormpy.connectors.kafka._spout.KafkaSpout` builds on it.

Everything here runs on the executor loop except the jobs handed to ``run_in_background``
(metadata and committed-offset lookups, synchronous commits), whose results come back through
``on_done`` callbacks on the loop. See the spout module for the guarantees.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from stormpy.connectors._reporting import report_to_task
from stormpy.connectors.kafka import _assignment as asg
from stormpy.connectors.kafka._config import KafkaSpoutConfig, ProcessingGuarantee
from stormpy.connectors.kafka._messages import KafkaSpoutMessageId, OffsetAndMetadata, TopicPartition
from stormpy.connectors.kafka._offset_manager import OffsetManager
from stormpy.connectors.kafka._retry import RetryExponentialBackoff
from stormpy.connectors.kafka._translator import KafkaTupleListener, PolledRecord
from stormpy.topology import Spout, TopologyContext

__all__ = ["CLIENT_TIMEOUT_SECS", "CLOSE_TIMEOUT_SECS", "PartitionsAndCommits"]

log = logging.getLogger("stormpy.connectors.kafka")

#: broker calls made off the loop (metadata, committed offsets) give up after this
CLIENT_TIMEOUT_SECS = 10.0
#: commit and close on shutdown wait at most this long
CLOSE_TIMEOUT_SECS = 5.0
#: the same kind of error is reported to topology info at most once per this many seconds


class PartitionsAndCommits(Spout):
    """State and broker-facing steps shared by the spout; set up by ``KafkaSpout.open``."""

    cfg: KafkaSpoutConfig
    context: TopologyContext
    consumer: Any
    clock: Callable[[], float]
    guarantee: ProcessingGuarantee
    at_least_once: bool
    metadata: str
    listener: KafkaTupleListener
    retry: RetryExponentialBackoff
    assigned: set[TopicPartition]
    managers: dict[TopicPartition, OffsetManager]
    emitted: set[KafkaSpoutMessageId]
    _acked_ids: list[KafkaSpoutMessageId]
    waiting: deque[PolledRecord]
    counters: dict[str, int]
    _held: list[PolledRecord] | None
    _paused: set[TopicPartition]
    _commits_in_flight: int
    _refreshing: bool

    def _bounded(self, fn: Callable[[], Any], what: str) -> None:
        errors: list[BaseException] = []

        def run() -> None:
            try:
                fn()
            except Exception as exc:
                errors.append(exc)

        t = threading.Thread(target=run, name=f"kafka-{what}", daemon=True)
        t.start()
        t.join(CLOSE_TIMEOUT_SECS)
        if t.is_alive() or errors:
            log.warning("Kafka spout task %s: %s %s", self.context.task_id, what,
                        f"failed: {errors[0]}" if errors else f"did not finish in {CLOSE_TIMEOUT_SECS} s")

    # -- errors ------------------------------------------------------------------------------
    def _report(self, text: str) -> None:
        """Count an error and report it to the task (logged and throttled there, once)."""
        self.counters["errors"] += 1
        report_to_task(self, "KafkaSpout", text)

    # -- assignment ----------------------------------------------------------------------------
    def _fetch_assignment(self, assigned: frozenset[TopicPartition], timeout: float) -> tuple[Any, ...]:
        """Off the loop: (my partitions, committed offsets of the new ones, missing topics, all)."""
        cfg = self.cfg
        metadata = self.consumer.topics(timeout)
        partitions = asg.topic_partitions(metadata, cfg.topics, cfg.topic_pattern)
        mine = asg.assign_round_robin(partitions, self.context.task_index,
                                      len(self.context.component_tasks))
        new = [tp for tp in mine if tp not in assigned]
        committed = self.consumer.committed(new, timeout) if new else {}
        return mine, committed, asg.missing_topics(metadata, cfg.topics), partitions

    def _start_refresh(self) -> None:
        self._refreshing = True
        assigned = frozenset(self.assigned)
        self.run_in_background(lambda: self._fetch_assignment(assigned, CLIENT_TIMEOUT_SECS),
                               self._on_refreshed)

    def _on_refreshed(self, result: Any, error: BaseException | None) -> None:
        self._refreshing = False
        if error is not None:
            self._report(f"partition refresh failed ({error}); retrying")
            return
        mine, committed, missing, _ = result
        if missing:
            self._report(f"topic(s) {missing} of KafkaSpoutConfig.topics not found")
        self._apply_assignment(mine, committed)

    def _apply_assignment(self, mine: list[TopicPartition],
                          committed: Mapping[TopicPartition, OffsetAndMetadata | None]) -> None:
        self._fold_acks()
        new = set(mine)
        revoked = self.assigned - new
        added = [tp for tp in mine if tp not in self.assigned]
        if revoked:
            if self.at_least_once:
                self._commit_acked(revoked)
            self.consumer.unassign(sorted(revoked))
            for tp in revoked:
                self.managers.pop(tp, None)
            self.retry.retain_all(new)
            self.emitted = {m for m in self.emitted if m.topic_partition in new}
            self.waiting = deque(r for r in self.waiting if (r[0], r[1]) in new)
            if self._held is not None:  # AT_MOST_ONCE, committing before the emit
                self._held = [r for r in self._held if (r[0], r[1]) in new]
            self._paused -= revoked
        starts: dict[TopicPartition, int] = {}
        strategy = self.cfg.first_poll
        for tp in added:
            c = committed.get(tp)
            by_us = c is not None and self._committed_by_this_topology(tp, c)
            starts[tp] = asg.start_offset(strategy, c, by_us)
            if self.at_least_once and starts[tp] >= 0 and tp not in self.managers:
                self.managers[tp] = OffsetManager(tp, starts[tp])
        self.consumer.assign(starts)
        self.assigned = new
        if revoked or added:
            log.info("Kafka spout task %s: partitions %s (revoked %s)", self.context.task_id,
                     sorted(new), sorted(revoked))
            self.listener.on_partitions_reassigned(sorted(new))

    def _committed_by_this_topology(self, tp: TopicPartition, committed: OffsetAndMetadata) -> bool:
        """Storm's isOffsetCommittedByThisTopology."""
        om = self.managers.get(tp)
        if self.at_least_once and om is not None and om.has_committed:
            return True
        return asg.committed_by_topology(committed.metadata, self.context.topology_id)

    # -- commits -----------------------------------------------------------------------------
    def _fold_acks(self) -> None:
        """Hand the acks of in-flight tuples gathered by ``ack`` since the last fold to their
        partitions' offset managers (one call per run of one partition). Called before anything
        reads the acked state: a poll, a commit, revocation, metrics."""
        ids = self._acked_ids
        if not ids:
            return
        self._acked_ids = []
        managers = self.managers
        last_t: Any = None
        last_p = -1
        om: OffsetManager | None = None
        offsets: list[int] = []
        for mid in ids:
            if mid[1] != last_p or mid[0] != last_t:
                if om is not None:
                    om.ack_emitted_many(offsets)
                last_t, last_p = mid[0], mid[1]
                om = managers.get((last_t, last_p))  # type: ignore[call-overload]
                offsets = []
            offsets.append(mid[2])
        if om is not None:
            om.ack_emitted_many(offsets)

    def _acked_offsets(self, partitions: Any) -> dict[TopicPartition, OffsetAndMetadata]:
        self._fold_acks()
        out = {}
        for tp in partitions:
            om = self.managers.get(tp)
            nxt = om.find_next_commit_offset(self.metadata) if om is not None else None
            if nxt is not None:
                out[tp] = nxt
        return out

    def _position_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        return {tp: OffsetAndMetadata(pos, self.metadata)
                for tp, pos in self.consumer.position(sorted(self.assigned)).items()}

    def _commit_now(self) -> None:
        if self.at_least_once:
            self._commit_acked(self.assigned)
        elif self.guarantee is ProcessingGuarantee.NO_GUARANTEE:
            offsets = self._position_offsets()
            if offsets:
                self.consumer.commit_async(offsets)

    def _commit_acked(self, partitions: Any) -> None:
        """Commit the acked prefix of ``partitions`` synchronously, off the loop."""
        offsets = self._acked_offsets(partitions)
        if not offsets:
            return
        self._commits_in_flight += 1
        self.run_in_background(lambda: self.consumer.commit_sync(offsets),
                               lambda failed, err: self._on_committed(offsets, failed, err))

    def _on_committed(self, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                      failed: Mapping[TopicPartition, str] | None, error: BaseException | None) -> None:
        self._commits_in_flight -= 1
        if error is not None:
            self.counters["commit_failures"] += 1
            self._report(f"committing {dict(offsets)} failed ({error}); acked offsets stay "
                                   "uncommitted and the commit is retried")
            return
        self.counters["commits"] += 1
        for tp, oam in offsets.items():
            if failed and tp in failed:
                self.counters["commit_failures"] += 1
                self._report(f"committing {tp} at {oam.offset} failed: {failed[tp]}")
                continue
            om = self.managers.get(tp)
            if om is None:
                continue  # revoked meanwhile
            om.commit(oam)
            position = self.consumer.position([tp]).get(tp)
            if position is not None and position < oam.offset:
                # behind the commit (a replay went back further than what is now committed):
                # skip forward and drop the records waiting below it
                self._seek(tp, oam.offset)
                self.waiting = deque(r for r in self.waiting
                                     if (r[0], r[1]) != tp or r[2] >= oam.offset)

    def _seek(self, tp: TopicPartition, offset: int) -> None:
        try:
            self.consumer.seek(tp, offset)
        except Exception as exc:
            self._report(f"seek of {tp} to {offset} failed ({exc}); retried on the next poll")

    def _commit_then_emit(self, records: list[PolledRecord]) -> None:
        """AT_MOST_ONCE: commit the position (off the loop), emit the records once it is done."""
        offsets = self._position_offsets()
        if not offsets:  # no position known (cannot happen after records were consumed)
            self._report("no consumer position to commit before emitting; polled again")
            for tp in {TopicPartition(r[0], r[1]) for r in records}:
                self._seek(tp, min(r[2] for r in records if (r[0], r[1]) == tp))
            return
        self._held = records
        self.run_in_background(lambda: self.consumer.commit_sync(offsets),
                               lambda failed, err: self._on_amo_committed(offsets, failed, err))

    def _on_amo_committed(self, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                          failed: Mapping[TopicPartition, str] | None, error: BaseException | None) -> None:
        records, self._held = self._held or [], None
        bad = set(offsets) if error is not None else set(failed or ())
        if bad:
            self.counters["commit_failures"] += 1
            self._report(f"committing {sorted(map(str, bad))} before emitting failed "
                                   f"({error or failed}); the records are polled again")
            for tp in bad:
                first = next((r[2] for r in records if (r[0], r[1]) == tp), None)
                if first is not None and tp in self.assigned:
                    self._seek(tp, first)
            records = [r for r in records if (r[0], r[1]) not in bad]
        else:
            self.counters["commits"] += 1
        self.waiting.extend(records)
