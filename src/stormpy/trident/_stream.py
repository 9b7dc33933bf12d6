"""Stream, GroupedStream, ChainedAggregatorDeclarer and TridentState: the operations users chain
(Storm's ``trident.Stream`` and friends). Each call adds a node to the topology's graph and
returns a new stream; nothing runs until ``TridentTopology.build()``. Merging and joining
streams (``TridentTopology.merge``/``join``) are in :mod:`stormpy.trident._combine`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stormpy.topology._errors import InvalidTopologyError
from stormpy.trident._graph import OP, PARTITION, Graph, Node
from stormpy.trident._operation import (
    Aggregator,
    CombinerAggregator,
    Filter,
    ReducerAggregator,
    op_doc,
)
from stormpy.trident._state import QueryFunction, StateFactory, StateUpdater

__all__ = ["ChainedAggregatorDeclarer", "GroupedStream", "Stream", "TridentState",
           "field_names"]

AGGREGATORS = (CombinerAggregator, ReducerAggregator, Aggregator)


def field_names(fields: Sequence[str] | str | None, what: str) -> list[str]:
    """``fields`` as a list of names (one name, a sequence, or None for none);
    InvalidTopologyError naming ``what`` when one is not a non-empty string."""
    if fields is None:
        return []
    if isinstance(fields, str):
        return [fields]
    names = list(fields)
    if not all(isinstance(f, str) and f for f in names):
        raise InvalidTopologyError(f"{what}: field names are non-empty strings, got {names}")
    return names


class Stream:
    """A stream of batches with named fields (``fields``)."""

    def __init__(self, graph: Graph, node: Node) -> None:
        self._graph = graph
        self._node = node

    @property
    def fields(self) -> list[str]:
        return list(self._node.fields)

    # -- helpers --------------------------------------------------------------------------------
    def _idx(self, fields: Sequence[str], what: str) -> list[int]:
        missing = [f for f in fields if f not in self._node.fields]
        if missing:
            raise InvalidTopologyError(f"{what}: no field(s) {missing} in the stream (fields: "
                                       f"{self._node.fields})")
        return [self._node.fields.index(f) for f in fields]

    def _op(self, fields: list[str], spec: dict[str, Any], **extra: Any) -> Stream:
        parent = self._node
        if parent.kind == PARTITION and self._graph[parent.parents[0]].kind == PARTITION:
            raise InvalidTopologyError("two repartitions in a row")
        node = self._graph.add(OP, fields, [parent.id], spec=spec, **extra)
        return Stream(self._graph, node)

    def _partition(self, grouping: list[Any]) -> Stream:
        source = self
        if self._node.kind == PARTITION:  # two repartitions in a row: the last one wins
            source = Stream(self._graph, self._graph[self._node.parents[0]])
        node = self._graph.add(PARTITION, source.fields, [source._node.id], grouping=grouping)
        return Stream(self._graph, node)

    def _check_new(self, fields: list[str], what: str) -> None:
        clash = [f for f in fields if f in self._node.fields]
        if clash:
            raise InvalidTopologyError(f"{what}: output field(s) {clash} already in the stream")

    # -- per-tuple operations (fused, no repartitioning) ----------------------------------------
    def each(self, input_fields: Sequence[str] | str | None, function: Any,
             function_fields: Sequence[str] | str | None = None) -> Stream:
        """Storm's ``each``: ``function`` (a Function, or a module-level function returning the
        value lists to append) sees ``input_fields``; its outputs are appended as
        ``function_fields``. With a Filter (and no function fields) it filters."""
        inputs = field_names(input_fields, "each") if input_fields is not None else self.fields
        outs = field_names(function_fields, "each")
        if isinstance(function, Filter) and not outs:
            return self.filter(inputs, function)
        self._check_new(outs, "each")
        return self._op(self.fields + outs, {"op": "each", "fn": op_doc(function, "each"),
                                             "in": self._idx(inputs, "each"),
                                             "in_fields": inputs})

    def filter(self, *args: Any) -> Stream:
        """``filter(filter)`` or ``filter(input_fields, filter)``: keep tuples for which the
        Filter's ``is_keep`` (or the function) is true."""
        if len(args) == 1:
            inputs, fn = self.fields, args[0]
        elif len(args) == 2:
            inputs, fn = field_names(args[0], "filter"), args[1]
        else:
            raise InvalidTopologyError("filter takes (filter) or (input_fields, filter)")
        return self._op(self.fields, {"op": "filter", "fn": op_doc(fn, "filter"),
                                      "in": self._idx(inputs, "filter"), "in_fields": inputs})

    def map(self, function: Any, output_fields: Sequence[str] | str | None = None) -> Stream:
        """One tuple in, one out: ``function`` returns the new values (``output_fields``, by
        default the stream's fields)."""
        outs = field_names(output_fields, "map") or self.fields
        return self._op(outs, {"op": "map", "fn": op_doc(function, "map")})

    def flat_map(self, function: Any, output_fields: Sequence[str] | str | None = None) -> Stream:
        """One tuple in, any number out: ``function`` returns an iterable of value lists."""
        outs = field_names(output_fields, "flat_map") or self.fields
        return self._op(outs, {"op": "flat_map", "fn": op_doc(function, "flat_map")})

    def peek(self, consumer: Any) -> Stream:
        """``consumer`` sees each tuple, which passes unchanged."""
        return self._op(self.fields, {"op": "peek", "fn": op_doc(consumer, "peek")})

    def project(self, fields: Sequence[str] | str) -> Stream:
        """Keep only ``fields`` (in that order)."""
        names = field_names(fields, "project")
        return self._op(names, {"op": "project", "in": self._idx(names, "project")})

    # -- repartitioning -------------------------------------------------------------------------
    def partition_by(self, fields: Sequence[str] | str) -> Stream:
        """Tuples with equal ``fields`` go to the same partition (fields grouping)."""
        names = field_names(fields, "partition_by")
        self._idx(names, "partition_by")
        return self._partition(["fields", names])

    def shuffle(self) -> Stream:
        return self._partition(["shuffle"])

    def global_(self) -> Stream:
        """Every tuple to one partition (Storm's ``global``)."""
        return self._partition(["global"])

    def batch_global(self) -> Stream:
        """All tuples of a batch to one partition (here: the same one for every batch)."""
        return self._partition(["global"])

    def broadcast(self) -> Stream:
        """Every tuple to every partition."""
        return self._partition(["all"])

    def identity_partition(self) -> Stream:
        return self._partition(["shuffle"])

    def parallelism_hint(self, n: int) -> Stream:
        """The number of partitions (tasks) of the operations since the last repartitioning
        (the largest hint among them wins)."""
        if not isinstance(n, int) or n < 1:
            raise InvalidTopologyError(f"parallelism_hint must be an integer >= 1, got {n!r}")
        self._node.parallelism = n
        return self

    def name(self, name: str) -> Stream:
        """Name the operations since the last repartitioning (part of the bolt's component id)."""
        if not isinstance(name, str) or not name or not name.replace("-", "").replace(
                "_", "").isalnum():
            raise InvalidTopologyError(f"name must be letters, digits, '-' and '_', got {name!r}")
        self._node.name = name
        return self

    def apply_assembly(self, assembly: Any) -> Stream:
        """``assembly.apply(self)`` (e.g. ``FirstN``)."""
        result: Stream = assembly.apply(self)
        return result

    # -- aggregation ----------------------------------------------------------------------------
    def _agg_args(self, args: tuple[Any, ...], what: str) -> tuple[list[str], Any, list[str]]:
        if len(args) == 2:
            inputs, agg, outs = self.fields, args[0], field_names(args[1], what)
        elif len(args) == 3:
            inputs, agg, outs = field_names(args[0], what), args[1], field_names(args[2], what)
        else:
            raise InvalidTopologyError(f"{what} takes (aggregator, function_fields) or "
                                       "(input_fields, aggregator, function_fields)")
        if not isinstance(agg, AGGREGATORS):
            raise InvalidTopologyError(f"{what}: {agg!r:.60} is not a CombinerAggregator, "
                                       "ReducerAggregator or Aggregator")
        self._idx(inputs, what)
        return inputs, agg, outs

    def _agg_spec(self, inputs: list[str], agg: Any, mode: str = "full") -> dict[str, Any]:
        return {"fn": op_doc(agg, "aggregator"), "in": self._idx(inputs, "aggregate"),
                "in_fields": inputs, "mode": mode}

    def partition_aggregate(self, *args: Any) -> Stream:
        """Aggregate each partition's part of the batch: ``(input_fields, aggregator,
        function_fields)``; outputs ``function_fields``."""
        inputs, agg, outs = self._agg_args(args, "partition_aggregate")
        return self._op(outs, {"op": "agg", "aggs": [self._agg_spec(inputs, agg)]})

    def aggregate(self, *args: Any) -> Stream:
        """Aggregate the whole batch (one result set per batch, even an empty one); a combiner is
        combined per partition first."""
        inputs, agg, outs = self._agg_args(args, "aggregate")
        if isinstance(agg, CombinerAggregator):
            partial = self._op(["$partial"], {"op": "agg", "aggs": [
                self._agg_spec(inputs, agg, "partial")]})
            merged = partial.global_()
            return merged._op(outs, {"op": "agg", "aggs": [
                merged._agg_spec(["$partial"], agg, "combine")]})
        return self.global_().partition_aggregate(inputs, agg, outs)

    def group_by(self, fields: Sequence[str] | str) -> GroupedStream:
        """Group by ``fields`` for ``aggregate``/``persistent_aggregate``/``chained_agg``."""
        names = field_names(fields, "group_by")
        self._idx(names, "group_by")
        return GroupedStream(self, names)

    def chained_agg(self) -> ChainedAggregatorDeclarer:
        """Several aggregators over the same batch, their outputs side by side."""
        return ChainedAggregatorDeclarer(self, None)

    # -- state ----------------------------------------------------------------------------------
    def _persist(self, factory: StateFactory, fields: list[str], spec: dict[str, Any]
                 ) -> TridentState:
        if not isinstance(factory, StateFactory):
            raise InvalidTopologyError(f"state factory: {factory!r:.60} is not a StateFactory")
        spec["state"] = factory.doc()
        node = self._graph.add(OP, fields, [self._node.id], spec=spec, committer=True)
        return TridentState(self._graph, node, factory)

    def persistent_aggregate(self, factory: StateFactory, *args: Any) -> TridentState:
        """Aggregate every batch into one value kept in the state (under the key ``[]``):
        ``(factory, [input_fields,] combiner_or_reducer, function_fields)``."""
        return _persistent_aggregate(self, [], factory, args)

    def partition_persist(self, factory: StateFactory, input_fields: Sequence[str] | str,
                          updater: StateUpdater,
                          function_fields: Sequence[str] | str | None = None) -> TridentState:
        """Each partition's part of the batch goes to ``updater.update_state`` in the commit
        phase; its emits (``function_fields``) are the new-values stream."""
        inputs = field_names(input_fields, "partition_persist")
        if not isinstance(updater, StateUpdater):
            raise InvalidTopologyError(f"partition_persist: {updater!r:.60} is not a "
                                       "StateUpdater")
        return self._persist(factory, field_names(function_fields, "partition_persist"), {
            "op": "persist_updater", "fn": op_doc(updater, "partition_persist"),
            "in": self._idx(inputs, "partition_persist"), "in_fields": inputs})

    def state_query(self, state: TridentState, input_fields: Sequence[str] | str | None,
                    function: QueryFunction, function_fields: Sequence[str] | str) -> Stream:
        """Look up the batch's tuples in ``state`` (``MapGet``, ``TupleCollectionGet``); the
        function's outputs are appended as ``function_fields``."""
        if not isinstance(state, TridentState):
            raise InvalidTopologyError("state_query: the first argument is the TridentState "
                                       "returned by persistent_aggregate/partition_persist")
        if not isinstance(function, QueryFunction):
            raise InvalidTopologyError(f"state_query: {function!r:.60} is not a QueryFunction")
        if state.factory.backend in ("parquet", "external"):
            raise InvalidTopologyError(f"state_query reads a map state; the {state.factory.backend} "
                                       f"state {state.factory.name!r} is written, not queried")
        inputs = field_names(input_fields, "state_query")
        outs = field_names(function_fields, "state_query")
        self._check_new(outs, "state_query")
        return self._op(self.fields + outs, {
            "op": "query", "fn": op_doc(function, "state_query"), "state": state.factory.doc(),
            "in": self._idx(inputs, "state_query"), "in_fields": inputs})


