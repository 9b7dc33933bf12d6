"""Test helpers for the transactional machinery driven by hand: a memory store of the state
layer found again by transactional id (what the coordinator and the emitters open), and a
context whose state backend is that memory (a LocalCluster's role)."""

from __future__ import annotations

from typing import Any

from stormpy.state import MemoryBackend, MemoryStore

#: The memory of the tests (a LocalCluster's in a real run).
BACKEND = MemoryBackend()


class NamedMemoryStore(MemoryStore):
    """The store the transactional machinery opens for ``transactional_id`` in :data:`BACKEND`
    (every instance by the same id sees the same data)."""

    def __init__(self, transactional_id: str) -> None:
        found = BACKEND.named_store("transactional", "tx", transactional_id)
        super().__init__(BACKEND, found._node, found.location)

    @staticmethod
    def forget(transactional_id: str) -> None:
        NamedMemoryStore(transactional_id).delete("")


class Context:
    """Stands for a TopologyContext: its state backend is :data:`BACKEND`."""

    state_backend = BACKEND
    component_id = "coordinator"

    def __repr__(self) -> str:
        return "Context()"


CONTEXT: Any = Context()
