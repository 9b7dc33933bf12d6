"""Cluster summary and topology info documents (what ``stormpy list`` / ``info`` print).

Per-component statistics are summed over the heartbeats of the topology's *assigned* workers.
Counters are added up; ``latency_sum``/``latency_count`` pairs (when workers send them) give
``complete_latency_ms``; otherwise a worker's ``complete_latency_ms`` is averaged weighted by its
``acked`` count. System components (``__acker`` ...) are reported under ``system_components``.
Metrics components registered (``context.register_metric``) are listed under ``metrics`` as
component → task id (a string) → metric name → value, from the same heartbeats; tuples emitted
per stream under ``streams`` (component → stream → tuples, system streams included); the
sampled-tuple settings (StormBase ``component_debug``) under ``debug``. Workers' restarts
and last exits come from the supervisors' records (``SupervisorInfo.workers``, see
:func:`slot_exits`); a worker that keeps exiting makes its topology ``degraded``. Every Nimbus
running is listed with its status (:func:`nimbus_summaries`). Every value is msgpack-ready.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from stormpy.cluster import Assignment, ErrorInfo, StormBase, SupervisorInfo, WorkerHeartbeat
from stormpy.topology._layout import TaskLayout

__all__ = ["aggregate_stats", "cluster_summary", "crash_loops", "nimbus_summaries", "slot_exits",
           "supervisor_summary", "topology_info", "topology_summary"]

_LATENCY = "complete_latency_ms"
_COUNTERS = ("emitted", "transferred", "executed", "acked", "failed")


def aggregate_stats(beats: Iterable[WorkerHeartbeat]) -> dict[str, dict[str, Any]]:
    """component → summed counters (see the module docstring)."""
    sums: dict[str, dict[str, float]] = {}
    weighted: dict[str, list[float]] = {}
    for beat in beats:
        for component, counters in beat.stats.items():
            total = sums.setdefault(component, {c: 0 for c in _COUNTERS})
            for key, value in counters.items():
                if key == _LATENCY:
                    weight = float(counters.get("acked", 0) or 0)
                    acc = weighted.setdefault(component, [0.0, 0.0])
                    acc[0] += float(value) * weight
                    acc[1] += weight
                elif isinstance(value, int | float) and not isinstance(value, bool):
                    total[key] = total.get(key, 0) + value
    out: dict[str, dict[str, Any]] = {}
    for component, total in sums.items():
        doc: dict[str, Any] = dict(total)
        count = doc.pop("latency_count", 0)
        lat_sum = doc.pop("latency_sum", 0.0)
        if count:
            doc[_LATENCY] = round(1000.0 * lat_sum / count, 3)
        elif weighted.get(component, [0, 0])[1]:
            acc = weighted[component]
            doc[_LATENCY] = round(acc[0] / acc[1], 3)
        else:
            doc[_LATENCY] = None
        for key in ("tasks",):
            if key in doc:
                doc[key] = int(doc[key])
        out[component] = doc
    return out


def nimbus_summaries(records: Mapping[str, Mapping[str, Any]], this: Mapping[str, Any],
                     leader_address: str | None, now: float) -> list[dict[str, Any]]:
    """Every running Nimbus (the records they registered in ZooKeeper, and ``this`` one's own
    summary whether or not its record is there), leader first: ``id``, ``host``, ``port``,
    ``version``, ``leader`` (``this`` one's own flag; another's ``host:port`` is
    ``leader_address``), ``status`` (Storm's
    ``Leader`` / ``Not a Leader``), ``start_time`` and ``uptime_secs``."""
    by_id = {nid: dict(doc) for nid, doc in records.items()}
    if this.get("id"):
        by_id[str(this["id"])] = {**by_id.get(str(this["id"]), {}), **this}
    out = []
    for nid, doc in by_id.items():
        if nid == this.get("id"):  # this Nimbus knows whether it leads (a record's flag may be stale)
            leader = bool(this.get("leader"))
        else:
            leader = leader_address is not None and f"{doc.get('host')}:{doc.get('port')}" == leader_address
        started = doc.get("start_time")
        out.append({"id": nid, "host": doc.get("host"), "port": doc.get("port"),
                    "version": doc.get("version"), "leader": leader,
                    "status": "Leader" if leader else "Not a Leader", "start_time": started,
                    "uptime_secs": round(max(0.0, now - float(started)), 1)
                    if isinstance(started, int | float) else None})
    return sorted(out, key=lambda n: (not n["leader"], str(n["host"]), int(n["port"] or 0)))


def supervisor_summary(info: SupervisorInfo, used_slots: int, now: float) -> dict[str, Any]:
    return {"id": info.supervisor_id, "host": info.host, "ports": list(info.ports),
            "slots_total": len(info.ports), "slots_used": used_slots,
            "uptime_secs": round(max(0.0, now - info.start_time), 1), "version": info.version,
            "stats": dict(info.stats), "logviewer_port": info.logviewer_port}


SlotExits = Mapping[tuple[str, int], Mapping[str, Any]]


def slot_exits(supervisors: Mapping[str, SupervisorInfo], assignment: Assignment | None) -> dict[
        tuple[str, int], Mapping[str, Any]]:
    """(node, port) → the supervisor's record of that worker slot (``SupervisorInfo.workers``:
    restarts, last exit, crash loop) for the slots ``assignment`` gives its topology."""
    if assignment is None:
        return {}
    out: dict[tuple[str, int], Mapping[str, Any]] = {}
    for node, port in assignment.workers():
        info = supervisors.get(node)
        for record in info.workers if info is not None else ():
            if record.get("port") == port and record.get("topology_id") == assignment.topology_id:
                out[(node, port)] = record
    return out


def crash_loops(assignment: Assignment | None, exits: SlotExits) -> str | None:
    """Why the topology's workers do not run: each slot whose worker keeps exiting soon after
    its launch, with its restarts and last exit reason (None when none does)."""
    looping = []
    for (node, port), record in sorted(exits.items()):
        if record.get("crash_looping"):
            host = assignment.node_host.get(node, node) if assignment is not None else node
            looping.append(f"the worker on {host}:{port} keeps exiting (restarted {record.get('restarts')} "
                           f"times; last: {record.get('last_exit') or 'unknown'})")
    return "; ".join(looping) or None


def topology_summary(base: StormBase, assignment: Assignment | None, now: float,
                     degraded: str | None = None, exits: SlotExits | None = None) -> dict[str, Any]:
    """One topology's summary; ``degraded`` is why it cannot be (re)scheduled (None when it can),
    to which workers that keep exiting are added (``exits``: :func:`slot_exits`);
    ``worker_restarts`` sums the restarts of its workers' slots. ``num_executors`` and
    ``num_tasks`` count what the assignment runs, system components (the ackers) included, as
    Storm's ``TopologySummary`` does (0 while nothing is assigned)."""
    workers = assignment.workers() if assignment is not None else {}
    exits = exits or {}
    degraded = "; ".join(r for r in (degraded, crash_loops(assignment, exits)) if r) or None
    return {"id": base.topology_id, "name": base.name, "status": base.status,
            "num_workers": len(workers), "requested_workers": base.num_workers,
            "num_executors": len(assignment.executors) if assignment is not None else 0,
            "num_tasks": sum(end - start + 1 for start, end in assignment.executors)
            if assignment is not None else 0,
            "uptime_secs": round(max(0.0, now - base.launch_time), 1), "owner": base.owner,
            "worker_restarts": sum(int(r.get("restarts") or 0) for r in exits.values()),
            "degraded": degraded}


