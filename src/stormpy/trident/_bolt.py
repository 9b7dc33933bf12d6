"""SubtopologyBolt: one bolt of a Trident topology running a fused chain (a tree) of operations
(Storm's ``SubtopologyBolt``), as a batch bolt of the transactional layer.

The commit of a state that offers ``commit_later(txid)`` (a blocking remote commit) runs with
``finish_in_background`` after the batch's operations: off the executor loop, the batch finished
on the task only when it returned (it fails the batch when it raises); other states commit on
the loop in ``finish_batch``.

Its keyword arguments are the plan's data: ``nodes`` (in plan order: ``id``, ``parents`` in this
bolt, ``in_fields``, ``spec``), ``entries`` (``"<component>|<stream>"`` → ``[[node id, side]]``:
which nodes get the tuples of an input stream) and ``exits`` (node id → the stream its output
leaves on). User operations and states are built once per task and reused by its batches.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from stormpy.topology._context import TopologyContext
from stormpy.topology._streams import Stream
from stormpy.topology._tuple import Tuple
from stormpy.transactional._api import BatchBolt, BatchOutputCollector
from stormpy.transactional._attempt import TransactionAttempt
from stormpy.trident._operation import Operation, op_from_doc
from stormpy.trident._processors import Aggregate, Each, Join, Persist, Processor, Query
from stormpy.trident._state import MapState, StateFactory

__all__ = ["SubtopologyBolt", "TridentCommitterBolt"]


class _TaskResources:
    """A task's operations (prepared once) and open states."""

    def __init__(self, nodes: list[dict[str, Any]], conf: Mapping[str, Any],
                 context: TopologyContext) -> None:
        self.ops: dict[int, list[Any]] = {}
        self.states: dict[int, MapState] = {}
        for node in nodes:
            spec = node["spec"]
            docs = [a["fn"] for a in spec["aggs"]] if "aggs" in spec else \
                [spec["fn"]] if "fn" in spec else []
            ops = [op_from_doc(d) for d in docs]
            for op in ops:
                if isinstance(op, Operation):
                    op.prepare(conf, context)
            self.ops[node["id"]] = ops
            if "state" in spec:
                self.states[node["id"]] = StateFactory.from_doc(spec["state"]).make_state(conf,
                                                                                         context)

    def close(self) -> None:
        for ops in self.ops.values():
            for op in ops:
                if isinstance(op, Operation):
                    op.cleanup()
        for state in self.states.values():
            state.close()


_lock = threading.Lock()
_tasks: dict[tuple[str, str, int, int], _TaskResources] = {}


def _task_key(context: TopologyContext) -> tuple[str, str, int, int]:
    return (context.topology_id, context.component_id, context.task_id, id(context))


class SubtopologyBolt(BatchBolt):
    """Runs the plan's operations of one bolt for one batch on one task."""

    def __init__(self, nodes: list[dict[str, Any]], entries: Mapping[str, list[list[int]]],
                 exits: Mapping[str, str], outputs_fields: Mapping[str, list[str]]) -> None:
        self.nodes = nodes
        self.entries = entries
        self.exits = {int(k): v for k, v in exits.items()}

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        return {stream: Stream(["tx", *fields])
                for stream, fields in kwargs["outputs_fields"].items()}

    @classmethod
    def cleanup_task(cls, conf: Mapping[str, Any], context: TopologyContext) -> None:
        with _lock:
            resources = _tasks.pop(_task_key(context), None)
        if resources is not None:
            resources.close()

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: BatchOutputCollector, id: TransactionAttempt) -> None:  # noqa: A002
        super().prepare(conf, context, collector, id)
        key = _task_key(context)
        with _lock:
            resources = _tasks.get(key)
        if resources is None:
            resources = _TaskResources(self.nodes, conf, context)
            with _lock:
                _tasks[key] = resources
        self.procs: dict[int, Processor] = {}
        self.order: list[Processor] = []
        for node in self.nodes:
            proc = self._processor(node, resources)
            self.procs[node["id"]] = proc
            self.order.append(proc)
            for parent in node["parents"]:
                self.procs[parent].targets.append(proc.execute)
            stream = self.exits.get(node["id"])
            if stream is not None:
                proc.targets.append(self._emitter(stream))
        self.routes: dict[tuple[str, str], list[tuple[Processor, int]]] = {}
        for source, targets in self.entries.items():
            # the last '|': a component id may hold one (a spout's comes from its txid), the
            # planner's stream names ("default", "s<node>") never do
            component, _, stream = source.rpartition("|")
            self.routes[(component, stream)] = [(self.procs[n], side) for n, side in targets]

    def _processor(self, node: dict[str, Any], resources: _TaskResources) -> Processor:
        spec, nid = node["spec"], node["id"]
        ops = resources.ops[nid]
        kind = spec["op"]
        if kind == "agg":
            return Aggregate(spec, ops, node["in_fields"], self.id.transaction_id)
        if kind in ("persist_agg", "persist_updater"):
            return Persist(spec, ops, node["in_fields"], resources.states[nid],
                           self.id.transaction_id)
        if kind == "query":
            return Query(spec, ops, node["in_fields"], resources.states[nid])
        if kind == "join":
            return Join(spec, ops, node["in_fields"])
        if kind == "merge":
            return Processor(spec, ops, node["in_fields"])
        return Each(spec, ops, node["in_fields"])

    def _emitter(self, stream: str) -> Any:
        attempt = self.id
        emit = self.collector.emit

        def out(values: list[Any]) -> None:
            emit([attempt, *values], stream)
        return out

    def execute(self, tup: Tuple) -> None:
        values = list(tup.values[1:])
        for proc, side in self.routes[(tup.component, tup.stream)]:
            proc.execute(values, side)

    def finish_batch(self) -> None:
        for proc in self.order:
            proc.finish()
        commits = [proc.background for proc in self.order
                   if isinstance(proc, Persist) and proc.background is not None]
        if commits:
            def commit_all() -> None:
                for commit in commits:
                    commit()
            # a state's blocking commit (a remote transaction) runs off the executor loop: the
            # batch completes on this task once it returned, and fails if it raised
            self.collector.finish_in_background(commit_all)


class TridentCommitterBolt(SubtopologyBolt):
    """A SubtopologyBolt holding a state update: its ``finish_batch`` runs in the commit phase."""

    committer = True
