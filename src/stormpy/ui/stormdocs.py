"""The REST documents, with the field names of Storm's UI REST API (``/api/v1``).

Inputs are what :class:`~stormpy.ui.source.UiBackend` reads: Nimbus's ``get_cluster_info`` /
``get_topology_info`` documents (:mod:`stormpy.nimbus.info`), the topology's spec document and the
windowed per-task counters of :mod:`stormpy.ui.windows`. Counters are ints; latencies and capacity
are strings with three decimals, as Storm's UI sends them. A figure stormpy does not measure is
left out, never invented (docs/operations.md lists them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy.config import DEFAULTS
from stormpy.ui.windows import (
    WINDOWS,
    Counters,
    TaskKey,
    emitted,
    latency_ms,
    per_component,
    stream_counts,
    window_pretty,
)
from stormpy.worker.stats import capacity as capacity_of

#: window → (per-task counters, seconds they cover)
PerWindow = Mapping[str, tuple[dict[TaskKey, Counters], float]]

__all__ = ["busiest", "capacity", "cluster_summary", "component_doc", "duration", "executor_counters",
           "nimbus_summary", "supervisor_summary", "topology_doc", "topology_summary",
           "topology_workers", "visualization"]


def duration(secs: float | None) -> str:
    """Storm's ``uptime`` text: ``"1d 2h 3m 4s"`` without leading zero units."""
    total = int(secs or 0)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m")]
    while parts and parts[0][0] == 0:
        parts.pop(0)
    return " ".join(f"{n}{u}" for n, u in [*parts, (seconds, "s")])


def _ms(value: float | None) -> str:
    return f"{value or 0.0:.3f}"


def nimbus_summary(cluster: Mapping[str, Any]) -> dict[str, Any]:
    """``GET /api/v1/nimbus/summary``: every running Nimbus with its status (``Leader`` / ``Not a
    Leader``) and uptime (``cluster["nimbuses"]``; the answering Nimbus alone, as the leader, from a
    Nimbus that does not list them)."""
    listed = cluster.get("nimbuses")
    if listed is None:
        listed = [{**cluster.get("nimbus", {}), "status": "Leader"}]
    out = []
    for n in listed:
        up = float(n.get("uptime_secs") or 0)
        out.append({"host": n.get("host"), "port": n.get("port"), "status": n.get("status"),
                    "version": n.get("version"), "nimbusUpTime": duration(up),
                    "nimbusUpTimeSeconds": int(up)})
    return {"nimbuses": out}


def supervisor_summary(cluster: Mapping[str, Any]) -> dict[str, Any]:
    return {"supervisors": [{"id": s["id"], "host": s["host"], "uptime": duration(s["uptime_secs"]),
                             "uptimeSeconds": int(s["uptime_secs"]), "slotsTotal": s["slots_total"],
                             "slotsUsed": s["slots_used"], "slotsFree": s["slots_total"] - s["slots_used"],
                             "version": s.get("version"), "ports": list(s.get("ports", []))}
                            for s in cluster.get("supervisors", [])]}


def _topology_row(t: Mapping[str, Any], tasks: int | None = None) -> dict[str, Any]:
    row = {"id": t["id"], "encodedId": t["id"], "name": t["name"], "status": t["status"].upper(),
           "uptime": duration(t["uptime_secs"]), "uptimeSeconds": int(t["uptime_secs"]),
           "workersTotal": t["num_workers"], "executorsTotal": t["num_executors"],
           "requestedWorkers": t.get("requested_workers"), "owner": t.get("owner", ""),
           # stormpy's own: restarts of its workers, and why the topology cannot be (re)scheduled
           # or its workers keep exiting (None when nothing is wrong)
           "workerRestarts": t.get("worker_restarts"), "degraded": t.get("degraded")}
    if tasks is not None:
        row["tasksTotal"] = tasks
    return row


def spec_tasks(spec: Mapping[str, Any]) -> dict[str, int]:
    """component → task count, from the spec document."""
    return {c: int(d.get("tasks") or d.get("parallelism") or 1)
            for c, d in spec.get("components", {}).items()}


def topology_summary(cluster: Mapping[str, Any], tasks: Mapping[str, int]) -> dict[str, Any]:
    """``tasks``: topology id → task count (when known)."""
    return {"topologies": [_topology_row(t, tasks.get(t["id"])) for t in cluster.get("topologies", [])]}


