"""Transfer: the outbound side of a worker (Storm's worker transfer) and its backpressure.

Tuples for tasks of other workers are written, in wire form (``messaging/codec.py``), to their
peer's ``Outbox`` by the ``TaskWriter`` of their destination task: the tuples of one stream and
source task in a row share one run record (values as columns; when tracked, the state their
edges were drawn from and their roots run-length coded: no id per tuple); an
outbox is packed with msgpack into ONE frame (one C call, by the worker's own Packer) and sent
when it holds ``topology.transfer.batch.size`` tuples or at the end of the loop round (with
``topology.batch.flush.interval.millis``: once that long has passed since a round end found it
waiting). A columnar batch (``ColumnBatch``) is ONE wire record in the outbox, its values
packed as columns. A frame the
transport cannot take is kept, in order, and retried every round: nothing is dropped, and the
spouts are held back until it is sent. ``backpressured()`` — a refused frame waits, or a local
task queue holds ``topology.executor.receive.buffer.size`` tuples (a queued batch counts its
tuples) — tells the loop to skip the
spouts' round. The figures of that (:meth:`Transfer.stats`, and ``queue_full`` per local task) are
counted off the tuple path: per refused frame and per round, with a clock read only when the
backpressure starts or ends. Values were
checked at emit, so packing fails only on a runtime bug; the error then names the component and
stream of the first tuple msgpack refused.

Runs on the loop thread.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Container, Mapping, Sequence
from time import perf_counter
from typing import Any

from stormpy.messaging.codec import FrameEncoder, WireTuple
from stormpy.messaging.transport import Transport
from stormpy.topology._columns import ColumnBatch
from stormpy.topology._errors import EmitError
from stormpy.topology._tuple import SYSTEM_COMPONENT, Tuple
from stormpy.worker.dispatch import Dispatch
from stormpy.worker.edges import EdgeIds
from stormpy.worker.errors import caused_by


class Transfer:
    """Per-peer outboxes and refused frames of one worker; installs the delivery table entries of
    tasks in other workers."""

    def __init__(self, transport: Transport, dispatch: Dispatch, batch_size: int,
                 task_component: Mapping[int, str], queues: Sequence[deque[Tuple]],
                 queue_cap: int, clock: Callable[[], float] = perf_counter,
                 queue_tasks: Sequence[int] = (), flush_interval: float = 0.0) -> None:
        """``queues``: the local task queues, full at ``queue_cap`` tuples; ``clock`` (seconds)
        times the backpressure and the flush interval; ``queue_tasks``: the task id of each
        queue, whose queued batch rows (``Dispatch.queued_rows``) count too (none counted when
        not given); ``flush_interval`` (seconds, ``topology.batch.flush.interval.millis``): 0
        sends every outbox at the end of every round, more holds an outbox that is not full
        until that long after the first round end that found it waiting."""
        self.transport = transport
        self._queues = list(queues)
        #: per queue: the dispatch's queued rows of its task, or -1 (not counted)
        self._queue_tasks = list(queue_tasks) if queue_tasks else [-1] * len(self._queues)
        self._rows = dispatch.queued_rows
        self._queue_cap = max(1, queue_cap)
        self._dispatch = dispatch
        self._batch_size = max(1, batch_size)
        self._task_component = task_component
        self._outbox: dict[str, Outbox] = {}
        self._blocked: dict[str, deque[bytes]] = {}
        self._encoder = FrameEncoder()
        self._clock = clock
        #: per queue of ``queues``: rounds the spouts were held because it was full
        self.queue_full = [0] * len(self._queues)
        #: frames the transport refused (each retry that fails counts again)
        self.frames_refused = 0
        #: frames waiting for their peer (refused, or queued behind a refused one)
        self.frames_held = 0
        #: rounds the spouts were held, and the seconds the backpressure lasted (closed spells)
        self.backpressure_rounds = 0
        self.backpressure_secs = 0.0
        self._held_since = -1.0
        self._flush_interval = max(0.0, flush_interval)

    def route(self, task_peers: Mapping[int, str], local_tasks: Container[int]) -> None:
        """Point every task not in ``local_tasks`` at its peer in ``task_peers`` (undeliverable
        when it has none). Call on the loop thread (after a reassignment too)."""
        deliver = self._dispatch.deliver
        deliver_many = self._dispatch.deliver_many
        undeliverable = self._dispatch.undeliverable
        undeliverable_many = self._dispatch.undeliverable_many
        deliver_batch = self._dispatch.deliver_batch
        undeliverable_batch = self._dispatch.undeliverable_batch
        edges_for = self._dispatch.edges_for
        for task in range(len(deliver)):
            edges_for[task] = self._dispatch.edges
            if task not in local_tasks:
                deliver[task] = undeliverable
                deliver_many[task] = undeliverable_many
                deliver_batch[task] = undeliverable_batch
        for task, peer in task_peers.items():
            if task in local_tasks:
                continue
            box = self._outbox.get(peer)
            if box is None:
                box = self._outbox[peer] = Outbox(peer, self._batch_size, self._flush_peer)
            writer = TaskWriter(box, task)
            edges_for[task] = writer.edges
            deliver[task] = writer.put
            deliver_many[task] = writer.put_many
            deliver_batch[task] = writer.put_batch

    def _flush_peer(self, box: Outbox) -> None:
        records = box.records
        try:
            frame = self._encoder.encode(records)
        except (TypeError, ValueError, OverflowError) as exc:
            raise caused_by(self._unpackable(records, exc), None)  # noqa: B904
        box.clear()
        peer = box.peer
        blocked = self._blocked.get(peer)
        if blocked or not self.transport.send(peer, frame):
            if not blocked:
                self.frames_refused += 1
            self._blocked.setdefault(peer, deque()).append(frame)
            self.frames_held += 1

    def _unpackable(self, box: list[WireTuple], exc: Exception) -> EmitError:
        """Name the component and stream of the first tuple msgpack refused."""
        for item in box:  # a tuple, a run or a batch record (their columns)
            dest, stream, src = item[0], item[1], item[2]
            values: Any = item[5] if len(item) == 6 else item[6]
            anchors: Any = item[4] if len(item) == 6 else item[5]
            try:
                self._encoder.encode([values, anchors])
            except (TypeError, ValueError, OverflowError) as err:
                component = self._task_component.get(src, SYSTEM_COMPONENT)
                return EmitError(f"component {component!r}, stream {stream!r}: cannot serialise "
                                 f"values for task {dest}: {err}")
        return EmitError(f"cannot serialise a batch of tuples: {exc}")

    def flush(self) -> None:
        """Retry refused frames in order, then pack and send every non-empty outbox (with a
        flush interval: those waiting for it since an earlier round)."""
        for peer, blocked in self._blocked.items():
            while blocked:
                if not self.transport.send(peer, blocked[0]):
                    self.frames_refused += 1
                    break
                blocked.popleft()
                self.frames_held -= 1
        interval = self._flush_interval
        if interval > 0.0:  # one clock read per round, none per tuple
            now = self._clock()
            for box in self._outbox.values():
                if box.records:
                    if box.since < 0.0:
                        box.since = now
                    elif now - box.since >= interval:
                        self._flush_peer(box)
            return
        for box in self._outbox.values():
            if box.records:
                self._flush_peer(box)

    def backpressured(self) -> bool:
        """True while a local task queue is full or a frame the transport refused is waiting
        (spouts pause)."""
        cap = self._queue_cap
        queues = self._queues
        tasks = self._queue_tasks
        rows = self._rows
        held = False
        for i in range(len(queues)):
            t = tasks[i]
            if len(queues[i]) + (rows[t] if t >= 0 else 0) >= cap:
                self.queue_full[i] += 1
                held = True
                break
        if not held:
            held = self.frames_held > 0
        if held:
            self.backpressure_rounds += 1
            if self._held_since < 0.0:
                self._held_since = self._clock()
        elif self._held_since >= 0.0:
            self.backpressure_secs += self._clock() - self._held_since
            self._held_since = -1.0
        return held

    def stats(self) -> dict[str, float]:
        """``frames_refused``, ``frames_held`` (now), ``backpressure_rounds`` and
        ``backpressure_secs`` (closed spells; a spell still going counts when it ends)."""
        return {"frames_refused": float(self.frames_refused),
                "frames_held": float(self.frames_held),
                "backpressure_rounds": float(self.backpressure_rounds),
                "backpressure_secs": self.backpressure_secs}


class Outbox:
    """The records waiting for one peer worker (``messaging/codec.py``); ``size`` counts the
    tuples in them (a columnar batch record counts one). At ``batch_size`` the writer calls
    ``flush(self)``, which packs and sends them as one frame and calls ``clear``."""

    def __init__(self, peer: str, batch_size: int, flush: Callable[[Outbox], None]) -> None:
        self.peer = peer
        self.records: list[WireTuple] = []
        self.size = 0
        self.batch_size = max(1, batch_size)
        self.flush = flush
        #: the writers whose run record is in ``records`` (closed when it is sent)
        self.open: list[TaskWriter] = []
        #: the first round end that found it waiting (-1: none; with a flush interval)
        self.since = -1.0

    def clear(self) -> None:
        self.records = []
        self.size = 0
        self.since = -1.0
        for writer in self.open:
            writer.record = None
        self.open = []


class TaskWriter:
    """Appends what is delivered to one task of another worker to its peer's ``Outbox``.

    A tuple of a user stream (declared fields) joins the task's open run when it has the run's
    stream, source task, value count and tracking, else opens a new run (``[dest, stream, src,
    n, ids, columns]``, ``messaging/codec.py``); any other tuple (several trees, the acker's
    streams) is a single record and a batch a batch record, both closing the run. So the
    records of one (source task, destination task) pair stay in emit order.

    The edges of tracked tuples for this task are drawn from the writer's own generator,
    ``edges`` (installed as ``Dispatch.edges_for[dest]``), by the emit that delivers them here
    right after; ``replay`` follows it draw for draw. A tracked tuple whose edge is
    ``replay``'s next draw joins (or opens, naming ``replay``'s state before that draw) a run
    whose ids are that state and its roots run-length coded: its edges travel as nothing, and
    the receiver draws them again. A tracked tuple whose edge is not (drawn elsewhere) goes
    as a single record with its ids, and ``replay`` takes ``edges``' state again. Which edges
    compress never changes what the acker sees: a run names only edges its state reproduces."""

    def __init__(self, box: Outbox, dest: int) -> None:
        self.box = box
        self.dest = dest
        #: the open run (None: none): its record, columns, ids (None: untracked), stream,
        #: source task and value count
        self.record: list[Any] | None = None
        self.columns: list[list[Any]] = []
        self.ids: list[int] | None = None
        self.stream = ""
        self.src = -1
        self.k = 0
        #: the root of the open run's last tuple (its count is the last item of ``ids``)
        self.root = 0
        #: the edges of tracked tuples for ``dest`` (drawn by the emits), and its replay
        self.edges = EdgeIds()
        self.replay = EdgeIds(0)
        self.replay.follow(self.edges)

    def put(self, tup: Tuple) -> None:
        box = self.box
        record = self.record
        values = tup.values
        root = tup.root
        if tup.anchors is not None or tup.fields is None:
            self._single(tup)
        elif record is not None and tup.task == self.src and tup.stream == self.stream and \
                len(values) == self.k and (root != 0) == (self.ids is not None):
            ids = self.ids
            if ids is not None:
                if self.replay.next() != tup.edge:  # not drawn here: its ids travel with it
                    self._single(tup)
                    box.size += 1
                    if box.size >= box.batch_size:
                        box.flush(box)
                    return
                if root == self.root:
                    ids[-1] += 1
                else:
                    ids.append(root)
                    ids.append(1)
                    self.root = root
            record[3] += 1
            columns = self.columns
            for j in range(self.k):
                columns[j].append(values[j])
        else:
            self._open(tup)
        box.size += 1
        if box.size >= box.batch_size:
            box.flush(box)

    def _single(self, tup: Tuple) -> None:
        """``tup`` as a single record; the open run closes and ``replay`` takes ``edges``'
        state (the single tuple's edge, if any, was its last draw)."""
        self.box.records.append([self.dest, tup.stream, tup.task, tup.root, tup.edge,
                                 tup.anchors, tup.values])
        self.record = None
        self.replay.follow(self.edges)

    def _open(self, tup: Tuple) -> None:
        box = self.box
        values = tup.values
        root = tup.root
        ids: list[int] | None = None
        if root != 0:
            replay = self.replay
            x = replay.x
            c = replay.c
            if replay.next() != tup.edge:
                self._single(tup)
                return
            ids = [int(x), int(c), root, 1]
        k = len(values)
        columns: list[list[Any]] = [[values[j]] for j in range(k)]
        record: list[Any] = [self.dest, tup.stream, tup.task, 1, ids, columns]
        box.records.append(record)
        self.record = record
        self.columns = columns
        self.ids = ids
        self.stream = tup.stream
        self.src = tup.task
        self.k = k
        self.root = root
        box.open.append(self)

    def put_many(self, tuples: list[Tuple]) -> None:
        for tup in tuples:
            self.put(tup)

    def put_batch(self, b: ColumnBatch) -> None:
        """A columnar batch: ONE record, ``[dest, stream, src, root, edge, anchors, columns,
        n]``."""
        box = self.box
        box.records.append([self.dest, b.stream, b.task, b.root, b.edge, b.anchors,
                            b.columns(), b.n])
        self.record = None
        box.size += 1
        if box.size >= box.batch_size:
            box.flush(box)
