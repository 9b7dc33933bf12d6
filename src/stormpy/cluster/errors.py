"""Errors of the cluster-state package; every message names the ZooKeeper path or hosts involved."""

from __future__ import annotations

__all__ = ["ClusterStateError", "MalformedStateError", "ZkConnectionError"]


class ClusterStateError(RuntimeError):
    """A ZooKeeper operation on stormpy's cluster state failed."""


class ZkConnectionError(ClusterStateError):
    """ZooKeeper could not be reached (or the session was lost) within the allowed time."""


class MalformedStateError(ClusterStateError, ValueError):
    """A znode holds a document stormpy cannot read; ``path`` names it."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"malformed cluster state at {path}: {problem}")
        self.path = path
        self.problem = problem