def cluster_summary(cluster: Mapping[str, Any], version: str, tasks: Mapping[str, int]) -> dict[str, Any]:
    sups = cluster.get("supervisors", [])
    total = sum(s["slots_total"] for s in sups)
    used = sum(s["slots_used"] for s in sups)
    tops = cluster.get("topologies", [])
    return {"stormVersion": version, "supervisors": len(sups), "topologies": len(tops),
            "slotsTotal": total, "slotsUsed": used, "slotsFree": total - used,
            "executorsTotal": sum(t["num_executors"] for t in tops),
            "tasksTotal": sum(tasks.get(t["id"], 0) for t in tops),
            "nimbusUptime": duration(cluster.get("nimbus", {}).get("uptime_secs")),
            "nimbusUptimeSeconds": int(cluster.get("nimbus", {}).get("uptime_secs") or 0)}


# -- per-component statistics --------------------------------------------------------------------------
def capacity(c: Counters, span: float) -> float | None:
    """Storm's capacity of one executor from its counters over ``span`` seconds: executed times
    the sampled mean execute latency over the span; None without a timed tuple."""
    return capacity_of(c.get("executed", 0.0), latency_ms(c, "execute_latency"), span)


def component_stats(kind: str, c: Counters, span: float,
                    busiest: float | None = None) -> dict[str, Any]:
    """Storm's per-component figures from summed counters over ``span`` seconds. A bolt's
    ``capacity`` is ``busiest`` when given (the component's busiest executor, as Storm shows
    it), else computed from ``c`` (one executor's counters)."""
    out: dict[str, Any] = {"emitted": int(emitted(c)), "transferred": int(c.get("transferred", 0)),
                           "acked": int(c.get("acked", 0)), "failed": int(c.get("failed", 0))}
    if kind == "spout":
        out["completeLatency"] = _ms(latency_ms(c))
    else:
        out["executed"] = int(c.get("executed", 0))
        execute = latency_ms(c, "execute_latency")
        if execute is not None:
            out["executeLatency"] = _ms(execute)
            cap = busiest if busiest is not None else capacity(c, span)
            out["capacity"] = f"{cap or 0.0:.3f}"
        process = latency_ms(c, "process_latency")
        if process is not None:
            out["processLatency"] = _ms(process)
    return out


def executor_counters(info: Mapping[str, Any], component: str,
                      totals: Mapping[TaskKey, Counters]) -> list[Counters]:
    """The counters of each executor of ``component`` (its tasks summed per executor range of
    ``info["workers"]``); per task when the topology info has no executors for them."""
    mine = {task: c for (comp, task), c in totals.items() if comp == component}
    out: list[Counters] = []
    seen: set[int] = set()
    for w in info.get("workers", []):
        for start, end in w["executors"]:
            tasks = [task for task in mine if start <= task <= end]
            if tasks:
                seen.update(tasks)
                out.append(per_component({("x", t): mine[t] for t in tasks}).get("x", {}))
    out.extend(c for task, c in mine.items() if task not in seen)
    return out


def busiest(info: Mapping[str, Any], component: str, totals: Mapping[TaskKey, Counters],
            span: float) -> float | None:
    """The highest executor capacity of ``component`` (None when no executor has a latency)."""
    caps = [cap for c in executor_counters(info, component, totals)
            if (cap := capacity(c, span)) is not None]
    return max(caps) if caps else None


def _last_error(errors: Mapping[str, list[Mapping[str, Any]]], component: str, now: float) -> dict[str, Any]:
    errs = errors.get(component) or []
    if not errs:
        return {"lastError": "", "errorHost": "", "errorPort": "", "errorLapsedSecs": None}
    e = errs[-1]
    return {"lastError": e["message"], "errorHost": e["host"], "errorPort": e["port"],
            "errorTime": e["time"], "errorLapsedSecs": int(max(0.0, now - float(e["time"])))}


def _kinds(spec: Mapping[str, Any]) -> dict[str, str]:
    return {c: str(d.get("kind")) for c, d in spec.get("components", {}).items()}