def _persistent_aggregate(stream: Stream, group: list[str], factory: StateFactory,
                          args: tuple[Any, ...]) -> TridentState:
    inputs, agg, outs = stream._agg_args(args, "persistent_aggregate")
    if isinstance(factory, StateFactory) and factory.backend in ("parquet", "external"):
        raise InvalidTopologyError(f"persistent_aggregate needs a map state; a {factory.backend} "
                                   "state (Parquet, a Kafka sink...) takes partition_persist with "
                                   "its updater")
    if len(outs) != 1:
        raise InvalidTopologyError(f"persistent_aggregate: one function field (the stored value), "
                                   f"got {outs}")
    if isinstance(agg, CombinerAggregator):
        spec = stream._agg_spec(inputs, agg, "partial")
        partial = stream._op([*group, "$partial"], {
            "op": "agg", "aggs": [spec], "group": stream._idx(group, "group_by") if group
            else None})
        moved = partial.partition_by(group) if group else partial.global_()
        inputs = ["$partial"]
    elif isinstance(agg, ReducerAggregator):
        moved = stream.partition_by(group) if group else stream.global_()
    else:
        raise InvalidTopologyError("persistent_aggregate takes a CombinerAggregator or a "
                                   "ReducerAggregator (as in Storm), not an Aggregator")
    return moved._persist(factory, [*group, *outs], {
        "op": "persist_agg", "fn": op_doc(agg, "persistent_aggregate"),
        "in": moved._idx(inputs, "persistent_aggregate"), "in_fields": inputs,
        "group": moved._idx(group, "group_by")})


