"""Merging and joining Trident streams within a batch: what ``TridentTopology.merge``, ``join``
and ``multi_join`` add to the topology's graph (Storm's ``TridentTopology.merge``/``join``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stormpy.topology._errors import InvalidTopologyError
from stormpy.trident._graph import JOIN, MERGE, Graph
from stormpy.trident._stream import Stream, field_names

__all__ = ["join_streams", "merge_streams"]


def merge_streams(graph: Graph, streams: Sequence[Stream], fields: list[str] | None) -> Stream:
    """The union of ``streams`` (same number of fields; named after the first, or ``fields``)."""
    if len(streams) < 2:
        raise InvalidTopologyError("merge needs at least two streams")
    width = len(streams[0].fields)
    if any(len(s.fields) != width for s in streams):
        raise InvalidTopologyError(f"merge: streams have different numbers of fields "
                                   f"{[s.fields for s in streams]}")
    names = fields or streams[0].fields
    node = graph.add(MERGE, names, [s._node.id for s in streams], spec={"op": "merge"})
    return Stream(graph, node)


def join_streams(graph: Graph, streams: Sequence[Stream], keys: Sequence[Sequence[str]],
                 out_fields: Sequence[str]) -> Stream:
    """The inner join of ``streams`` within each batch on ``keys`` (one list per stream)."""
    if len(streams) < 2 or len(streams) != len(keys):
        raise InvalidTopologyError("join needs two or more streams and one key list per stream")
    sides: list[dict[str, Any]] = []
    width: int | None = None
    for s, k in zip(streams, keys, strict=True):
        names = field_names(k, "join")
        if width is not None and len(names) != width:
            raise InvalidTopologyError("join: key lists of different lengths")
        width = len(names)
        rest = [f for f in s.fields if f not in names]
        sides.append({"keys": s._idx(names, "join"), "rest": s._idx(rest, "join"),
                      "key_fields": names})
    total = (width or 0) + sum(len(side["rest"]) for side in sides)
    outs = field_names(out_fields, "join")
    if len(outs) != total:
        raise InvalidTopologyError(f"join: {len(outs)} output fields given, the join has {total} "
                                   "(the keys, then the other fields of each stream in order)")
    node = graph.add(JOIN, outs, [s._node.id for s in streams], spec={"op": "join",
                                                                       "sides": sides})
    return Stream(graph, node)

