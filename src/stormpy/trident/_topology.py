"""TridentTopology: where Trident streams start (``new_stream``), are merged and joined, and
which ``build()`` turns into an ordinary topology (Storm's ``TridentTopology``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stormpy.topology._errors import InvalidTopologyError
from stormpy.topology._spec import TopologySpec
from stormpy.transactional._api import SPOUT_TYPES
from stormpy.trident._combine import join_streams, merge_streams
from stormpy.trident._graph import SPOUT, Graph
from stormpy.trident._planner import build_spec
from stormpy.trident._stream import Stream

__all__ = ["TridentTopology"]


class TridentTopology:
    """Describe streams with ``new_stream`` and their operations; ``build()`` returns the
    ``TopologySpec`` (run it with ``LocalCluster.submit_topology``, ``stormpy local`` or
    ``stormpy jar``). Give the topology ``topology.max.spout.pending`` (batches in flight)."""

    def __init__(self) -> None:
        self._graph = Graph()
        self._txids: set[str] = set()

    def new_stream(self, txid: str, spout: Any) -> Stream:
        """A stream of ``spout``'s batches (a transactional, partitioned transactional or opaque
        partitioned transactional spout instance, e.g. ``FixedBatchSpout``); ``txid`` names its
        transactional state: keep it across redeploys to continue where it stopped."""
        if not isinstance(txid, str) or not txid or "/" in txid:
            raise InvalidTopologyError(f"new_stream: txid must be a non-empty string without "
                                       f"'/', got {txid!r}")
        if txid in self._txids:
            raise InvalidTopologyError(f"new_stream: txid {txid!r} used twice")
        cls = getattr(spout, "component_class", None)
        if not (isinstance(cls, type) and issubclass(cls, SPOUT_TYPES)):
            raise InvalidTopologyError(f"new_stream {txid!r}: {spout!r:.60} is not an instance of "
                                       "a transactional spout")
        fields = cls.declare_outputs(spout.component_kwargs)["default"].fields
        self._txids.add(txid)
        node = self._graph.add(SPOUT, list(fields)[1:], [], spout=spout, txid=txid)
        return Stream(self._graph, node)

    def merge(self, *streams: Stream, output_fields: Sequence[str] | None = None) -> Stream:
        """The union of ``streams`` (equal numbers of fields; named after the first stream's
        unless ``output_fields`` is given)."""
        return merge_streams(self._graph, streams, list(output_fields) if output_fields else None)

    def join(self, stream1: Stream, fields1: Sequence[str], stream2: Stream, fields2: Sequence[str],
             output_fields: Sequence[str]) -> Stream:
        """Inner join within each batch: ``output_fields`` name the join keys, then stream1's
        other fields, then stream2's."""
        return join_streams(self._graph, [stream1, stream2], [fields1, fields2], output_fields)

    def multi_join(self, streams: Sequence[Stream], keys: Sequence[Sequence[str]],
                   output_fields: Sequence[str]) -> Stream:
        return join_streams(self._graph, streams, keys, output_fields)

    def build(self) -> TopologySpec:
        """The ordinary topology; InvalidTopologyError naming what is wrong."""
        return build_spec(self._graph)
