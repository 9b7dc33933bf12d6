"""A daemon's first connection to ZooKeeper, waiting for a ZooKeeper that is not up yet.

Contract: :func:`connect_at_start` returns a started :class:`~stormpy.cluster.state.ClusterState`
(``connect()``; :meth:`ClusterState.from_config` by default). When an attempt fails with
:class:`~stormpy.cluster.errors.ZkConnectionError` (ZooKeeper not answering within
``storm.zookeeper.connection.timeout``), it logs one warning naming the hosts, the attempt and
the wait, and tries again after the backoff of Storm's keys (:class:`stormpy.host.backoff.Backoff`:
``storm.zookeeper.retry.interval`` ms, doubling up to
``storm.zookeeper.retry.intervalceiling.millis``), up to ``storm.zookeeper.retry.times`` retries
(-1: until stopped); then the last error propagates. ``stop`` (a daemon's stop event) ends the
wait at once with that error. Any other error propagates at once. A success after failures is
logged too.

Daemons started together with their ZooKeeper (docker-compose, a host's boot) so wait for it instead
of exiting.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from stormpy.cluster.errors import ZkConnectionError
from stormpy.cluster.state import ClusterState
from stormpy.cluster.zk_hosts import hosts_from_config
from stormpy.config import setting
from stormpy.host.backoff import Backoff

__all__ = ["connect_at_start"]


def connect_at_start(conf: Mapping[str, Any], stop: threading.Event, log: logging.Logger, *,
                     connect: Callable[[Mapping[str, Any]], ClusterState] | None = None
                     ) -> ClusterState:
    """The cluster state of ``conf``, connected, retrying while ZooKeeper does not answer (see the
    module contract)."""
    retries = int(setting(conf, "storm.zookeeper.retry.times"))
    first = float(setting(conf, "storm.zookeeper.retry.interval")) / 1000
    cap = max(first, float(setting(conf, "storm.zookeeper.retry.intervalceiling.millis")) / 1000)
    backoff = Backoff(first, cap)
    attempt = 0
    while True:
        attempt += 1
        try:
            state = (connect or ClusterState.from_config)(conf)
        except ZkConnectionError as exc:
            if stop.is_set() or (retries >= 0 and attempt > retries):
                raise
            delay = backoff.failed()
            log.warning("waiting for ZooKeeper at %s: attempt %d failed (%s); next in %g s%s",
                        hosts_from_config(conf), attempt, exc, delay,
                        "" if retries < 0 else f" ({retries - attempt + 1} retries left)")
            if stop.wait(delay):
                raise
            continue
        if attempt > 1:
            log.info("connected to ZooKeeper at %s after %d attempts", hosts_from_config(conf),
                     attempt)
        return state