def topology_stats(spec: Mapping[str, Any], per_window: PerWindow) -> list[dict[str, Any]]:
    """``topologyStats``: one row per window (spouts' acked/failed/complete latency, every user
    component's emitted/transferred)."""
    kinds = _kinds(spec)
    rows = []
    for window in WINDOWS:
        totals, _span = per_window[window]
        comps = per_component(totals)
        spouts = [c for name, c in comps.items() if kinds.get(name) == "spout"]
        user = [c for name, c in comps.items() if not name.startswith("__")]
        lat_sum = sum(c.get("latency_sum", 0.0) for c in spouts)
        lat_n = sum(c.get("latency_count", 0.0) for c in spouts)
        rows.append({"window": window, "windowPretty": window_pretty(window),
                     "emitted": int(sum(emitted(c) for c in user)),
                     "transferred": int(sum(c.get("transferred", 0) for c in user)),
                     "acked": int(sum(c.get("acked", 0) for c in spouts)),
                     "failed": int(sum(c.get("failed", 0) for c in spouts)),
                     "completeLatency": _ms(1000.0 * lat_sum / lat_n if lat_n else None)})
    return rows


def topology_doc(info: Mapping[str, Any], spec: Mapping[str, Any], conf: Mapping[str, Any], window: str,
                 per_window: PerWindow, now: float) -> dict[str, Any]:
    """``GET /api/v1/topology/:id``. ``configuration`` is the effective configuration (the
    defaults with the topology's own settings over them), so ``msgTimeout`` is the timeout in force."""
    conf = {**DEFAULTS, **conf}
    totals, span = per_window[window]
    comps = per_component(totals)
    tasks = spec_tasks(spec)
    doc = _topology_row(info, sum(tasks.values()))
    doc.update({"window": window, "windowHint": window_pretty(window),
                "msgTimeout": conf.get("topology.message.timeout.secs"),
                "topologyStats": topology_stats(spec, per_window), "spouts": [], "bolts": [],
                "configuration": dict(conf), "workers": _workers(info)})
    errors = info.get("errors", {})
    for name, kind in sorted(_kinds(spec).items()):
        row = {"executors": info.get("components", {}).get(name, {}).get("executors"),
               "tasks": tasks.get(name),
               **component_stats(kind, comps.get(name, {}), span, busiest(info, name, totals, span)),
               **_last_error(errors, name, now)}
        if kind == "spout":
            doc["spouts"].append({"spoutId": name, "encodedSpoutId": name, **row})
        else:
            doc["bolts"].append({"boltId": name, "encodedBoltId": name, **row})
    return doc


def topology_workers(info: Mapping[str, Any]) -> dict[str, Any]:
    """``GET /api/v1/topology-workers/:id``: the topology's workers as ``hostPortList`` (Storm's
    ``logviewerPort`` is left out: stormpy has no logviewer)."""
    return {"hostPortList": [{"host": w["host"], "port": w["port"]} for w in info.get("workers", [])]}


def _workers(info: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"host": w["host"], "port": w["port"], "supervisorId": w["node"],
             "executors": [list(e) for e in w["executors"]],
             "uptime": duration(w["uptime_secs"]) if w.get("uptime_secs") is not None else None,
             "uptimeSeconds": int(w["uptime_secs"]) if w.get("uptime_secs") is not None else None,
             # stormpy's own: the slot's restarts and last exit, as its supervisor publishes them
             "restarts": w.get("restarts"), "lastExit": w.get("last_exit"),
             "crashLooping": bool(w.get("crash_looping"))}
            for w in info.get("workers", [])]


