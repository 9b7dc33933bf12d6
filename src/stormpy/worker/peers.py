"""Reading one worker's place in an :class:`~stormpy.cluster.records.Assignment`.

A worker is the slot ``(node, port)``: node is the supervisor id. Its peers are the other slots of
the assignment, keyed ``"node:port"`` (the peer key of the transport and of ``Worker.task_peers``)
and reached at ``"<node_host[node]>:port"``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from stormpy.cluster.records import Assignment
from stormpy.topology._layout import ExecutorKey

__all__ = ["WorkerPeers", "local_executors", "peer_key", "tasks_of", "worker_peers"]

log = logging.getLogger(__name__)


def peer_key(node: str, port: int) -> str:
    """The peer key of the worker ``node:port``."""
    return f"{node}:{int(port)}"


def local_executors(assignment: Assignment, node: str, port: int) -> tuple[ExecutorKey, ...]:
    """The sorted executors the assignment gives the worker ``(node, port)``."""
    return tuple(assignment.executors_of(node, port))


def tasks_of(executors: tuple[ExecutorKey, ...] | list[ExecutorKey]) -> list[int]:
    """Every task id of ``executors``, sorted."""
    return sorted(t for start, end in executors for t in range(start, end + 1))


@dataclass(frozen=True)
class WorkerPeers:
    """``task_peers``: task → peer key for tasks run elsewhere; ``addresses``: peer key → host:port."""

    task_peers: dict[int, str]
    addresses: dict[str, str]


def worker_peers(assignment: Assignment, node: str, port: int) -> WorkerPeers:
    """Where every task not run by ``(node, port)`` runs. Executors on a node without a known host
    are left out (logged): their tuples are undeliverable until the assignment names the host."""
    task_peers: dict[int, str] = {}
    addresses: dict[str, str] = {}
    for (start, end), (other_node, other_port) in sorted(assignment.executors.items()):
        if (other_node, other_port) == (node, port):
            continue
        host = assignment.node_host.get(other_node)
        if host is None:
            log.warning("assignment of %s: node %s has no host; executor [%d, %d] is unreachable",
                        assignment.topology_id, other_node, start, end)
            continue
        key = peer_key(other_node, other_port)
        addresses[key] = f"{host}:{int(other_port)}"
        for task in range(start, end + 1):
            task_peers[task] = key
    return WorkerPeers(task_peers, addresses)