def cluster_summary(nimbus: Mapping[str, Any], supervisors: Mapping[str, SupervisorInfo],
                    bases: Mapping[str, StormBase], assignments: Mapping[str, Assignment],
                    now: float, degraded: Mapping[str, str | None] | None = None,
                    nimbuses: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The ``get_cluster_info`` document (``degraded``: topology id → reason, see
    :func:`topology_summary`; ``nimbuses``: :func:`nimbus_summaries`, this Nimbus alone when
    not given)."""
    used: dict[str, set[int]] = {}
    for assignment in assignments.values():
        for node, port in assignment.executors.values():
            used.setdefault(node, set()).add(port)
    return {
        "nimbus": dict(nimbus),
        "nimbuses": nimbuses if nimbuses is not None else nimbus_summaries({}, nimbus, None, now),
        "supervisors": [supervisor_summary(info, len(used.get(sid, ())), now)
                        for sid, info in sorted(supervisors.items())],
        "topologies": [topology_summary(base, assignments.get(tid), now, (degraded or {}).get(tid),
                                        slot_exits(supervisors, assignments.get(tid)))
                       for tid, base in sorted(bases.items(), key=lambda kv: kv[1].name)],
    }


def topology_info(base: StormBase, assignment: Assignment | None, layout: TaskLayout | None,
                  beats: Mapping[tuple[str, int], WorkerHeartbeat], errors: Mapping[str, list[ErrorInfo]],
                  now: float, degraded: str | None = None,
                  supervisors: Mapping[str, SupervisorInfo] | None = None, *,
                  warnings: Sequence[str] = ()) -> dict[str, Any]:
    """The ``get_topology_info`` document; each worker with its slot's ``restarts`` and
    ``last_exit`` (from ``supervisors``' records, see :func:`slot_exits`); ``warnings``: the
    submit check's, stored with the topology's config."""
    exits = slot_exits(supervisors or {}, assignment)
    doc = topology_summary(base, assignment, now, degraded, exits)
    workers = []
    assigned_beats = []
    for (node, port), executors in (assignment.workers() if assignment is not None else {}).items():
        beat = beats.get((node, port))
        if beat is not None:
            assigned_beats.append(beat)
        record = exits.get((node, port), {})
        workers.append({"node": node, "host": assignment.node_host.get(node, "") if assignment else "",
                        "port": port, "executors": [list(e) for e in executors],
                        "uptime_secs": round(beat.uptime, 1) if beat is not None else None,
                        "heartbeat_age_secs": round(max(0.0, now - beat.time), 1) if beat is not None
                        else None,
                        "restarts": int(record.get("restarts") or 0), "last_exit": record.get("last_exit"),
                        "crash_looping": bool(record.get("crash_looping"))})
    stats = aggregate_stats(assigned_beats)
    metrics: dict[str, dict[str, Any]] = {}
    streams: dict[str, dict[str, int]] = {}
    for beat in assigned_beats:
        for component, by_task in beat.metrics.items():
            metrics.setdefault(component, {}).update(by_task)
        for entry in beat.tasks:
            emitted = entry.get("emitted") if isinstance(entry, dict) else None
            if isinstance(emitted, dict) and isinstance(entry.get("component"), str):
                per_stream = streams.setdefault(entry["component"], {})
                for stream, n in emitted.items():
                    if isinstance(n, int):
                        per_stream[stream] = per_stream.get(stream, 0) + n
    components: dict[str, Any] = {}
    if layout is not None:
        for component, tasks in layout.component_tasks.items():
            n_exec = sum(1 for e in layout.executors if e.component == component)
            components[component] = {"tasks": len(tasks), "executors": n_exec,
                                     "task_ids": sorted(tasks)}
    user = {c: s for c, s in stats.items() if not c.startswith("__")}
    system = {c: s for c, s in stats.items() if c.startswith("__")}
    doc.update({
        "workers": workers,
        "warnings": list(warnings),
        "components": components,
        "stats": user,
        "system_components": system,
        "streams": {c: dict(sorted(s.items())) for c, s in sorted(streams.items())},
        "debug": {k: dict(v) for k, v in base.component_debug.items()},
        "metrics": {c: dict(sorted(t.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else 0))
                    for c, t in sorted(metrics.items())},
        "errors": {component: [{"time": e.time, "task": e.task, "host": e.host, "port": e.port,
                                "message": e.message} for e in errs[-5:]]
                   for component, errs in sorted(errors.items())},
    })
    return doc
