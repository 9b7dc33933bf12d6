"""The graph a Trident topology is described as: one node per stream operation (Storm's
``trident.planner.Node`` and its kinds). The planner turns it into bolts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stormpy.topology._errors import InvalidTopologyError

SPOUT, OP, PARTITION, MERGE, JOIN = "spout", "op", "partition", "merge", "join"


@dataclass
class Node:
    """``kind``: spout, op (a fused operation), partition (a repartitioning: ``grouping`` is
    ``["shuffle"]``, ``["fields", names]``, ``["global"]`` or ``["all"]``), merge or join.
    ``fields``: the stream's fields after the node; ``spec``: the run-time description."""

    id: int
    kind: str
    fields: list[str]
    parents: list[int]
    spec: dict[str, Any] = field(default_factory=dict)
    grouping: list[Any] | None = None
    parallelism: int | None = None
    name: str | None = None
    committer: bool = False
    spout: Any = None
    txid: str | None = None


class Graph:
    """The nodes of one TridentTopology, in creation order (a topological order)."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []

    def add(self, kind: str, fields: list[str], parents: list[int], **extra: Any) -> Node:
        if len(set(fields)) != len(fields):
            raise InvalidTopologyError(f"duplicate field names in {fields}")
        node = Node(len(self.nodes), kind, list(fields), list(parents), **extra)
        self.nodes.append(node)
        return node

    def __getitem__(self, node_id: int) -> Node:
        return self.nodes[node_id]
