"""The spout task's view of the stream: which shards it owns, their local state, checkpoints.

* The shard list lives in the checkpoint store. Task 0 of the spout refreshes it from ListShards
  every ``shard_list_refresh_ms`` and writes it when it changed; every task watches it.
* Shards are assigned by position in the list sorted by shard id: shard ``i`` belongs to task
  index ``i % num_tasks`` (the connectors' shared
  :func:`~stormpy.connectors._partitions.round_robin_share`, as the Kafka spout's partitions:
  deterministic, the same on every task; resharding appends children at the end, so existing
  shards keep their owner).
* Per owned shard a ``LocalShardState`` holds a BufferedGetter and an InflightRecordTracker. A
  shard starts reading ``AFTER_SEQUENCE_NUMBER`` of its stored checkpoint, else at the initial
  position (a child of a listed parent: at TRIM_HORIZON).
* Resharding: a child starts only once every parent is finished (read to its end, every record
  done, ``shard_end`` checkpoint stored) or no longer listed, so records of one partition key
  keep their order.
* Checkpoints are written every ``checkpoint_interval_ms`` and on ``flush``, only when changed and
  only forwards; while the store is unreachable emitting goes on and writes are retried.
* Blocking work runs off the executor loop through ``submit`` (the task's off-loop seam):
  GetRecords (in the BufferedGetter), the shard-list refresh (ListShards and its write), the
  checkpoint reads that start shards and the checkpoint writes. Their results are applied on the
  loop. At most one write per shard is in flight, written values are snapshots of the tracker's
  checkpoint taken on the loop, and the store's compare-and-set keeps every stored checkpoint
  from moving backwards; so a stored checkpoint never passes an unacked record.
  ``flush_now`` (for ``close``) writes synchronously.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from stormpy.connectors.kinesis._checkpoints import Checkpoint, CheckpointStore, CheckpointUnavailable
from stormpy.connectors.kinesis._client import ShardInfo, list_shards
from stormpy.connectors.kinesis._config import KinesisSpoutConfig
from stormpy.connectors.kinesis._errors import KinesisStreamError
from stormpy.connectors.kinesis._getter import (
    BufferedGetter,
    Position,
    ShardGetter,
    Submit,
    run_inline,
)
from stormpy.connectors.kinesis._shards import LocalShardState, assign
from stormpy.connectors.kinesis._tracker import InflightRecordTracker

__all__ = ["LocalShardState", "StateManager", "assign"]

log = logging.getLogger(__name__)


class StateManager:
    """Shard ownership, local shard states and checkpointing of one spout task.

    Everything runs on the executor loop except ``prepare`` (blocking: call it off the loop, or
    use ``start``), the jobs handed to ``submit`` and ``on_shard_list``, which the store's watch
    calls from its own thread. Errors of background work (a failed ListShards, a corrupt
    checkpoint, a GetRecords that is not throttling) go to ``on_error`` and are retried later;
    none is raised on the loop."""

    def __init__(self, config: KinesisSpoutConfig, client: Any, store: CheckpointStore,
                 task_index: int, num_tasks: int, clock: Callable[[], float],
                 submit: Submit = run_inline,
                 on_error: Callable[[BaseException], None] | None = None) -> None:
        self.config = config
        self.client = client
        self.store = store
        self.task_index = task_index
        self.num_tasks = num_tasks
        self.clock = clock
        self.submit = submit
        self.on_error = on_error
        self.shards: list[ShardInfo] = []
        self.states: dict[str, LocalShardState] = {}
        self._active: list[LocalShardState] = []
        self._rr = 0
        self._lock = threading.Lock()
        self._watched: list[ShardInfo] | None = None
        self._published: list[ShardInfo] | None = None
        self._refreshing = False
        self._starting = False
        self._start_again = False
        now = clock()
        self._next_refresh = now + config.shard_list_refresh_ms / 1000.0
        self._next_checkpoint = now + config.checkpoint_interval_ms / 1000.0
        self.checkpoint_failures = 0

    def _error(self, exc: BaseException) -> None:
        if self.on_error is not None:
            self.on_error(exc)
        else:
            log.error("stream %s: %s", self.config.stream, exc)

    # --- shard list --------------------------------------------------------------------------
    def prepare(self) -> list[ShardInfo]:
        """Blocking (off the loop, before ``begin``): the stream's shards from ListShards (errors
        name the stream), stored when this is task 0; starts watching the stored list."""
        shards = list_shards(self.client, self.config)
        if not shards:
            raise KinesisStreamError(f"stream {self.config.stream!r} has no shards")
        if self.task_index == 0 and self._write_list(shards):
            self._published = list(shards)
        self.store.watch_shard_list(self.on_shard_list)
        return shards

    def begin(self, shards: list[ShardInfo]) -> None:
        """Adopt the shard list ``prepare`` returned and start the owned shards (on the loop)."""
        self.apply(shards)

    def start(self) -> None:
        """``prepare`` then ``begin`` on the caller's thread (tools and tests)."""
        self.begin(self.prepare())

    def _write_list(self, shards: list[ShardInfo]) -> bool:
        try:
            self.store.write_shard_list(shards)
        except CheckpointUnavailable as exc:
            log.warning("stream %s: cannot store the shard list now (%s); retrying on the next "
                        "refresh", self.config.stream, exc)
            return False
        return True

    def _refresh(self) -> None:
        """Task 0: ListShards and the write of a changed list, off the loop."""
        published = self._published

        def job() -> tuple[list[ShardInfo], bool]:
            shards = list_shards(self.client, self.config)
            return shards, shards == published or self._write_list(shards)

        self._refreshing = True
        self.submit(job, self._refreshed)

    def _refreshed(self, result: Any, error: BaseException | None) -> None:
        self._refreshing = False
        if error is not None:
            log.warning("%s; keeping the current shard list", error)
            self._error(error)
            return
        shards, stored = result
        if not shards:
            return
        if stored:
            self._published = list(shards)
        self.apply(shards)

    def on_shard_list(self, shards: list[ShardInfo] | None) -> None:
        """The stored shard list changed (any thread); applied on the next ``tick``."""
        if shards:
            with self._lock:
                self._watched = shards

    def apply(self, shards: list[ShardInfo]) -> None:
        """Adopt ``shards`` as the shard list: drop shards no longer owned (after storing their
        checkpoint), add newly owned ones and start those that may start."""
        if shards == self.shards:
            return
        self.shards = list(shards)
        mine = {s.shard_id: s for s in assign(shards, self.task_index, self.num_tasks)}
        for shard_id in [s for s in self.states if s not in mine]:
            state = self.states.pop(shard_id)
            self._store(state)
            if state.getter is not None:
                state.getter.close()
            log.info("stream %s: shard %s is no longer read by task index %d", self.config.stream,
                     shard_id, self.task_index)
        for shard_id, info in mine.items():
            if shard_id in self.states:
                self.states[shard_id].info = info
            else:
                self.states[shard_id] = LocalShardState(info)
        self._refresh_active()
        self._start_ready()

    def _start_ready(self) -> None:
        """Start every owned shard that is not started and whose parents are finished: the
        checkpoint reads run off the loop (one such job at a time), the shards open on it."""
        if self._starting:
            self._start_again = True
            return
        waiting = [s.info for s in self.states.values() if s.tracker is None and not s.done]
        if not waiting:
            return
        listed = {s.shard_id for s in self.shards}
        local_done = {shard_id: s.done for shard_id, s in self.states.items()}
        store = self.store

        def parents_done(info: ShardInfo) -> bool:
            for parent in info.parents:
                if parent not in listed:
                    continue  # expired from the stream: nothing left to read
                if parent in local_done:
                    if not local_done[parent]:
                        return False
                    continue
                stored = store.read(parent)
                if stored is None or not stored.shard_end:
                    return False
            return True

        def job() -> tuple[list[tuple[str, Checkpoint | None]], list[BaseException]]:
            ready: list[tuple[str, Checkpoint | None]] = []
            errors: list[BaseException] = []
            for info in waiting:
                try:
                    if parents_done(info):
                        ready.append((info.shard_id, store.read(info.shard_id)))
                except CheckpointUnavailable as exc:
                    log.warning("shard %s: cannot read checkpoints now (%s)", info.shard_id, exc)
                except Exception as exc:  # noqa: BLE001 - a corrupt node: reported, retried
                    errors.append(exc)
            return ready, errors

        self._starting = True
        self.submit(job, self._ready)

    def _ready(self, result: Any, error: BaseException | None) -> None:
        self._starting = False
        if error is not None:
            self._error(error)
        else:
            ready, errors = result
            for shard_id, stored in ready:
                state = self.states.get(shard_id)
                if state is not None and state.tracker is None and not state.done:
                    self._open(state, stored)
            for exc in errors:
                self._error(exc)
            self._refresh_active()
        if self._start_again:
            self._start_again = False
            self._start_ready()

    def _refresh_active(self) -> None:
        self._active = [s for s in self.states.values() if s.getter is not None and not s.done]
        self._rr = 0

    def _open(self, state: LocalShardState, stored: Checkpoint | None) -> None:
        state.stored = stored
        if stored is not None and stored.shard_end:
            state.done = True
            return
        seq = stored.sequence_number if stored is not None else None
        listed = {s.shard_id for s in self.shards}
        if seq is not None:
            start = Position.after(seq)
        elif any(p in listed for p in state.info.parents):
            start = Position("TRIM_HORIZON")
        else:
            start = Position.initial(self.config)
        getter = ShardGetter(self.client, self.config, state.shard_id, start)
        state.getter = BufferedGetter(getter, self.config.records_per_get,
                                      self.config.empty_record_sleep_ms / 1000.0, self.clock,
                                      self.submit, self.on_error)
        state.tracker = InflightRecordTracker(state.shard_id, self.config.max_retries, seq)
        log.info("shard %s: reading from %s%s", state.shard_id, start.kind,
                 f" {seq}" if seq is not None else "")

    # --- the loop ----------------------------------------------------------------------------
    def tick(self) -> None:
        """Run what is due: the shard-list refresh (task 0), a watched list change, checkpoints."""
        now = self.clock()
        if now >= self._next_refresh:
            self._next_refresh = now + self.config.shard_list_refresh_ms / 1000.0
            if self.task_index == 0 and not self._refreshing:
                self._refresh()
        if self._watched is not None:
            with self._lock:
                watched, self._watched = self._watched, None
            if watched is not None:
                self.apply(watched)
        if now >= self._next_checkpoint:
            self._next_checkpoint = now + self.config.checkpoint_interval_ms / 1000.0
            self.flush()

    def next_state(self) -> LocalShardState | None:
        """The next active shard in round-robin order, or None when none is active."""
        active = self._active
        if not active:
            return None
        self._rr = (self._rr + 1) % len(active)
        return active[self._rr]

    @property
    def active_count(self) -> int:
        return len(self._active)

    def shard_finished(self, state: LocalShardState) -> None:
        """A shard handed out its last record; store its end once every record is done."""
        cp = state.current()
        if cp is not None and cp.shard_end:
            self._store(state)

    # --- checkpoints -------------------------------------------------------------------------
    def _store(self, state: LocalShardState) -> None:
        """Write the shard's checkpoint off the loop when it moved (one write per shard in
        flight; the next one goes on the next interval)."""
        cp = state.current()
        if cp is None or state.writing or not cp.ahead_of(state.stored):
            return
        state.writing = True
        store, shard_id = self.store, state.shard_id

        def written(_result: Any, error: BaseException | None) -> None:
            state.writing = False
            if error is not None:
                self.checkpoint_failures += 1
                if isinstance(error, CheckpointUnavailable):
                    log.warning("shard %s: checkpoint %s not stored (%s); retrying later",
                                shard_id, cp.sequence_number, error)
                else:
                    self._error(error)
                return
            self._stored(state, cp)

        self.submit(lambda: store.write(shard_id, cp), written)

    def _stored(self, state: LocalShardState, cp: Checkpoint) -> None:
        if cp.ahead_of(state.stored):
            state.stored = cp
        if cp.shard_end and not state.done:
            state.done = True
            log.info("shard %s: read to its end and checkpointed", state.shard_id)
            self._refresh_active()
            self._start_ready()

    def flush(self) -> None:
        """Store every changed checkpoint (forwards only, off the loop) and start shards that
        may start."""
        for state in list(self.states.values()):
            self._store(state)
        if any(s.tracker is None and not s.done for s in self.states.values()):
            self._start_ready()

    def flush_now(self) -> None:
        """Store every changed checkpoint now, on the caller's thread (``close``: the loop is
        stopping and results of background jobs would not come back). Forwards only."""
        for state in list(self.states.values()):
            cp = state.current()
            if cp is None or not cp.ahead_of(state.stored):
                continue
            try:
                self.store.write(state.shard_id, cp)
            except Exception as exc:  # noqa: BLE001 - closing: log and go on with the others
                self.checkpoint_failures += 1
                log.warning("shard %s: checkpoint %s not stored on close (%s)", state.shard_id,
                            cp.sequence_number, exc)
                continue
            state.stored = cp

    def close(self) -> None:
        """Stop every getter (requests not started are cancelled)."""
        for state in self.states.values():
            if state.getter is not None:
                state.getter.close()

    def metrics(self) -> dict[str, dict[str, Any]]:
        """Per owned shard: checkpoint (acked prefix), stored checkpoint, in-flight count,
        retries, counted-out records, MillisBehindLatest, records buffered and whether it is
        finished."""
        out: dict[str, dict[str, Any]] = {}
        for shard_id, s in self.states.items():
            t, g = s.tracker, s.getter
            # "is not None": a tracker holding no record has length 0, so it tests false
            out[shard_id] = {
                "checkpoint": t.checkpoint if t is not None
                else (s.stored.sequence_number if s.stored else None),
                "stored": s.stored.sequence_number if s.stored else None,
                "in_flight": t.in_flight if t is not None else 0,
                "retries": t.retries if t is not None else 0,
                "counted_out": t.counted_out if t is not None else 0,
                "millis_behind_latest": g.getter.millis_behind if g is not None else None,
                "buffered": g.buffered if g is not None else 0,
                "finished": s.done}
        return out
