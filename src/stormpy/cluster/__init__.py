"""Cluster state in ZooKeeper: the layout (:mod:`.paths`), raw access (:mod:`.storage`, with
kazoo's watch recipes in :mod:`.watches`, ephemeral nodes kept across sessions in
:mod:`.zk_ephemerals`, lock contenders in :mod:`.zk_locks` and the one connect-string builder in
:mod:`.zk_hosts`), typed documents (:mod:`.records`) and the
:class:`ClusterState` façade (:mod:`.state`); the supervisor/worker files under
``storm.local.dir`` (:mod:`.local_layout`).

A shared service: it never imports daemons. :mod:`.zkserver` and :mod:`.devzk` run a real Apache
ZooKeeper server for development and tests.
"""

from stormpy.cluster.errors import ClusterStateError, MalformedStateError, ZkConnectionError
from stormpy.cluster.paths import DEFAULT_ROOT, ZkPaths
from stormpy.cluster.records import (
    SCHEMA_VERSION,
    Assignment,
    ErrorInfo,
    StormBase,
    SupervisorInfo,
    WorkerHeartbeat,
)
from stormpy.cluster.state import MAX_ERRORS_PER_COMPONENT, ClusterState
from stormpy.cluster.storage import ZkStorage
from stormpy.cluster.watches import Watch
from stormpy.cluster.zk_hosts import hosts_from_config

__all__ = [
    "DEFAULT_ROOT",
    "MAX_ERRORS_PER_COMPONENT",
    "SCHEMA_VERSION",
    "Assignment",
    "ClusterState",
    "ClusterStateError",
    "ErrorInfo",
    "MalformedStateError",
    "StormBase",
    "SupervisorInfo",
    "Watch",
    "WorkerHeartbeat",
    "ZkConnectionError",
    "ZkPaths",
    "ZkStorage",
    "hosts_from_config",
]
