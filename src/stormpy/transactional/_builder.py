"""TransactionalTopologyBuilder: describes a transactional topology and generates the ordinary
topology that runs it (Storm's TransactionalTopologyBuilder).

Generated components: ``<spout_id>-coordinator`` (the coordinator spout, one task),
``<spout_id>`` (the emitter: ``spout_parallelism`` tasks subscribed to the coordinator's batch
stream with all grouping) and one ``CoordinatedBolt`` per ``set_bolt``, subscribed as declared
plus, for each upstream component, directly to its ``$coord`` stream; committers also get the
coordinator's commit stream with all grouping.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy.topology._builder import BoltDeclarer, TopologyBuilder, resolve_component
from stormpy.topology._component import BasicBolt
from stormpy.topology._errors import InvalidTopologyError
from stormpy.topology._grouping import ALL, DIRECT, Grouping
from stormpy.topology._imports import class_path
from stormpy.topology._spec import InputSpec, TopologySpec
from stormpy.transactional._api import SPOUT_TYPES, BatchBolt, OpaquePartitionedTransactionalSpout
from stormpy.transactional._coordinated import BASIC, BATCH, EMITTER, CoordinatedBolt
from stormpy.transactional._coordinator import CoordinatorSpout
from stormpy.transactional._streams import (
    BATCH_STREAM,
    COMMIT_STREAM,
    COORD_STREAM,
    RESERVED_PREFIX,
    coordinator_id,
)


class TransactionalTopologyBuilder:
    """``TransactionalTopologyBuilder(id, spout_id, spout, spout_parallelism)``; ``id`` names the
    transactional state in ZooKeeper (keep it when redeploying to continue where it stopped)."""

    def __init__(self, id: str, spout_id: str, spout: Any,  # noqa: A002 - Storm's name
                 spout_parallelism: int = 1, *, kwargs: Mapping[str, Any] | None = None) -> None:
        if not isinstance(id, str) or not id or "/" in id:
            raise InvalidTopologyError(f"transactional id must be a non-empty string without '/', "
                                       f"got {id!r}")
        cls, kw = resolve_component(spout, kwargs, spout_id, what="spout", module_level=True)
        if not (isinstance(cls, type) and issubclass(cls, SPOUT_TYPES)):
            raise InvalidTopologyError(
                f"spout {spout_id!r}: {cls!r} is not a transactional spout; batch bolts can only be "
                "fed by a TransactionalSpout, PartitionedTransactionalSpout or "
                "OpaquePartitionedTransactionalSpout")
        self.id = id
        self.spout_id = spout_id
        self.coordinator_id = coordinator_id(spout_id)
        self._builder = TopologyBuilder()
        self._roles: dict[str, str] = {spout_id: EMITTER}
        self._committers: set[str] = set()
        self._builder.set_spout(self.coordinator_id, CoordinatorSpout, 1, kwargs={
            "transactional_id": id, "spout": class_path(cls), "spout_kwargs": kw})
        emitter = self._builder.set_bolt(spout_id, CoordinatedBolt, spout_parallelism, kwargs={
            "role": EMITTER, "target": class_path(cls), "target_kwargs": kw,
            "transactional_id": id})
        emitter.all_grouping(self.coordinator_id, BATCH_STREAM)
        if issubclass(cls, OpaquePartitionedTransactionalSpout):
            emitter.all_grouping(self.coordinator_id, COMMIT_STREAM)

    def set_bolt(self, id: str, bolt: Any, parallelism: int = 1,  # noqa: A002 - Storm's name
                 committer: bool = False, *, kwargs: Mapping[str, Any] | None = None,
                 tasks: int | None = None, config: Mapping[str, Any] | None = None
                 ) -> BoltDeclarer:
        """Add a ``BatchBolt`` (a committer when it subclasses ``Committer`` or ``committer`` is
        True) or a ``BasicBolt`` (run per tuple, no batch hooks); subscribe it with the returned
        declarer (every grouping) to the spout id or other bolts of this builder."""
        if id in self._roles or id == self.coordinator_id:
            raise InvalidTopologyError(f"duplicate component id {id!r}")
        cls, kw = resolve_component(bolt, kwargs, id, what="bolt", module_level=True)
        if isinstance(cls, type) and issubclass(cls, BatchBolt):
            role = BATCH
            committer = bool(committer or cls.committer)
        elif isinstance(cls, type) and issubclass(cls, BasicBolt):
            role = BASIC
            if committer:
                raise InvalidTopologyError(f"bolt {id!r}: only a BatchBolt can be a committer "
                                           f"({cls.__qualname__} is a BasicBolt)")
        else:
            raise InvalidTopologyError(
                f"bolt {id!r}: {cls!r} is neither a BatchBolt nor a BasicBolt; a transactional "
                "topology runs batch bolts (or basic bolts, per tuple)")
        self._roles[id] = role
        if committer:
            self._committers.add(id)
        return self._builder.set_bolt(id, CoordinatedBolt, parallelism, kwargs={
            "role": role, "target": class_path(cls), "target_kwargs": kw,
            "transactional_id": self.id, "committer": committer}, tasks=tasks, config=config)

    def create_topology(self) -> TopologySpec:
        """The generated topology; InvalidTopologyError names what is wrong."""
        spec = self._builder.create_topology()
        for cid, role in self._roles.items():
            if role == EMITTER:
                continue
            comp = spec.components[cid]
            upstream: list[str] = []
            for inp in comp.inputs:
                if inp.component == self.coordinator_id or inp.stream.startswith(RESERVED_PREFIX):
                    raise InvalidTopologyError(
                        f"bolt {cid!r} subscribes to {inp.component}/{inp.stream}, a stream of the "
                        "transactional machinery")
                if inp.component not in self._roles:
                    raise InvalidTopologyError(f"bolt {cid!r} subscribes to unknown component "
                                               f"{inp.component!r}")
                if inp.component not in upstream:
                    upstream.append(inp.component)
            for source in upstream:
                comp.inputs.append(InputSpec(source, COORD_STREAM, Grouping(DIRECT)))
            if cid in self._committers:
                comp.inputs.append(InputSpec(self.coordinator_id, COMMIT_STREAM, Grouping(ALL)))
        self._check_committers(spec)
        spec.validate()
        return spec

    def _check_committers(self, spec: TopologySpec) -> None:
        """Refuse a non-batch bolt downstream of a committer: it would see the committer's
        output, which only exists in the commit phase, outside any batch it can finish."""
        downstream: dict[str, set[str]] = {c: set() for c in self._roles}
        for cid in self._roles:
            for inp in spec.components[cid].inputs:
                if inp.component in downstream:
                    downstream[inp.component].add(cid)
        for committer in sorted(self._committers):
            seen, todo = set(), [committer]
            while todo:
                for nxt in downstream[todo.pop()]:
                    if nxt in seen:
                        continue
                    seen.add(nxt)
                    todo.append(nxt)
                    if self._roles[nxt] != BATCH:
                        raise InvalidTopologyError(
                            f"committer {committer!r} is upstream of {nxt!r}, which is not a "
                            "batch bolt; only batch bolts may follow a committer")
