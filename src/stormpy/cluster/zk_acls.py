"""ZooKeeper identities and ACLs of a secured cluster, as Storm sets them (docs/security.md).

Contract of :func:`zk_identity`:

* Daemons (Nimbus, supervisors, the UI) authenticate with ``storm.zookeeper.auth.scheme`` /
  ``storm.zookeeper.auth.payload`` (digest, ``user:password``). The nodes they create are writable
  by that identity alone and readable by anyone (Storm's daemon ACLs); the root and the
  directories workers add nodes to (:data:`WORKER_DIRECTORIES`) also let anyone *create* children
  there, as Storm's do, but not change or remove the daemons' nodes.
* Workers authenticate with their topology's ``storm.zookeeper.topology.auth.scheme`` /
  ``.payload`` (which Nimbus generates at submit); their nodes are writable by the topology's
  identity and the daemons' (whose ACL id, ``storm.zookeeper.auth.digest.id``, the worker gets
  in place of the daemons' payload), readable by anyone.
* No payload: None (open nodes, ZooKeeper's default). Only the ``digest`` scheme is offered; any
  other, or a payload that is not ``user:password``, is a SettingError naming the setting.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kazoo.security import ACL, OPEN_ACL_UNSAFE, Id, Permissions, make_digest_acl_credential

from stormpy.config import SettingError, setting

__all__ = ["DAEMON_DIGEST_ID_KEY", "WORKER_DIRECTORIES", "ZkIdentity", "daemon_digest_id",
           "start_paths", "worker_zk_identity", "zk_identity"]

DAEMON_SCHEME_KEY = "storm.zookeeper.auth.scheme"
DAEMON_PAYLOAD_KEY = "storm.zookeeper.auth.payload"
TOPOLOGY_SCHEME_KEY = "storm.zookeeper.topology.auth.scheme"
TOPOLOGY_PAYLOAD_KEY = "storm.zookeeper.topology.auth.payload"
#: Set by worker_conf (not by users): the daemons' digest ACL id (``user:base64(sha1)``), no secret.
DAEMON_DIGEST_ID_KEY = "storm.zookeeper.auth.digest.id"
#: Top-level directories where workers create nodes (heartbeats, errors, their state, their
#: control-request directories).
WORKER_DIRECTORIES = ("workerbeats", "errors", "checkpoints", "transactional", "workercontrol")

_WORLD = Id("world", "anyone")


@dataclass(frozen=True)
class ZkIdentity:
    """How one ZooKeeper session authenticates and what ACLs its nodes get.

    ``acl`` is the default of every node it creates; ``shared_acl`` that of the root and the
    :data:`WORKER_DIRECTORIES` when this identity creates them (daemons only; else ``acl``).
    ``repr`` never shows the payload.
    """

    scheme: str
    payload: str
    acl: tuple[ACL, ...]
    shared_acl: tuple[ACL, ...]

    @property
    def auth_data(self) -> list[tuple[str, str]]:
        return [(self.scheme, self.payload)]

    def __repr__(self) -> str:
        return f"ZkIdentity(scheme={self.scheme!r}, user={self.payload.split(':', 1)[0]!r})"


def _payload(conf: Mapping[str, Any], scheme_key: str, payload_key: str) -> tuple[str, str] | None:
    payload = conf.get(payload_key)
    if payload is None or payload == "":
        return None
    scheme = str(conf.get(scheme_key) or "digest")
    if scheme != "digest":
        raise SettingError(scheme_key, f"only 'digest' is supported, got {scheme!r}")
    user, sep, password = str(payload).partition(":")
    if not sep or not user or not password:
        raise SettingError(payload_key, "must be user:password (digest)")
    return user, password


def daemon_digest_id(conf: Mapping[str, Any]) -> str | None:
    """The daemons' digest ACL id (``user:base64(sha1(user:password))``), None when unsecured."""
    creds = _payload(conf, DAEMON_SCHEME_KEY, DAEMON_PAYLOAD_KEY)
    return make_digest_acl_credential(*creds) if creds else None


def _digest_id(user: str, password: str) -> Id:
    return Id("digest", make_digest_acl_credential(user, password))


def start_paths(root: str, identity: ZkIdentity | None) -> list[tuple[str, list[ACL] | None]]:
    """What a storage ensures when it starts, in order, each with the ACL of the nodes it creates
    (None: the session's default). Unsecured: the root. Secured: the root's missing ancestors
    open (they are not the cluster's: other applications share them), then the root and the
    :data:`WORKER_DIRECTORIES` under it with ``shared_acl``."""
    if identity is None:
        return [(root, None)]
    parent = root.rstrip("/").rsplit("/", 1)[0]
    shared = list(identity.shared_acl)
    base = root.rstrip("/")
    ancestors: list[tuple[str, list[ACL] | None]] = [(parent, list(OPEN_ACL_UNSAFE))] if parent else []
    return [*ancestors, (root, shared), *((f"{base}/{name}", shared) for name in WORKER_DIRECTORIES)]


def zk_identity(conf: Mapping[str, Any]) -> ZkIdentity | None:
    """The session identity ``conf`` gives (see the module contract)."""
    daemon = _payload(conf, DAEMON_SCHEME_KEY, DAEMON_PAYLOAD_KEY)
    if daemon is not None:
        owner = ACL(Permissions.ALL, _digest_id(*daemon))
        return ZkIdentity("digest", ":".join(daemon),
                          acl=(owner, ACL(Permissions.READ, _WORLD)),
                          shared_acl=(owner, ACL(Permissions.READ | Permissions.CREATE, _WORLD)))
    topology = _payload(conf, TOPOLOGY_SCHEME_KEY, TOPOLOGY_PAYLOAD_KEY)
    if topology is None:
        return None
    acl = [ACL(Permissions.ALL, _digest_id(*topology)), ACL(Permissions.READ, _WORLD)]
    daemon_id = conf.get(DAEMON_DIGEST_ID_KEY)
    if daemon_id:
        acl.append(ACL(Permissions.ALL, Id("digest", str(daemon_id))))
    return ZkIdentity("digest", ":".join(topology), acl=tuple(acl), shared_acl=tuple(acl))


def worker_zk_identity(daemon_conf: Mapping[str, Any], topology_conf: Mapping[str, Any]
                       ) -> dict[str, Any]:
    """The entries a worker's config takes over from its topology's and daemon's: the topology's
    ZooKeeper identity, the daemons' ACL id, and the daemons' payload removed (a worker never
    authenticates as the daemons). Empty when the topology has no identity of its own."""
    payload = topology_conf.get(TOPOLOGY_PAYLOAD_KEY)
    if not payload:
        return {}
    return {TOPOLOGY_SCHEME_KEY: setting(topology_conf, TOPOLOGY_SCHEME_KEY),
            TOPOLOGY_PAYLOAD_KEY: payload, DAEMON_PAYLOAD_KEY: None,
            DAEMON_DIGEST_ID_KEY: daemon_digest_id(daemon_conf)}
