"""Adding the checkpoint machinery to a topology with stateful bolts (what Storm's
``TopologyBuilder.createTopology`` does when it finds an ``IStatefulBolt``).

The checkpoint spout ``$checkpointspout`` (one task) is added; every stateful bolt is wrapped in a
:class:`~stormpy.state._bolt.StatefulBoltExecutor` and every other bolt in a
:class:`~stormpy.state._bolt.CheckpointTupleForwarder`; each bolt subscribes with all grouping to the
``$checkpoint`` stream of the checkpoint spout (when it reads from a spout) and of every bolt it
reads from, so checkpoints flow along the data paths as barriers.
"""

from __future__ import annotations

from stormpy.state._bolt import WRAPPED, CheckpointTupleForwarder, StatefulBoltExecutor
from stormpy.state._checkpoint import (
    CHECKPOINT_COMPONENT,
    CHECKPOINT_FIELDS,
    CHECKPOINT_STREAM,
    CheckpointSpout,
)
from stormpy.topology._errors import InvalidTopologyError
from stormpy.topology._grouping import ALL, Grouping
from stormpy.topology._imports import class_path, import_object
from stormpy.topology._spec import BOLT, SPOUT, ComponentSpec, InputSpec, TopologySpec
from stormpy.topology._streams import Stream

__all__ = ["add_checkpointing"]

_WRAPPERS = {class_path(CheckpointTupleForwarder), class_path(StatefulBoltExecutor)}


def add_checkpointing(spec: TopologySpec) -> None:
    """Wire checkpointing into ``spec`` in place; does nothing when it is already wired."""
    if CHECKPOINT_COMPONENT in spec.components:
        return
    for cid, comp in spec.components.items():
        for inp in comp.inputs:
            if inp.stream == CHECKPOINT_STREAM:
                raise InvalidTopologyError(f"bolt {cid!r} subscribes to {inp.component}/"
                                           f"{CHECKPOINT_STREAM}, the checkpoint stream")
        if CHECKPOINT_STREAM in comp.streams:
            raise InvalidTopologyError(f"component {cid!r} declares the reserved stream "
                                       f"{CHECKPOINT_STREAM!r}")
    spouts = {cid for cid, c in spec.components.items() if c.kind == SPOUT}
    for comp in spec.components.values():
        if comp.kind != BOLT or comp.class_path in _WRAPPERS:
            continue
        target = import_object(comp.class_path)
        wrapper = (StatefulBoltExecutor if getattr(target, "stateful", False)
                   else CheckpointTupleForwarder)
        comp.kwargs = {WRAPPED: comp.class_path, **comp.kwargs}
        comp.class_path = class_path(wrapper)
        comp.streams = {**comp.streams, CHECKPOINT_STREAM: Stream(list(CHECKPOINT_FIELDS),
                                                                  name=CHECKPOINT_STREAM)}
        sources: list[str] = []
        for inp in comp.inputs:
            src = CHECKPOINT_COMPONENT if inp.component in spouts else inp.component
            if src not in sources:
                sources.append(src)
        comp.inputs = [*comp.inputs, *(InputSpec(s, CHECKPOINT_STREAM, Grouping(ALL))
                                       for s in sources)]
    spec.components[CHECKPOINT_COMPONENT] = ComponentSpec(
        id=CHECKPOINT_COMPONENT, kind=SPOUT, class_path=class_path(CheckpointSpout), kwargs={},
        parallelism=1, tasks=1, config={},
        streams=CheckpointSpout.declare_outputs({}))
