"""Inbound: the transport boundary of a worker — frames from peers turned into queued Tuples.

Worker ports are unauthenticated (as in Storm by default), so a frame may hold anything. The
contract: a frame never stops the worker. Each wire tuple (``[dest_task, stream, src_task, root,
edge, anchors, values]``, see ``messaging/codec.py``) is checked in the one pass that queues it,
against a table built once from the topology (``accepts``):

* ``dest_task`` is a task of this worker;
* ``stream`` is one the destination takes from ``src_task``: a bolt the streams it subscribes to
  from ``src_task``'s component, an acker task the acker streams from any task (or -1, a
  worker's aggregated acks), a spout task the acker's replies from acker tasks;
* ``values`` is a list of the stream's declared length (``__ack_ack`` to an acker: ``root, xor``
  pairs; a reply to a spout: one int root; the acker core checks its values itself);
* ``root`` and ``edge`` are ints, ``anchors`` nil or a map of int → int.

A run (``[dest_task, stream, src_task, n, ids, columns]``: n tuples of one destination, stream
and source, see ``messaging/codec.py``) is checked once for its destination, its stream (one
with declared fields the destination takes from that source) and its shape: ``n`` a positive
int, one column of ``n`` values per declared field, ``ids`` nil or a list ``[x, c, root1,
k1, root2, k2, ...]``: an edge id generator's state (two ints within ``edges.STATE_LIMITS``)
and int roots with positive int counts adding up to ``n`` (else the whole run is dropped,
counted once as a "malformed run"). The tuples are queued in order, the i-th tracked one with
its segment's root and the i-th draw from the state as its edge (``edges.EdgeIds.restart``).

A columnar batch record (``[dest_task, stream, src_task, root, edge, anchors, columns, n]``) is
checked the same way, and besides: its destination takes batches (a columnar bolt's task),
``n`` is a positive int and ``columns`` holds one list of ``n`` values per declared field. It is
queued as one ``ColumnBatch`` and counts its ``n`` tuples.

Anything else is dropped and counted per reason in ``rejected`` (an undecodable frame counts
once); the rest of the frame is still delivered. Drops are logged at most once per
``LOG_INTERVAL`` seconds, with what was wrong, the count since the last line and the sender
(the peer address the transport reports, and the source task the tuple claims).
Runs on the loop thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, cast

from stormpy.acker.streams import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET_TIMEOUT
from stormpy.messaging.codec import RUN_ITEMS, decode_frame
from stormpy.topology._columns import ColumnBatch
from stormpy.topology._fields import Fields
from stormpy.topology._layout import ACKER_COMPONENT, TaskLayout
from stormpy.topology._spec import SPOUT, TopologySpec
from stormpy.topology._tuple import SYSTEM_COMPONENT, Tuple
from stormpy.worker.edges import STATE_LIMITS, EdgeIds

__all__ = ["LOG_INTERVAL", "Inbound", "accepts", "wire_tuples"]

log = logging.getLogger("stormpy.worker")

#: Seconds between two log lines about dropped input.
LOG_INTERVAL: Final = 10.0
#: Value counts with a meaning beyond "exactly n": root/xor pairs; one int root.
PAIRS: Final = -1
ONE_ROOT: Final = -2

#: what a destination takes from one source task: stream → (value count, source component, fields)
Streams = dict[str, tuple[int, str, Fields | None]]


def accepts(spec: TopologySpec, layout: TaskLayout,
            local_tasks: Sequence[int]) -> dict[int, dict[int, Streams]]:
    """dest task → src task → what it takes (see the module docstring)."""
    comp_of = layout.task_component
    ackers = layout.acker_tasks
    out: dict[int, dict[int, Streams]] = {}
    acker_in: dict[int, Streams] = {}
    for src in [-1, *sorted(comp_of)]:
        comp = comp_of.get(src, SYSTEM_COMPONENT)
        acker_in[src] = {ACK_INIT: (3, comp, None), ACK_ACK: (PAIRS, comp, None),
                         ACK_FAIL: (1, comp, None), ACK_RESET_TIMEOUT: (1, comp, None)}
    spout_in: dict[int, Streams] = {
        a: {s: (ONE_ROOT, ACKER_COMPONENT, None) for s in (ACK_ACK, ACK_FAIL, ACK_RESET_TIMEOUT)}
        for a in ackers}
    bolt_in: dict[str, dict[int, Streams]] = {}
    for dest in local_tasks:
        component = comp_of[dest]
        if component == ACKER_COMPONENT:
            out[dest] = acker_in
        elif spec.components[component].kind == SPOUT:
            out[dest] = spout_in
        else:
            table = bolt_in.get(component)
            if table is None:
                table = bolt_in[component] = {}
                for inp in spec.components[component].inputs:
                    declared = spec.components[inp.component].output_stream(inp.stream)
                    if declared is None:  # validate() refuses it; nothing to accept
                        continue
                    fields = declared.fields
                    for src in layout.component_tasks.get(inp.component, []):
                        table.setdefault(src, {})[inp.stream] = (len(fields), inp.component, fields)
            out[dest] = table
    return out


class Inbound:
    """Decodes, checks and queues inbound frames for the tasks in ``appenders`` (task → its
    queue's ``append``). ``sender(frame)`` names where a frame came from ("" if unknown)."""

    def __init__(self, table: dict[int, dict[int, Streams]],
                 appenders: Mapping[int, Callable[[Tuple], None]],
                 sender: Callable[[Any], str], worker: str,
                 batch_appenders: Mapping[int, Callable[[ColumnBatch], None]] | None = None
                 ) -> None:
        """``batch_appenders``: task → where a columnar batch for it goes (the tasks of
        columnar bolts; batches for any other task are dropped)."""
        self._table = table
        self._appenders = dict(appenders)
        self._batch_appenders = dict(batch_appenders or {})
        self._sender = sender
        self._worker = worker
        #: reason → tuples (or undecodable frames) dropped since the worker started
        self.rejected: dict[str, int] = {}
        self._unlogged = 0
        self._next_log = 0.0
        #: draws a tracked run's edges again from the state it names
        self._replay = EdgeIds(0)

    @property
    def rejected_total(self) -> int:
        return sum(self.rejected.values())

    def take(self, frames: list[Any]) -> int:
        """Queue the valid tuples of ``frames``; returns how many were queued."""
        n = 0
        table = self._table
        appenders = self._appenders
        for frame in frames:
            try:
                # a list, or ValueError naming what the frame is. Any, not list[WireTuple]:
                # compiled code would raise TypeError on an item that is not a list
                batch: Any = decode_frame(frame)
            except (ValueError, TypeError) as exc:
                self._reject("undecodable frame", str(exc), frame, None)
                continue
            for item in batch:
                try:
                    if type(item) is list and len(item) == 6:
                        n += self._take_run(item, frame)
                        continue
                    if type(item) is list and len(item) == 8:
                        n += self._take_batch(item, frame)
                        continue
                    if type(item) is not list or len(item) != 7:
                        self._reject("not a wire tuple", "not an array of 6, 7 or 8 items", frame, None)
                        continue
                    dest, stream, src, root, edge, anchors, values = item
                    by_src = table.get(dest)
                    if by_src is None:
                        self._reject("unknown destination task", f"task {dest!r}", frame, src)
                        continue
                    streams = by_src.get(src)
                    want = streams.get(stream) if streams is not None else None
                    if want is None:
                        self._reject("unexpected stream", f"stream {stream!r} from task {src!r} to "
                                     f"task {dest}", frame, src)
                        continue
                    count = want[0]
                    if type(values) is not list or not (
                            len(values) == count if count >= 0 else
                            (len(values) >= 2 and len(values) % 2 == 0) if count == PAIRS else
                            (len(values) == 1 and type(values[0]) is int)):
                        self._reject("wrong values", f"stream {stream!r} to task {dest} expects "
                                     f"{_expected(count)}, got {_short(values)}", frame, src)
                        continue
                    if type(root) is not int or type(edge) is not int or (
                            anchors is not None and not _int_map(anchors)):
                        self._reject("bad tuple ids", f"root {_short(root)}, edge {_short(edge)}, "
                                     f"anchors {_short(anchors)}", frame, src)
                        continue
                    appenders[dest](Tuple(values, stream, src, want[1], want[2], root, edge,
                                          anchors))
                    n += 1
                except (TypeError, ValueError) as exc:  # an unhashable key, an odd type
                    self._reject("malformed tuple", f"{type(exc).__name__}: {exc}", frame, None)
        return n

    def _take_run(self, item: list[Any], frame: Any) -> int:
        """Queue the tuples of a run record (see the module docstring); returns how many were
        queued. Its destination, stream, source, count and shape are checked once, each
        tuple's ids on their own."""
        dest, stream, src, n, ids, columns = item
        by_src = self._table.get(dest)
        if by_src is None:
            self._reject("unknown destination task", f"task {dest!r}", frame, src)
            return 0
        streams = by_src.get(src)
        want = streams.get(stream) if streams is not None else None
        if want is None or want[0] < 0:
            self._reject("unexpected stream", f"stream {stream!r} from task {src!r} to "
                         f"task {dest}", frame, src)
            return 0
        count: int = want[0]
        if type(n) is not int or n <= 0 or type(columns) is not list or \
                len(columns) != count or not all(type(c) is list and len(c) == n
                                                 for c in columns) or \
                (ids is not None and not _run_ids(ids, n)):
            self._reject("malformed run", f"stream {stream!r} to task {dest} expects n > 0, "
                         f"{_expected(count)} as columns of n values and nil or [x, c, root, "
                         f"count, ...] ids (an id state, roots with counts adding up to n), got "
                         f"n {_short(n)}, columns {_short(columns)}, ids {_short(ids)}",
                         frame, src)
            return 0
        component: str = want[1]
        fields = want[2]
        append = self._appenders[dest]
        if ids is None:  # untracked: no ids to check
            if count == 1:
                column = columns[0]
                for i in range(n):
                    append(Tuple([column[i]], stream, src, component, fields, 0, 0, None))
            else:
                for i in range(n):
                    append(Tuple([c[i] for c in columns], stream, src, component, fields, 0, 0,
                                 None))
            return cast(int, n)
        replay = self._replay
        replay.restart(ids[0], ids[1])
        i = 0
        for s in range(2, len(ids), 2):
            root: int = ids[s]
            for _ in range(ids[s + 1]):
                append(Tuple([c[i] for c in columns] if count != 1 else [columns[0][i]],
                             stream, src, component, fields, root, replay.next(), None))
                i += 1
        return cast(int, n)

    def _take_batch(self, item: list[Any], frame: Any) -> int:
        """Queue a columnar batch record (see the module docstring); returns its tuples, or 0
        when it is dropped."""
        dest, stream, src, root, edge, anchors, columns, n = item
        by_src = self._table.get(dest)
        put = self._batch_appenders.get(dest)
        if by_src is None or put is None:
            self._reject("unknown destination task", f"batch for task {dest!r}", frame, src)
            return 0
        streams = by_src.get(src)
        want = streams.get(stream) if streams is not None else None
        if want is None or want[0] < 0:
            self._reject("unexpected stream", f"stream {stream!r} from task {src!r} to task "
                         f"{dest}", frame, src)
            return 0
        if type(n) is not int or n <= 0 or type(columns) is not list or \
                len(columns) != want[0] or \
                not all(type(c) is list and len(c) == n for c in columns):
            self._reject("wrong values", f"batch on stream {stream!r} to task {dest} expects "
                         f"{want[0]} column(s) of n > 0 values, got n {_short(n)}, columns "
                         f"{_short(columns)}", frame, src)
            return 0
        if type(root) is not int or type(edge) is not int or (
                anchors is not None and not _int_map(anchors)):
            self._reject("bad tuple ids", f"root {_short(root)}, edge {_short(edge)}, "
                         f"anchors {_short(anchors)}", frame, src)
            return 0
        put(ColumnBatch(None, stream, src, want[1], want[2], root, edge, anchors, columns, n))
        return cast(int, n)

    def _reject(self, reason: str, detail: str, frame: Any, src: Any) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1
        self._unlogged += 1
        now = time.monotonic()
        if now < self._next_log:
            return
        self._next_log = now + LOG_INTERVAL
        try:
            peer = self._sender(frame) or "an unknown peer"
        except Exception:  # noqa: BLE001 - naming the sender must not fail the worker
            peer = "an unknown peer"
        claimed = f", claiming source task {_short(src)}" if src is not None else ""
        log.warning("worker %s: dropped %d invalid inbound tuple(s)/frame(s) since the last report "
                    "(%d in all); latest from %s%s: %s: %s", self._worker, self._unlogged,
                    self.rejected_total, peer, claimed, reason, detail)
        self._unlogged = 0


def _run_ids(ids: Any, n: int) -> bool:
    """Whether ``ids`` are a tracked run's ids for ``n`` tuples (see the module docstring)."""
    if type(ids) is not list or len(ids) < 4 or len(ids) % 2:
        return False
    x = ids[0]
    c = ids[1]
    if type(x) is not int or type(c) is not int or not (
            0 <= x <= STATE_LIMITS[0] and 0 <= c <= STATE_LIMITS[1]):
        return False
    total = 0
    for s in range(2, len(ids), 2):
        k = ids[s + 1]
        if type(ids[s]) is not int or type(k) is not int or k <= 0:
            return False
        total += k
    return total == n


def _int_map(anchors: Any) -> bool:
    if type(anchors) is not dict:
        return False
    return all(type(k) is int and type(v) is int for k, v in anchors.items())


def _expected(count: int) -> str:
    if count == PAIRS:
        return "an even number (>= 2) of values"
    if count == ONE_ROOT:
        return "one int root"
    return f"{count} value(s)"


def _short(value: Any) -> str:
    """``repr`` cut to 80 characters (the values come from anyone)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def wire_tuples(records: list[Any]) -> list[list[Any]]:
    """``records`` (a decoded frame, ``messaging/codec.py``) with every run expanded into its
    single-tuple records (``[dest_task, stream, src_task, root, edge, None, values]``, a tracked
    run's edges drawn again from its state), in order; other records as they are. For tests and
    inspection: the receiver reads runs as they come."""
    out: list[list[Any]] = []
    for record in records:
        if len(record) == RUN_ITEMS:
            dest, stream, src, n, ids, columns = record
            if ids is None:
                for i in range(n):
                    out.append([dest, stream, src, 0, 0, None, [c[i] for c in columns]])
                continue
            replay = EdgeIds(0)
            replay.restart(ids[0], ids[1])
            i = 0
            for s in range(2, len(ids), 2):
                for _ in range(ids[s + 1]):
                    out.append([dest, stream, src, ids[s], replay.next(), None,
                                [c[i] for c in columns]])
                    i += 1
        else:
            out.append(record)
    return out
