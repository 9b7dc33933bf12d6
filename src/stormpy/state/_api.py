"""StatefulBolt: what users subclass for a bolt with checkpointed state."""

from __future__ import annotations

from stormpy.state._kv import KeyValueState
from stormpy.state._wiring import add_checkpointing
from stormpy.topology._component import Bolt
from stormpy.topology._spec import TopologySpec

__all__ = ["StatefulBolt"]


class StatefulBolt(Bolt):
    """A bolt whose state the framework checkpoints. ``init_state(state)`` is called with the
    last committed :class:`~stormpy.state._kv.KeyValueState` after ``prepare`` and before the
    first ``execute``. Ack inputs as usual: the ack takes effect once the state including the
    tuple's effect is committed. Hooks ``pre_prepare``/``pre_commit``/``pre_rollback`` run before
    those steps."""

    stateful = True

    def init_state(self, state: KeyValueState) -> None:
        """Keep ``state``; called once, before the first tuple."""

    def pre_prepare(self, txid: int) -> None:
        """Called before the state is prepared for checkpoint ``txid``."""

    def pre_commit(self, txid: int) -> None:
        """Called before the state is committed as ``txid``."""

    def pre_rollback(self) -> None:
        """Called before the state rolls back to the last committed checkpoint."""

    @classmethod
    def finish_topology(cls, spec: TopologySpec, component_id: str) -> None:
        """Wire the checkpoint spout and the checkpoint executors into the topology."""
        add_checkpointing(spec)