def component_doc(info: Mapping[str, Any], spec: Mapping[str, Any], component: str, window: str,
                  per_window: PerWindow, now: float) -> dict[str, Any]:
    """``GET /api/v1/topology/:id/component/:component`` (the component must be in ``spec``)."""
    kind = _kinds(spec)[component]
    totals, span = per_window[window]
    mine = {key: c for key, c in totals.items() if key[0] == component}
    summed = per_component(mine).get(component, {})
    doc: dict[str, Any] = {
        "id": component, "name": info["name"], "componentType": kind, "topologyId": info["id"],
        "encodedTopologyId": info["id"], "topologyStatus": info["status"].upper(), "window": window,
        "windowHint": window_pretty(window), "tasks": spec_tasks(spec).get(component),
        "executors": info.get("components", {}).get(component, {}).get("executors"),
    }
    rows = []
    for w in WINDOWS:
        wt, wspan = per_window[w]
        c = per_component({k: v for k, v in wt.items() if k[0] == component}).get(component, {})
        rows.append({"window": w, "windowPretty": window_pretty(w),
                     **component_stats(kind, c, wspan, busiest(info, component, wt, wspan))})
    doc["spoutSummary" if kind == "spout" else "boltStats"] = rows
    doc["outputStats"] = [{"stream": stream, "emitted": int(n),
                           "transferred": int(n * len(subscribers(spec, component, stream)))}
                          for stream, n in sorted(stream_counts(summed).items())
                          if not stream.startswith("__")]
    if kind == "bolt":
        doc["inputStats"] = [{"component": i["component"], "encodedComponent": i["component"],
                              "stream": i["stream"], "grouping": _grouping(i)}
                             for i in spec["components"][component].get("inputs", [])]
    doc["executorStats"] = _executor_rows(info, kind, mine, span)
    doc["componentErrors"] = [{"time": e["time"], "errorTime": e["time"], "errorHost": e["host"],
                               "errorPort": e["port"], "error": e["message"], "task": e["task"],
                               "errorLapsedSecs": int(max(0.0, now - float(e["time"])))}
                              for e in reversed(info.get("errors", {}).get(component, []))]
    return doc


def _executor_rows(info: Mapping[str, Any], kind: str, mine: Mapping[TaskKey, Counters],
                   span: float) -> list[dict[str, Any]]:
    rows = []
    for w in info.get("workers", []):
        for start, end in w["executors"]:
            tasks = [c for (_comp, task), c in mine.items() if start <= task <= end]
            if not tasks:
                continue
            summed = per_component({("x", i): c for i, c in enumerate(tasks)}).get("x", {})
            up = w.get("uptime_secs")
            rows.append({"id": f"[{start}-{end}]", "encodedId": f"{start}-{end}", "host": w["host"],
                         "port": w["port"], "supervisorId": w["node"],
                         "uptime": duration(up) if up is not None else None,
                         "uptimeSeconds": int(up) if up is not None else None,
                         **component_stats(kind, summed, span)})
    return rows


def subscribers(spec: Mapping[str, Any], component: str, stream: str) -> list[str]:
    return sorted(b for b, d in spec.get("components", {}).items()
                  for i in d.get("inputs", []) if i["component"] == component and i["stream"] == stream)


def _grouping(inp: Mapping[str, Any]) -> str:
    g = inp.get("grouping") or {}
    return str(g.get("type", "")) if isinstance(g, Mapping) else str(g)


def visualization(spec: Mapping[str, Any], info: Mapping[str, Any], totals: Mapping[TaskKey, Counters],
                  span: float) -> dict[str, Any]:
    """``GET /api/v1/topology/:id/visualization``: Storm's ``:``-keyed component map, each input
    with the stream's tuples over the window (``:emitted``) and per second (``:rate``)."""
    comps = per_component(totals)
    out: dict[str, Any] = {}
    for name, d in sorted(spec.get("components", {}).items()):
        c = comps.get(name, {})
        stats = component_stats(str(d.get("kind")), c, span, busiest(info, name, totals, span))
        entry: dict[str, Any] = {":type": d.get("kind"), ":transferred": stats["transferred"],
                                 ":emitted": stats["emitted"], ":acked": stats["acked"],
                                 ":failed": stats["failed"], ":link": f"/component.html?topology_id="
                                 f"{info['id']}&id={name}", ":inputs": []}
        if "capacity" in stats:
            entry[":capacity"] = stats["capacity"]
        if "completeLatency" in stats:
            entry[":latency"] = stats["completeLatency"]
        elif "executeLatency" in stats:
            entry[":latency"] = stats["executeLatency"]
        for inp in d.get("inputs", []):
            source = comps.get(inp["component"], {})
            n = stream_counts(source).get(inp["stream"], 0.0)
            entry[":inputs"].append({":component": inp["component"], ":stream": inp["stream"],
                                     ":sani-stream": inp["stream"].replace("_", "-"),
                                     ":grouping": _grouping(inp), ":emitted": int(n),
                                     ":rate": round(n / span, 3)})
        out[name] = entry
    return out

