"""Writing a submitted topology, all or nothing.

Contract: :func:`prepare_submission` checks the topology's config (the submit check of
:mod:`stormpy.config.validate`), resolves it (``topology.name``,
``topology.workers``, ``topology.acker.executors``), checks its size limits
(:func:`~stormpy.nimbus.validation.check_topology_limits`) and lays it out, before anything is
written. :func:`write_submission` then writes, in this order: the marker ``submitting/<id>``, the
bundle into the store, the StormBase (``inactive``), the assignment (``schedule``), runs
``before_activate`` (the replication wait), sets ``active`` unless submitted inactive, and removes the
marker (the commit point). Every znode is checked against ``storm.zookeeper.jute.maxbuffer``
(:func:`check_znode`) before it is written. On any failure the caller runs
:func:`roll_back_submission`, which removes whatever was written; a Nimbus that takes over as
leader rolls back every topology still marked, so a leader dying mid-submit leaves nothing
half-written either.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from stormpy.cluster import Assignment, ClusterState, StormBase
from stormpy.cluster.records import encode
from stormpy.config import SettingError, setting
from stormpy.config.validate import SUBMIT_WARNINGS_KEY, check_topology_config
from stormpy.nimbus.leader_records import TopologyRecords
from stormpy.nimbus.store import BundleStore
from stormpy.nimbus.uploads import StagedBundle
from stormpy.nimbus.validation import check_topology_limits, limit
from stormpy.rpc.errors import TopologyRefusedError
from stormpy.topology._errors import InvalidTopologyError
from stormpy.topology._layout import TaskLayout, acker_count, compute_layout
from stormpy.topology._spec import TopologySpec

__all__ = ["check_znode", "prepare_submission", "roll_back_submission", "write_submission"]

log = logging.getLogger(__name__)


def check_znode(nimbus_conf: Mapping[str, Any], record: Any, what: str) -> None:
    """TopologyRefusedError when ``record`` would encode beyond ZooKeeper's jute.maxbuffer."""
    allowed = limit(nimbus_conf, "storm.zookeeper.jute.maxbuffer")
    size = len(encode(record))
    if size > allowed:
        raise TopologyRefusedError(f"{what} would be {size} bytes in ZooKeeper, beyond "
                                   f"storm.zookeeper.jute.maxbuffer ({allowed}); use fewer workers or "
                                   "executors")


def prepare_submission(name: str, spec: TopologySpec, conf: Mapping[str, Any],
                       nimbus_conf: Mapping[str, Any]) -> tuple[dict[str, Any], TaskLayout]:
    """(the topology config as stored, its layout); TopologyRefusedError when it is refused.

    The config passes the submit check first (:func:`~stormpy.config.validate.check_topology_config`,
    the same as local mode and the submitting client); its warnings are stored with the config as
    ``topology.submit.warnings`` (``get_topology_info`` shows them)."""
    try:
        warnings = check_topology_config(conf, spec.components, nimbus_conf)
    except SettingError as exc:
        raise TopologyRefusedError(f"topology {name!r} refused: {exc}") from None
    topo_conf = dict(conf)
    topo_conf["topology.name"] = name
    topo_conf["topology.workers"] = setting(topo_conf, "topology.workers")
    topo_conf["topology.acker.executors"] = acker_count(topo_conf)
    if warnings:
        topo_conf[SUBMIT_WARNINGS_KEY] = warnings
        for warning in warnings:
            log.warning("topology %s: %s", name, warning)
    check_topology_limits(name, spec, topo_conf, nimbus_conf)
    try:
        layout = compute_layout(spec, topo_conf)
    except (InvalidTopologyError, ValueError) as exc:
        raise TopologyRefusedError(f"cannot lay out topology {name!r}: {exc}") from None
    return topo_conf, layout


def write_submission(state: ClusterState, records: TopologyRecords, store: BundleStore,
                     nimbus_conf: Mapping[str, Any],
                     topology_id: str, name: str, staged: StagedBundle, spec: TopologySpec,
                     topo_conf: dict[str, Any], layout: TaskLayout, now: float, initial_status: str, *,
                     remember: Callable[[tuple[TopologySpec, dict[str, Any]]], None],
                     schedule: Callable[[], Assignment | None],
                     before_activate: Callable[[str], None] | None) -> None:
    """Write the topology (see the module contract); ``remember`` gets the description once the
    StormBase is written (the manager's cache), ``schedule`` writes its assignment; the StormBase
    is written through ``records``, the submission marker through ``state``."""
    state.mark_submitting(topology_id)
    store.install(topology_id, staged, spec.to_doc(), topo_conf)
    executors_per_component: dict[str, int] = {}
    for executor in layout.executors:
        executors_per_component[executor.component] = executors_per_component.get(executor.component, 0) + 1
    base = StormBase(topology_id=topology_id, name=name, status="inactive",
                     num_workers=int(topo_conf["topology.workers"]), launch_time=now,
                     owner=str(setting(topo_conf, "topology.submitter.user") or ""),
                     component_executors=executors_per_component)
    check_znode(nimbus_conf, base, f"the StormBase of topology {name!r}")
    records.set_storm_base(base)
    remember((spec, topo_conf))
    if schedule() is None:
        log.warning("topology %s submitted but no supervisor slot is free; it will be scheduled "
                    "when slots appear", topology_id)
    if before_activate is not None:
        before_activate(topology_id)
    if initial_status == "active":
        records.set_storm_base(replace(base, status="active"))
    state.clear_submitting(topology_id)  # the commit point


def roll_back_submission(records: TopologyRecords, store: BundleStore, topology_id: str) -> None:
    """Remove whatever a failed submission wrote (best effort; failures are logged).

    The StormBase goes first (the submission marker, removed last, still lets a new leader redo an
    interrupted roll-back): a standby Nimbus that registers its replica of the bundle while this
    runs then either has its node removed with the rest or, checking the StormBase after writing
    it, finds none and removes the node itself
    (:meth:`stormpy.nimbus.replication.Replicator.register`)."""
    for what, undo in (("StormBase", lambda: records.remove_storm_base(topology_id)),
                       ("ZooKeeper state", lambda: records.remove_topology(topology_id)),
                       ("stored bundle", lambda: store.remove(topology_id))):
        try:
            undo()
        except Exception as exc:  # the original failure is what the caller must see
            log.error("rolling back topology %s: cannot remove its %s: %s", topology_id, what, exc)
    log.info("submission of %s rolled back", topology_id)
