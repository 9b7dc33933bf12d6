"""Single attempts of ZkStorage's compound writes, each given the bounded ``wait`` of one
operation (ZkStorage runs them under its retry and deadline; see :mod:`.storage`).

* :func:`ensure_path` creates ``path`` and its missing parents with ``acl`` (None: the session's
  default ACL).
* :func:`set_or_create` writes ``data`` to ``path``, creating it (and parents) when missing, and
  setting it after all when another writer created it meanwhile.
* :func:`delete_tree` deletes ``path`` and everything under it; it starts over when writers add
  children while it runs, up to ``rounds`` times, then raises ClusterStateError. False when
  ``path`` did not exist.
"""

from __future__ import annotations

from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError, NotEmptyError

from stormpy.cluster.errors import ClusterStateError
from stormpy.cluster.zk_operations import Wait

__all__ = ["DELETE_ROUNDS", "delete_tree", "ensure_path", "set_or_create"]

#: How many times a recursive delete starts over when writers keep adding children.
DELETE_ROUNDS = 10

def ensure_path(client: KazooClient, wait: Wait, path: str, acl: Any) -> Any:
    """One attempt to create ``path`` and its missing parents with ``acl``."""
    return wait(client.ensure_path_async(path, acl))


def set_or_create(client: KazooClient, wait: Wait, path: str, data: bytes) -> None:
    """One attempt to write ``data`` to ``path`` (see the module docstring)."""
    try:
        wait(client.set_async(path, data))
        return
    except NoNodeError:
        pass
    try:
        wait(client.create_async(path, data, makepath=True))
    except NodeExistsError:
        wait(client.set_async(path, data))


def delete_tree(client: KazooClient, wait: Wait, path: str, rounds: int = DELETE_ROUNDS) -> bool:
    """One attempt to delete ``path`` recursively (see the module docstring)."""
    existed = False
    for _ in range(rounds):
        try:
            children = wait(client.get_children_async(path))
        except NoNodeError:
            return existed
        existed = True
        for child in children:
            delete_tree(client, wait, f"{path.rstrip('/')}/{child}", rounds)
        try:
            wait(client.delete_async(path))
            return True
        except NoNodeError:
            return True
        except NotEmptyError:
            continue  # a writer added a child meanwhile: delete the new ones too
    raise ClusterStateError(f"ZooKeeper delete {path} failed: children kept appearing "
                            f"({rounds} rounds)")
