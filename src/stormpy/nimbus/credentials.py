"""The secrets Nimbus gives a topology at submit (docs/security.md).

:func:`topology_credentials` contract: from the cluster's config and the submitted topology config,
the entries Nimbus writes into the stored topology config (they reach the topology's workers only:
supervisors fetch the config over Nimbus RPC and keep it in a file only their user may read):

* with ``storm.messaging.curve.enabled`` (cluster or topology config; a topology's value that is
  not a bool is an InvalidTopologyError naming it): a fresh CURVE key pair for
  the topology's worker links (``topology.messaging.curve.public.key`` / ``.secret.key``); keys a
  user put in the submitted config are never used;
* with ``storm.zookeeper.auth.payload`` (the cluster's): the topology's own ZooKeeper identity
  ``storm.zookeeper.topology.auth.payload`` (a given one is kept, as Storm keeps it; otherwise
  ``<topology-id>:<random secret>``).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from stormpy.cluster.zk_acls import TOPOLOGY_PAYLOAD_KEY, daemon_digest_id
from stormpy.config import SettingError
from stormpy.messaging.curve import PUBLIC_KEY, SECRET_KEY, CurveKeyPair, curve_enabled
from stormpy.topology._errors import InvalidTopologyError

__all__ = ["add_topology_credentials", "topology_credentials"]


def topology_credentials(cluster_conf: Mapping[str, Any], topo_conf: Mapping[str, Any],
                         topology_id: str) -> dict[str, Any]:
    """The entries to set in (and, for None values, remove from) the topology's config."""
    out: dict[str, Any] = {PUBLIC_KEY: None, SECRET_KEY: None}
    try:
        curve_enabled(topo_conf)
    except SettingError as exc:
        raise InvalidTopologyError(f"topology config {exc}") from None
    if curve_enabled({**cluster_conf, **topo_conf}):
        out.update(CurveKeyPair.generate().as_conf())
    if daemon_digest_id(cluster_conf) is not None and not topo_conf.get(TOPOLOGY_PAYLOAD_KEY):
        out[TOPOLOGY_PAYLOAD_KEY] = f"{topology_id}:{secrets.token_urlsafe(24)}"
    return out


def add_topology_credentials(topo_conf: dict[str, Any], cluster_conf: Mapping[str, Any],
                             topology_id: str) -> None:
    """Apply :func:`topology_credentials` to ``topo_conf`` in place."""
    for key, value in topology_credentials(cluster_conf, topo_conf, topology_id).items():
        if value is None:
            topo_conf.pop(key, None)
        else:
            topo_conf[key] = value
