"""Anchoring on the columnar path: a ``ColumnBatch`` is one node of the tuple tree, like a
``Tuple`` (the same tree ids: ``root``/``edge`` for one tree, ``anchors`` for several, and an
``ack_val`` its children's edges are XORed into).

``tree_nodes`` picks the anchors that are in a tree (tuples and batches); ``anchor_batch`` makes
a new batch their child (a fresh edge per anchor). ``stand_ins`` lets the task's per-tuple
methods anchor to batches: each batch is replaced by a ``Tuple`` carrying its tree ids, and
``fold`` adds what was XORed into each stand-in to its batch. This module is compiled with the
rest of the tuple path.
"""

from __future__ import annotations

from typing import Any, cast

from stormpy.topology._columns import ColumnBatch
from stormpy.topology._tuple import Tuple
from stormpy.worker.edges import EdgeIds

__all__ = ["StandIns", "anchor_batch", "fold", "stand_ins", "tree_nodes"]

#: (batch, the Tuple standing in for it) pairs of one emit
StandIns = list[tuple[ColumnBatch, Tuple]]


def tree_nodes(anchors: Any, n_ackers: int, component: str) -> list[Any]:
    """The anchors (None, a Tuple or ColumnBatch, or a list or tuple of them) that are in a
    tree; none when acking is off (``n_ackers`` 0). TypeError naming anything else."""
    if anchors is None or not n_ackers:
        return []
    at = type(anchors)
    items: list[Any] = [anchors] if at is Tuple or at is ColumnBatch else \
        _anchor_list(anchors, component)
    nodes: list[Any] = []
    for a in items:  # Tuples and ColumnBatches carry the same tree ids
        if type(a) is not Tuple and type(a) is not ColumnBatch:
            raise TypeError(f"component {component!r}: an anchor must be a Tuple "
                            f"or a ColumnBatch, got {type(a).__name__}")
        if a.root or a.anchors:
            nodes.append(a)
    return nodes


def stand_ins(anchors: Any, component: str) -> tuple[Any, StandIns]:
    """``anchors`` with every batch replaced by a Tuple standing in for it (its tree ids,
    ``ack_val`` 0), for the task's per-tuple methods; ``fold`` then adds what they XORed into
    each stand-in to its batch."""
    pairs: StandIns = []
    if type(anchors) is ColumnBatch:
        return _stand_in(cast(ColumnBatch, anchors), pairs), pairs
    out: list[Any] = []
    for a in _anchor_list(anchors, component):
        out.append(_stand_in(cast(ColumnBatch, a), pairs)
                   if type(a) is ColumnBatch else a)
    return out, pairs


def fold(pairs: StandIns) -> None:
    """Add what was XORed into each stand-in (``stand_ins``) to its batch."""
    for batch, tup in pairs:
        batch.ack_val ^= tup.ack_val


def anchor_batch(batch: ColumnBatch, nodes: list[Any], edges: EdgeIds) -> None:
    """Make ``batch`` a child of every node of ``nodes`` (tuples and batches in a tree): per node
    a fresh edge from ``edges``, XORed into that node's ``ack_val`` and into the batch's tree id
    of each of the node's roots (as ``BoltTask._send`` does for a tuple, and Storm: two nodes of
    one tree add two different edges to it, so the tree waits for the batch)."""
    if len(nodes) == 1 and type(nodes[0]) is Tuple and cast(Tuple, nodes[0]).root:
        edge = edges.next()  # 62-bit: see edges.py
        tup = cast(Tuple, nodes[0])  # the common case: one anchor in one tree
        tup.ack_val ^= edge
        batch.root = tup.root
        batch.edge = edge
        return
    amap: dict[int, int] = {}
    for node in nodes:  # Tuples and ColumnBatches carry the same tree ids
        edge = edges.next()
        node.ack_val ^= edge
        if node.root:
            amap[node.root] = amap.get(node.root, 0) ^ edge
        elif node.anchors:
            for r in node.anchors:
                amap[r] = amap.get(r, 0) ^ edge
    if len(amap) == 1:
        ((root, tree_edge),) = amap.items()
        batch.root = root
        batch.edge = tree_edge
    elif amap:
        batch.anchors = amap


def _stand_in(batch: ColumnBatch, pairs: StandIns) -> Tuple:
    """A Tuple with ``batch``'s tree ids (``ack_val`` 0), remembered in ``pairs``."""
    tup = Tuple(None, batch.stream, batch.task, batch.component, batch.fields, batch.root,
                batch.edge, batch.anchors)
    pairs.append((batch, tup))
    return tup


def _anchor_list(anchors: Any, component: str) -> list[Any]:
    if type(anchors) is list or type(anchors) is tuple:
        return list(anchors)
    raise TypeError(f"component {component!r}: anchors must be a Tuple, a ColumnBatch or a list "
                    f"of them, got {type(anchors).__name__}")