class GroupedStream:
    """A stream grouped by ``group_fields``: aggregations run per group (Storm's
    ``GroupedStream``)."""

    def __init__(self, stream: Stream, group_fields: list[str]) -> None:
        self.stream = stream
        self.group_fields = group_fields

    def aggregate(self, *args: Any) -> Stream:
        """Per group over the whole batch: outputs ``[*group_fields, *function_fields]``."""
        inputs, agg, outs = self.stream._agg_args(args, "aggregate")
        group = self.group_fields
        if isinstance(agg, CombinerAggregator):
            partial = self.stream._op([*group, "$partial"], {"op": "agg", "group": self.stream._idx(
                group, "group_by"), "aggs": [self.stream._agg_spec(inputs, agg, "partial")]})
            moved = partial.partition_by(group)
            return moved._op([*group, *outs], {"op": "agg", "group": moved._idx(group, "group_by"),
                                               "aggs": [moved._agg_spec(["$partial"], agg,
                                                                        "combine")]})
        return self.stream.partition_by(group).group_by(group).partition_aggregate(inputs, agg,
                                                                                  outs)

    def partition_aggregate(self, *args: Any) -> Stream:
        """Per group within each partition."""
        inputs, agg, outs = self.stream._agg_args(args, "partition_aggregate")
        self.stream._check_new([o for o in outs if o in self.group_fields], "partition_aggregate")
        return self.stream._op([*self.group_fields, *outs], {
            "op": "agg", "group": self.stream._idx(self.group_fields, "group_by"),
            "aggs": [self.stream._agg_spec(inputs, agg)]})

    def persistent_aggregate(self, factory: StateFactory, *args: Any) -> TridentState:
        """Per group into the state (key: the group's values); Storm's grouped
        ``persistentAggregate``."""
        return _persistent_aggregate(self.stream, self.group_fields, factory, args)

    def chained_agg(self) -> ChainedAggregatorDeclarer:
        return ChainedAggregatorDeclarer(self.stream, self.group_fields)


