"""Checks of a submitted topology before Nimbus writes anything: its name, its config and its size.

Every check raises :class:`~stormpy.rpc.errors.TopologyRefusedError` naming what was wrong (the
key, the limit and its setting), so the submitter sees why over the wire.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgpack

from stormpy.config import setting
from stormpy.rpc.errors import TopologyRefusedError
from stormpy.topology._errors import InvalidTopologyError
from stormpy.topology._layout import acker_count
from stormpy.topology._spec import TopologySpec, check_name, check_topology_name

__all__ = ["check_topology_limits", "limit", "validate_topology_conf", "validate_topology_name"]


def validate_topology_name(name: Any) -> str:
    """``name`` when it is a usable topology name (:func:`stormpy.topology._spec.check_topology_name`);
    TopologyRefusedError otherwise."""
    try:
        return check_topology_name(name)
    except InvalidTopologyError as exc:
        raise TopologyRefusedError(str(exc)) from None


def validate_topology_conf(conf: Any) -> dict[str, Any]:
    """A copy of the submitted topology config when it is plain data (a map of well-formed key
    names to what msgpack carries); TopologyRefusedError naming the bad key. The values are
    checked by the submit check (:func:`stormpy.nimbus.submission.prepare_submission`)."""
    if conf is None:
        return {}
    if not isinstance(conf, Mapping) or not all(isinstance(k, str) for k in conf):
        raise TopologyRefusedError("topology config must be a map with string keys")
    for key in conf:
        try:
            check_name(key, "topology config key")
        except InvalidTopologyError as exc:
            raise TopologyRefusedError(str(exc)) from None
    try:
        msgpack.packb(dict(conf), use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise TopologyRefusedError(f"topology config must be plain data: {exc}") from None
    return dict(conf)


def limit(conf: Mapping[str, Any], key: str) -> int:
    """The integer setting ``key`` of Nimbus's ``conf`` (its default when unset)."""
    return int(setting(conf, key))


def check_topology_limits(name: str, spec: TopologySpec, topo_conf: Mapping[str, Any],
                          nimbus_conf: Mapping[str, Any]) -> None:
    """TopologyRefusedError when the topology asks for more workers, executors or tasks than
    Nimbus allows (``nimbus.slots.perTopology``, ``nimbus.executors.perTopology``,
    ``nimbus.tasks.perTopology``); computed from the spec, before any layout is built."""
    workers = int(setting(topo_conf, "topology.workers"))
    ackers = acker_count(topo_conf)
    tasks = sum(c.num_tasks for c in spec.components.values()) + ackers
    executors = sum(c.num_executors for c in spec.components.values()) + ackers
    for count, key, what in ((workers, "nimbus.slots.perTopology", "workers (topology.workers)"),
                             (executors, "nimbus.executors.perTopology", "executors"),
                             (tasks, "nimbus.tasks.perTopology", "tasks")):
        allowed = limit(nimbus_conf, key)
        if count > allowed:
            raise TopologyRefusedError(f"topology {name!r} asks for {count} {what}; this Nimbus allows at "
                                       f"most {allowed} ({key})")
