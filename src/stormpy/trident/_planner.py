"""The planner: the graph's nodes → bolts (Storm's ``TridentTopology.build`` and its
``SubtopologyBolt`` grouping). Consecutive operations with no repartitioning between them run
fused in one bolt; a repartitioning (``partition_by``, ``shuffle``, ``global_``, ``broadcast``)
becomes the grouping into the next bolt; a merge or join starts a bolt fed by each parent.
Each new_stream's spout gets its own transactional coordinator (its ``txid``); bolts fed by two
spouts are refused."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stormpy.topology._errors import InvalidTopologyError
from stormpy.topology._spec import TopologySpec
from stormpy.transactional._builder import TransactionalTopologyBuilder
from stormpy.trident._bolt import SubtopologyBolt, TridentCommitterBolt
from stormpy.trident._graph import JOIN, MERGE, OP, PARTITION, SPOUT, Graph, Node

DEFAULT_STREAM = "default"


@dataclass
class Entry:
    """An input of a bolt: ``node`` (side ``side``) gets ``source``'s ``parent`` node output
    through ``grouping``."""

    node: int
    side: int
    parent: int
    grouping: list[Any]


@dataclass
class BoltPlan:
    index: int
    nodes: list[Node] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)
    spout: int | None = None
    hints: list[int] = field(default_factory=list)

    @property
    def parallelism(self) -> int:
        """The largest hint of its nodes and of the repartitionings into it (default 1)."""
        return max([n.parallelism or 1 for n in self.nodes] + self.hints)

    @property
    def committer(self) -> bool:
        return any(n.committer for n in self.nodes)

    @property
    def component_id(self) -> str:
        names = [n.name for n in self.nodes if n.name]
        return f"b-{self.index}" + ("-" + "-".join(names) if names else "")


def plan_bolts(graph: Graph) -> tuple[list[BoltPlan], dict[int, BoltPlan]]:
    """The bolts, and the bolt of every op/merge/join node."""
    bolts: list[BoltPlan] = []
    bolt_of: dict[int, BoltPlan] = {}

    def source(bolt: BoltPlan, parent_id: int, default: list[Any]) -> tuple[int, list[Any]]:
        parent = graph[parent_id]
        if parent.kind == PARTITION:
            if parent.parallelism:
                bolt.hints.append(parent.parallelism)
            return parent.parents[0], list(parent.grouping or default)
        return parent_id, default

    for node in graph.nodes:
        if node.kind in (SPOUT, PARTITION):
            continue
        parent = graph[node.parents[0]]
        if node.kind == OP and parent.kind in (OP, MERGE, JOIN):
            bolt = bolt_of[parent.id]
            bolt.nodes.append(node)
            bolt_of[node.id] = bolt
            continue
        bolt = BoltPlan(len(bolts))
        bolts.append(bolt)
        bolt.nodes.append(node)
        bolt_of[node.id] = bolt
        for side, pid in enumerate(node.parents):
            default: list[Any] = ["shuffle"]
            if node.kind == JOIN:
                default = ["fields", node.spec["sides"][side]["key_fields"]]
            src, grouping = source(bolt, pid, default)
            if node.kind == JOIN:
                grouping = default  # a join always gathers equal keys
            bolt.entries.append(Entry(node.id, side if node.kind == JOIN else 0, src, grouping))
    return bolts, bolt_of


def _spout_of(graph: Graph, bolts: list[BoltPlan], bolt_of: dict[int, BoltPlan]) -> None:
    for bolt in bolts:  # in creation order: parents' bolts come first
        spouts = set()
        for entry in bolt.entries:
            parent = graph[entry.parent]
            spouts.add(parent.id if parent.kind == SPOUT else bolt_of[parent.id].spout)
        if len(spouts) != 1:
            raise InvalidTopologyError(
                f"bolt {bolt.component_id}: merges or joins streams of different new_stream "
                "spouts; each spout has its own transaction ids, so streams of one spout only")
        bolt.spout = spouts.pop()


def build_spec(graph: Graph) -> TopologySpec:
    """The ordinary topology running ``graph``; InvalidTopologyError naming what is wrong."""
    spouts = [n for n in graph.nodes if n.kind == SPOUT]
    if not spouts:
        raise InvalidTopologyError("a Trident topology needs a new_stream")
    bolts, bolt_of = plan_bolts(graph)
    _spout_of(graph, bolts, bolt_of)
    spout_ids = {n.id: n.name or f"spout-{n.txid}" for n in spouts}
    exits: dict[int, str] = {}

    def stream_of(parent: int) -> tuple[str, str]:
        node = graph[parent]
        if node.kind == SPOUT:
            return spout_ids[parent], DEFAULT_STREAM
        exits[parent] = f"s{parent}"
        return bolt_of[parent].component_id, f"s{parent}"

    wiring = []
    for bolt in bolts:
        wiring.append([(entry, *stream_of(entry.parent)) for entry in bolt.entries])
    specs = []
    for spout in spouts:
        builder = TransactionalTopologyBuilder(spout.txid or "", spout_ids[spout.id], spout.spout,
                                               spout.parallelism or 1)
        for bolt, inputs in zip(bolts, wiring, strict=True):
            if bolt.spout != spout.id:
                continue
            in_bolt = {n.id for n in bolt.nodes}
            nodes = [{"id": n.id, "parents": [p for p in n.parents if p in in_bolt],
                      "in_fields": graph[n.parents[0]].fields, "spec": n.spec}
                     for n in bolt.nodes]
            entries: dict[str, list[list[int]]] = {}
            for entry, component, stream in inputs:
                entries.setdefault(f"{component}|{stream}", []).append([entry.node, entry.side])
            bolt_exits = {str(n.id): exits[n.id] for n in bolt.nodes if n.id in exits}
            outputs = {exits[n.id]: n.fields for n in bolt.nodes if n.id in exits}
            cls = TridentCommitterBolt if bolt.committer else SubtopologyBolt
            declarer = builder.set_bolt(bolt.component_id, cls, bolt.parallelism, kwargs={
                "nodes": nodes, "entries": entries, "exits": bolt_exits,
                "outputs_fields": outputs})
            seen = set()
            for entry, component, stream in inputs:
                if (component, stream) in seen:
                    continue
                seen.add((component, stream))
                kind = entry.grouping[0]
                if kind == "fields":
                    declarer.fields_grouping(component, entry.grouping[1], stream)
                elif kind == "global":
                    declarer.global_grouping(component, stream)
                elif kind == "all":
                    declarer.all_grouping(component, stream)
                else:
                    declarer.shuffle_grouping(component, stream)
        specs.append(builder.create_topology())
    spec = specs[0]
    for other in specs[1:]:
        clash = set(spec.components) & set(other.components)
        if clash:
            raise InvalidTopologyError(f"component ids used twice: {sorted(clash)}")
        spec.components.update(other.components)
    spec.validate()
    return spec
