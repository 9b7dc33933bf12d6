"""Reading kazoo's Lock recipe (the recipe behind Nimbus leader election) with bounded operations.

:func:`lock_contenders` contract: the contender identifiers of the kazoo Lock at ``path``, in lock
order (the holder first), like kazoo's ``Lock.contenders()``, but read through a storage's own
``children``/``get`` (:class:`~stormpy.cluster.storage.ZkStorage`'s bounded operations, so it
fails with ZkConnectionError instead of waiting for ZooKeeper without end). ``[]`` when nobody
contends; a contender whose node vanished while being read is left out.
"""

from __future__ import annotations

import re
from typing import Protocol

__all__ = ["LOCK_NODE", "lock_contenders"]

#: A contender node of kazoo's Lock recipe (``<uuid>__lock__<10-digit sequence>``).
LOCK_NODE = re.compile(r"__lock__(-?\d{10})$")


class NodeReader(Protocol):
    """What :func:`lock_contenders` needs of a storage."""

    def children(self, path: str) -> list[str]: ...

    def get(self, path: str) -> bytes | None: ...


def lock_contenders(storage: NodeReader, path: str) -> list[str]:
    """The contenders of the lock at ``path``, the holder first (see the module docstring)."""
    nodes = sorted((match.group(1), name) for name in storage.children(path)
                   if (match := LOCK_NODE.search(name)) is not None)
    contenders = []
    for _sequence, name in nodes:
        data = storage.get(f"{path}/{name}")
        if data is not None:
            contenders.append(data.decode("utf-8"))
    return contenders