class ChainedAggregatorDeclarer:
    """``.partition_aggregate(...)``/``.aggregate(...)`` any number of times, then
    ``chain_end()``: one node computing every aggregator over the same tuples, outputs side by
    side (``[*group, *outputs of each]``)."""

    def __init__(self, stream: Stream, group: list[str] | None) -> None:
        self.stream = stream
        self.group = group
        self.aggs: list[tuple[list[str], Any, list[str]]] = []
        self.whole_batch: bool | None = None

    def _add(self, args: tuple[Any, ...], whole_batch: bool) -> ChainedAggregatorDeclarer:
        if self.whole_batch is not None and self.whole_batch != whole_batch:
            raise InvalidTopologyError("chained_agg: do not mix aggregate and "
                                       "partition_aggregate in one chain")
        self.whole_batch = whole_batch
        self.aggs.append(self.stream._agg_args(args, "chained_agg"))
        return self

    def aggregate(self, *args: Any) -> ChainedAggregatorDeclarer:
        return self._add(args, True)

    def partition_aggregate(self, *args: Any) -> ChainedAggregatorDeclarer:
        return self._add(args, False)

    def chain_end(self) -> Stream:
        if not self.aggs:
            raise InvalidTopologyError("chained_agg: no aggregator before chain_end()")
        stream = self.stream
        if self.whole_batch:
            stream = stream.partition_by(self.group) if self.group else stream.global_()
        outs = [o for _, _, fields in self.aggs for o in fields]
        group = self.group or []
        return stream._op([*group, *outs], {
            "op": "agg", "group": stream._idx(group, "group_by") if self.group else None,
            "aggs": [stream._agg_spec(inputs, agg) for inputs, agg, _ in self.aggs]})


class TridentState:
    """A persisted state: query it with ``Stream.state_query``; ``new_values_stream()`` is the
    stream of the values each batch wrote."""

    def __init__(self, graph: Graph, node: Node, factory: StateFactory) -> None:
        self._graph = graph
        self._node = node
        self.factory = factory

    def new_values_stream(self) -> Stream:
        return Stream(self._graph, self._node)

    def parallelism_hint(self, n: int) -> TridentState:
        Stream(self._graph, self._node).parallelism_hint(n)
        return self
