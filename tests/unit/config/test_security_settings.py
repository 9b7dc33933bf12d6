"""The secrets Nimbus gives a topology at submit (nimbus/credentials.py), what a worker's config
takes from them (cluster/zk_acls.worker_zk_identity, worker_conf) and that none is ever shown."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy.cluster.zk_acls import DAEMON_DIGEST_ID_KEY, daemon_digest_id, zk_identity
from stormpy.config import SettingError, redacted
from stormpy.messaging.curve import CurveKeyPair, curve_enabled, topology_keys
from stormpy.nimbus.credentials import add_topology_credentials
from stormpy.topology._errors import InvalidTopologyError
from stormpy.worker.process import worker_conf

DAEMONS = {"storm.zookeeper.auth.payload": "stormpy:cluster-secret"}


def submitted(cluster: dict[str, Any], topo: dict[str, Any], tid: str = "wc-1-2-abc") -> dict[str, Any]:
    conf = dict(topo)
    add_topology_credentials(conf, cluster, tid)
    return conf


def test_an_open_cluster_adds_nothing_and_drops_keys_users_supplied() -> None:
    user_keys = CurveKeyPair.generate().as_conf()
    assert submitted({}, {"topology.workers": 2, **user_keys}) == {"topology.workers": 2}


def test_curve_makes_a_fresh_pair_per_topology() -> None:
    first = submitted({"storm.messaging.curve.enabled": True}, {})
    second = submitted({}, {"storm.messaging.curve.enabled": True})
    pairs = [topology_keys(first), topology_keys(second)]
    assert all(pairs) and pairs[0] != pairs[1]


def test_zookeeper_auth_gives_each_topology_an_identity_and_keeps_a_given_one() -> None:
    made = submitted(DAEMONS, {})
    assert made["storm.zookeeper.topology.auth.payload"].startswith("wc-1-2-abc:")
    kept = submitted(DAEMONS, {"storm.zookeeper.topology.auth.payload": "mine:pw"})
    assert kept["storm.zookeeper.topology.auth.payload"] == "mine:pw"


def test_a_worker_authenticates_as_its_topology_never_as_the_daemons() -> None:
    topo = submitted({**DAEMONS, "storm.messaging.curve.enabled": True}, {})
    conf = worker_conf(DAEMONS, topo)
    assert conf["storm.zookeeper.auth.payload"] is None
    assert conf[DAEMON_DIGEST_ID_KEY] == daemon_digest_id(DAEMONS)
    identity = zk_identity(conf)
    assert identity is not None and identity.payload == topo["storm.zookeeper.topology.auth.payload"]
    assert topology_keys(conf) == topology_keys(topo)
    assert worker_conf(DAEMONS, {})["storm.zookeeper.auth.payload"] == "stormpy:cluster-secret"


def test_secrets_are_never_shown() -> None:
    topo = submitted({**DAEMONS, "storm.messaging.curve.enabled": True}, {})
    shown = redacted({**DAEMONS, **topo})
    assert shown["storm.zookeeper.auth.payload"] == "*****"
    assert shown["storm.zookeeper.topology.auth.payload"] == "*****"
    assert shown["topology.messaging.curve.secret.key"] == "*****"
    assert shown["topology.messaging.curve.public.key"] == topo["topology.messaging.curve.public.key"]


def test_the_curve_switch_is_a_bool() -> None:
    assert curve_enabled({}) is False
    with pytest.raises(SettingError, match="storm.messaging.curve.enabled"):
        curve_enabled({"storm.messaging.curve.enabled": "yes"})
    with pytest.raises(InvalidTopologyError, match="storm.messaging.curve.enabled"):
        submitted({}, {"storm.messaging.curve.enabled": "yes"})
