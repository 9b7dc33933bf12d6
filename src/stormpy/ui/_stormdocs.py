"""The REST documents, with the field names of Storm's UI REST API (``/api/v1``).

Inputs are what :class:`~stormpy.ui._source.UiBackend` reads: Nimbus's ``get_cluster_info`` /
``get_topology_info`` documents (:mod:`stormpy.nimbus.info`), the topology's spec document and the
figures of each window (:class:`~stormpy.ui._windows.WindowFigures`, which compute every count,
latency and capacity: these functions only name and format them). Counters are ints; latencies
and capacity are strings with three decimals, as Storm's UI sends them. A figure stormpy does not measure is
left out, never invented (docs/operations.md lists them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy.config import DEFAULTS
from stormpy.topology._user_metrics import KINDS
from stormpy.ui._windows import WINDOWS, ComponentFigures, WindowFigures

#: window → its figures
PerWindow = Mapping[str, WindowFigures]

__all__ = ["cluster_summary", "component_doc", "component_stats", "duration", "executor_ranges",
           "events_doc", "nimbus_summary", "supervisor_summary", "topology_doc", "topology_summary",
           "topology_workers", "user_metric_rows", "visualization"]


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


def _topology_row(t: Mapping[str, Any]) -> dict[str, Any]:
    """A topology's summary fields (``GET /api/v1/topology/summary``, the head of the topology
    page). ``executorsTotal`` and ``tasksTotal`` count what runs, ackers included, as Storm's UI
    does (Nimbus's ``num_executors`` and ``num_tasks``); ``tasksTotal`` is left out when the
    Nimbus does not send ``num_tasks`` (an older one)."""
    row = {"id": t["id"], "encodedId": t["id"], "name": t["name"], "status": t["status"].upper(),
           "uptime": duration(t["uptime_secs"]), "uptimeSeconds": int(t["uptime_secs"]),
           "workersTotal": t["num_workers"], "executorsTotal": t["num_executors"],
           "requestedWorkers": t.get("requested_workers"), "owner": t.get("owner", ""),
           # stormpy's own: restarts of its workers, and why the topology cannot be (re)scheduled
           # or its workers keep exiting (None when nothing is wrong)
           "workerRestarts": t.get("worker_restarts"), "degraded": t.get("degraded")}
    if t.get("num_tasks") is not None:
        row["tasksTotal"] = t["num_tasks"]
    return row


def spec_tasks(spec: Mapping[str, Any]) -> dict[str, int]:
    """component → task count, from the spec document."""
    return {c: int(d.get("tasks") or d.get("parallelism") or 1)
            for c, d in spec.get("components", {}).items()}


def topology_summary(cluster: Mapping[str, Any]) -> dict[str, Any]:
    return {"topologies": [_topology_row(t) for t in cluster.get("topologies", [])]}


def cluster_summary(cluster: Mapping[str, Any], version: str) -> dict[str, Any]:
    """``GET /api/v1/cluster/summary``: ``executorsTotal`` and ``tasksTotal`` are the sums of the
    topologies' (:func:`topology_summary`)."""
    sups = cluster.get("supervisors", [])
    total = sum(s["slots_total"] for s in sups)
    used = sum(s["slots_used"] for s in sups)
    tops = cluster.get("topologies", [])
    return {"stormVersion": version, "supervisors": len(sups), "topologies": len(tops),
            "slotsTotal": total, "slotsUsed": used, "slotsFree": total - used,
            "executorsTotal": sum(t["num_executors"] for t in tops),
            "tasksTotal": sum(int(t.get("num_tasks") or 0) for t in tops),
            "nimbusUptime": duration(cluster.get("nimbus", {}).get("uptime_secs")),
            "nimbusUptimeSeconds": int(cluster.get("nimbus", {}).get("uptime_secs") or 0)}


# -- per-component statistics --------------------------------------------------------------------------
def component_stats(kind: str, f: ComponentFigures) -> dict[str, Any]:
    """Storm's per-component (or per-executor) fields from its figures: a spout's complete
    latency; a bolt's executed, and its execute latency and capacity once a tuple was timed."""
    out: dict[str, Any] = {"emitted": f.emitted, "transferred": f.transferred, "acked": f.acked,
                           "failed": f.failed}
    if kind == "spout":
        out["completeLatency"] = _ms(f.complete_latency_ms)
    else:
        out["executed"] = f.executed
        if f.execute_latency_ms is not None:
            out["executeLatency"] = _ms(f.execute_latency_ms)
            out["capacity"] = f"{f.capacity or 0.0:.3f}"
        if f.process_latency_ms is not None:
            out["processLatency"] = _ms(f.process_latency_ms)
    return out


def executor_ranges(info: Mapping[str, Any]) -> list[tuple[int, int]]:
    """The executor task ranges of ``get_topology_info``'s workers (what
    :meth:`~stormpy.ui._windows.TopologyWindows.figures` takes)."""
    return [(int(start), int(end)) for w in info.get("workers", []) for start, end in w["executors"]]


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
    spouts = {name for name, kind in _kinds(spec).items() if kind == "spout"}
    rows = []
    for window in WINDOWS:
        figures = per_window[window]
        t = figures.topology(spouts)
        rows.append({"window": window, "windowPretty": figures.pretty, "emitted": t.emitted,
                     "transferred": t.transferred, "acked": t.acked, "failed": t.failed,
                     "completeLatency": _ms(t.complete_latency_ms)})
    return rows


def topology_doc(info: Mapping[str, Any], spec: Mapping[str, Any], conf: Mapping[str, Any], window: str,
                 per_window: PerWindow, now: float) -> dict[str, Any]:
    """``GET /api/v1/topology/:id``. ``configuration`` is the effective configuration (the
    defaults with the topology's own settings over them), so ``msgTimeout`` is the timeout in force."""
    conf = {**DEFAULTS, **conf}
    figures = per_window[window]
    tasks = spec_tasks(spec)
    doc = _topology_row(info)
    doc.update({"window": window, "windowHint": figures.pretty,
                "msgTimeout": conf.get("topology.message.timeout.secs"),
                "topologyStats": topology_stats(spec, per_window), "spouts": [], "bolts": [],
                "configuration": dict(conf), "workers": _workers(info),
                **_debug_fields(info, info["id"])})
    errors = info.get("errors", {})
    for name, kind in sorted(_kinds(spec).items()):
        row = {"executors": info.get("components", {}).get(name, {}).get("executors"),
               "tasks": tasks.get(name), **component_stats(kind, figures.component(name)),
               **_last_error(errors, name, now)}
        if kind == "spout":
            doc["spouts"].append({"spoutId": name, "encodedSpoutId": name, **row})
        else:
            doc["bolts"].append({"boltId": name, "encodedBoltId": name, **row})
    return doc


def topology_workers(info: Mapping[str, Any]) -> dict[str, Any]:
    """``GET /api/v1/topology-workers/:id``: the topology's workers as ``hostPortList`` (the app
    adds Storm's ``logviewerPort`` and a ``workerLogLink``, :mod:`stormpy.ui._operations`)."""
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
    figures = per_window[window]
    doc: dict[str, Any] = {
        "id": component, "name": info["name"], "componentType": kind, "topologyId": info["id"],
        "encodedTopologyId": info["id"], "topologyStatus": info["status"].upper(), "window": window,
        "windowHint": figures.pretty, "tasks": spec_tasks(spec).get(component),
        "executors": info.get("components", {}).get(component, {}).get("executors"),
        **_debug_fields(info, component),
    }
    doc["spoutSummary" if kind == "spout" else "boltStats"] = [
        {"window": w, "windowPretty": per_window[w].pretty,
         **component_stats(kind, per_window[w].component(component))} for w in WINDOWS]
    doc["outputStats"] = [{"stream": stream, "emitted": n,
                           "transferred": n * len(subscribers(spec, component, stream))}
                          for stream, n in sorted(figures.component(component).streams.items())
                          if not stream.startswith("__")]
    if kind == "bolt":
        doc["inputStats"] = [{"component": i["component"], "encodedComponent": i["component"],
                              "stream": i["stream"], "grouping": _grouping(i)}
                             for i in spec["components"][component].get("inputs", [])]
    doc["executorStats"] = _executor_rows(info, kind, component, figures)
    doc["componentErrors"] = [{"time": e["time"], "errorTime": e["time"], "errorHost": e["host"],
                               "errorPort": e["port"], "error": e["message"], "task": e["task"],
                               "errorLapsedSecs": int(max(0.0, now - float(e["time"])))}
                              for e in reversed(info.get("errors", {}).get(component, []))]
    doc["userMetrics"] = user_metric_rows(info, component)
    return doc


def _debug_fields(info: Mapping[str, Any], key: str) -> dict[str, Any]:
    """Storm's ``debug`` (sampling on for the topology, or for the component ``key``) and
    ``samplingPct``."""
    debug = info.get("debug", {})
    entry = debug.get(key) or (debug.get(info["id"]) if key != info["id"] else None) or {}
    return {"debug": bool(entry.get("enable")), "samplingPct": entry.get("samplingpct", 10)}


def events_doc(info: Mapping[str, Any], beats: Mapping[tuple[str, int], Any],
               component: str | None) -> dict[str, Any]:
    """``GET /api/v1/topology/:id/events`` (stormpy's own): the newest sampled tuples the
    topology's workers carry in their heartbeats (``WorkerHeartbeat.events``), newest first, each
    with the worker's ``host`` and ``port`` (only ``component``'s when given); ``debug`` is the
    topology's sampling settings (``component_debug``, from topology info)."""
    hosts = {w["node"]: w["host"] for w in info.get("workers", [])}
    rows = []
    for (node, port), beat in beats.items():
        for event in getattr(beat, "events", ()):
            if component is None or event.get("component") == component:
                rows.append({**event, "host": hosts.get(node, node), "port": port})
    rows.sort(key=lambda e: float(e.get("ts") or 0.0), reverse=True)
    return {"topologyId": info["id"], "name": info["name"], "debug": info.get("debug", {}),
            "events": rows}


def user_metric_rows(info: Mapping[str, Any], component: str) -> list[dict[str, Any]]:
    """The component's metrics, one row per task and metric, ordered by task then name: the
    snapshot's fields as Storm's metric reporters name them (``count``, ``value``, ``p99``,
    ``m1_rate`` ..., see :mod:`stormpy.topology._user_metrics`) with ``task``, ``name`` and
    ``type``; a ``register_metric`` value is a row of ``type`` ``"metric"`` with its ``value``."""
    rows = []
    by_task = info.get("metrics", {}).get(component, {})
    for task in sorted(by_task, key=int):
        for name, value in sorted(by_task[task].items()):
            if isinstance(value, dict) and value.get("type") in KINDS:
                rows.append({"task": int(task), "name": name, **value})
            else:
                rows.append({"task": int(task), "name": name, "type": "metric", "value": value})
    return rows


def _executor_rows(info: Mapping[str, Any], kind: str, component: str,
                   figures: WindowFigures) -> list[dict[str, Any]]:
    rows = []
    for w in info.get("workers", []):
        for start, end in w["executors"]:
            f = figures.executor(component, start, end)
            if f is None:
                continue
            up = w.get("uptime_secs")
            rows.append({"id": f"[{start}-{end}]", "encodedId": f"{start}-{end}", "host": w["host"],
                         "port": w["port"], "supervisorId": w["node"],
                         "uptime": duration(up) if up is not None else None,
                         "uptimeSeconds": int(up) if up is not None else None,
                         **component_stats(kind, f)})
    return rows


def subscribers(spec: Mapping[str, Any], component: str, stream: str) -> list[str]:
    return sorted(b for b, d in spec.get("components", {}).items()
                  for i in d.get("inputs", []) if i["component"] == component and i["stream"] == stream)


def _grouping(inp: Mapping[str, Any]) -> str:
    g = inp.get("grouping") or {}
    return str(g.get("type", "")) if isinstance(g, Mapping) else str(g)


def visualization(spec: Mapping[str, Any], info: Mapping[str, Any], figures: WindowFigures) -> dict[str, Any]:
    """``GET /api/v1/topology/:id/visualization``: Storm's ``:``-keyed component map, each input
    with the stream's tuples over the window (``:emitted``) and per second (``:rate``)."""
    out: dict[str, Any] = {}
    for name, d in sorted(spec.get("components", {}).items()):
        stats = component_stats(str(d.get("kind")), figures.component(name))
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
            n = figures.component(inp["component"]).streams.get(inp["stream"], 0)
            entry[":inputs"].append({":component": inp["component"], ":stream": inp["stream"],
                                     ":sani-stream": inp["stream"].replace("_", "-"),
                                     ":grouping": _grouping(inp), ":emitted": n,
                                     ":rate": round(n / figures.span, 3)})
        out[name] = entry
    return out
