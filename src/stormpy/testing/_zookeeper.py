"""A real Apache ZooKeeper server for tests: start one on a free port with its own data directory.

::

    from stormpy.testing._zookeeper import ZooKeeperServer

    with ZooKeeperServer() as zk:            # java -Xmx256m ... ZooKeeperServerMain on 127.0.0.1
        state = ClusterState.connect(zk.connect_string, "/my-test")

The implementation lives in :mod:`stormpy.cluster.zkserver` (shared with ``stormpy dev-zookeeper``);
this module is the test kit's public entry point. When ZooKeeper is missing,
:func:`find_zookeeper_classpath` and :meth:`ZooKeeperServer.start` raise :class:`ZooKeeperNotFound`
whose message is an install hint (:data:`INSTALL_HINT`).
"""

from __future__ import annotations

from stormpy.cluster.zkserver import (
    INSTALL_HINT,
    ZooKeeperNotFound,
    ZooKeeperServer,
    ZooKeeperStartError,
    find_zookeeper_classpath,
    four_letter_word,
    require_java,
)

__all__ = [
    "INSTALL_HINT",
    "ZooKeeperNotFound",
    "ZooKeeperServer",
    "ZooKeeperStartError",
    "find_zookeeper_classpath",
    "four_letter_word",
    "require_java",
    "zookeeper_available",
]


def zookeeper_available() -> bool:
    """True when both ZooKeeper and Java can be found (no process is started)."""
    try:
        find_zookeeper_classpath()
        require_java()
    except ZooKeeperNotFound:
        return False
    return True
