"""The UI's HTTP application (Starlette): Storm's REST API under ``/api/v1``, the pages and
``/metrics``.

Every endpoint is a plain function (Starlette runs it in its thread pool, so the blocking Nimbus
and ZooKeeper calls never hold up the event loop). Errors are JSON ``{"error": <kind>,
"errorMessage": <text>}``: 400 for bad input naming the field, 401/403 from
:mod:`stormpy.ui._security`, 404 naming the missing topology or component, 409 when Nimbus refuses
an action, 503 when Nimbus cannot be reached (the process stays up and answers again once Nimbus
is back).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from functools import wraps
from importlib.resources import files
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from stormpy import __version__
from stormpy.config import redacted
from stormpy.ui import _pages as pages
from stormpy.ui._graph import render_svg
from stormpy.ui._metrics import make_registry
from stormpy.ui._operations import add_log_links, operation_routes
from stormpy.ui._security import Denied, UiAuth
from stormpy.ui._source import ActionRefused, BackendUnavailable, NotFound, UiBackend
from stormpy.ui._stormdocs import (
    cluster_summary,
    component_doc,
    events_doc,
    executor_ranges,
    nimbus_summary,
    supervisor_summary,
    topology_doc,
    topology_summary,
    topology_workers,
    visualization,
)
from stormpy.ui._windows import WINDOWS, WindowFigures, parse_window

__all__ = ["BadRequest", "create_app", "parse_debug", "parse_rebalance"]


class BadRequest(Exception):
    """Malformed input; the message names the field."""


def _error(status: int, kind: str, message: str) -> JSONResponse:
    return JSONResponse({"error": kind, "errorMessage": message}, status_code=status)


def _json_errors(func: Callable[..., Response]) -> Callable[..., Response]:
    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Response:
        try:
            return func(*args, **kwargs)
        except Denied as exc:
            return _error(exc.status, "Unauthorized" if exc.status == 401 else "Forbidden", exc.message)
        except BadRequest as exc:
            return _error(400, "Bad Request", str(exc))
        except NotFound as exc:
            return _error(404, "Not Found", str(exc))
        except ActionRefused as exc:
            status = 400 if exc.kind == "InvalidRequestError" else 409
            return _error(status, exc.kind, exc.message)
        except BackendUnavailable as exc:
            return _error(503, "Service Unavailable", str(exc))
    return wrapper


def parse_rebalance(body: bytes) -> tuple[int | None, dict[str, int] | None]:
    """Storm's rebalance body ``{"rebalanceOptions": {"numWorkers": N, "executors": {c: N}}}``
    (empty body: no options) → (workers, executors); BadRequest naming the field otherwise."""
    if not body.strip():
        return None, None
    try:
        doc = json.loads(body)
    except ValueError as exc:
        raise BadRequest(f"rebalance body is not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise BadRequest("rebalance body must be a JSON object")
    options = doc.get("rebalanceOptions", {})
    if not isinstance(options, dict):
        raise BadRequest("rebalanceOptions must be an object")
    unknown = sorted(set(options) - {"numWorkers", "executors"})
    if unknown:
        raise BadRequest(f"rebalanceOptions.{unknown[0]} is not a rebalance option "
                         "(numWorkers, executors)")
    workers = options.get("numWorkers")
    if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool) or workers < 1):
        raise BadRequest(f"rebalanceOptions.numWorkers must be an integer >= 1, got {workers!r}")
    executors = options.get("executors")
    if executors is not None:
        if not isinstance(executors, dict):
            raise BadRequest("rebalanceOptions.executors must map component names to integers")
        for name, n in executors.items():
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise BadRequest(f"rebalanceOptions.executors.{name} must be an integer >= 1, got {n!r}")
    return workers, dict(executors) if executors else None


def _wait_time(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value < 0:
        raise BadRequest(f"wait-time must be a number of seconds >= 0, got {text!r}")
    return value


def parse_debug(action: str, spct: str) -> tuple[bool, float]:
    """``enable|disable`` and the sampling percentage of Storm's debug paths; BadRequest naming
    what is wrong. A disable's percentage is not checked (Storm's UI sends one anyway)."""
    if action not in ("enable", "disable"):
        raise BadRequest(f"debug action must be 'enable' or 'disable', got {action!r}")
    try:
        pct = float(spct)
    except ValueError:
        pct = -1.0
    if action == "disable":
        return False, pct if 0 < pct <= 100 else 10.0
    if not math.isfinite(pct) or not 0 < pct <= 100:
        raise BadRequest(f"sampling percentage must be a number in (0, 100], got {spct!r}")
    return True, pct


def _redacted(conf: Mapping[str, Any]) -> dict[str, Any]:
    return redacted(conf)


def create_app(backend: UiBackend, *, clock: Callable[[], float] = time.time) -> Starlette:
    """The application for ``backend`` (whose sampler the caller starts and closes)."""
    auth = UiAuth(backend.conf)
    registry = make_registry(backend)

    def get(request: Request) -> None:
        auth.check_get(request.headers)

    def window_of(request: Request) -> str:
        try:
            return parse_window(request.query_params.get("window"))
        except ValueError as exc:
            raise BadRequest(str(exc)) from None

    def windows_of(info: Mapping[str, Any]) -> dict[str, WindowFigures]:
        now = clock()
        tracker = backend.window(info["id"])
        executors = executor_ranges(info)
        return {w: tracker.figures(w, now, executors) for w in WINDOWS}

    @_json_errors
    def configuration(request: Request) -> Response:
        get(request)
        return JSONResponse(_redacted(backend.nimbus_conf()))

    @_json_errors
    def cluster(request: Request) -> Response:
        get(request)
        info = backend.cluster_info()
        return JSONResponse(cluster_summary(info, __version__))

    @_json_errors
    def nimbus(request: Request) -> Response:
        get(request)
        return JSONResponse(nimbus_summary(backend.cluster_info()))

    @_json_errors
    def supervisors(request: Request) -> Response:
        get(request)
        return JSONResponse(supervisor_summary(backend.cluster_info()))

    @_json_errors
    def topologies(request: Request) -> Response:
        get(request)
        info = backend.cluster_info()
        return JSONResponse(topology_summary(info))

    @_json_errors
    def topology(request: Request) -> Response:
        get(request)
        window = window_of(request)
        info = backend.topology(request.path_params["id"])
        spec = backend.spec(info["id"])
        doc = topology_doc(info, spec, _redacted(backend.topology_conf(info["id"])), window,
                           windows_of(info), clock())
        return JSONResponse(add_log_links(doc, info, backend.cluster_info()))

    @_json_errors
    def workers(request: Request) -> Response:
        get(request)
        info = backend.topology(request.path_params["id"])
        return JSONResponse(add_log_links(topology_workers(info), info, backend.cluster_info()))

    def _component(request: Request) -> tuple[dict[str, Any], dict[str, Any], str]:
        info = backend.topology(request.path_params["id"])
        spec = backend.spec(info["id"])
        name = request.path_params["component"]
        if name not in spec.get("components", {}):
            raise NotFound("component", name, f" in topology {info['id']!r}")
        return info, spec, name

    @_json_errors
    def component(request: Request) -> Response:
        get(request)
        window = window_of(request)
        info, spec, name = _component(request)
        doc = component_doc(info, spec, name, window, windows_of(info), clock())
        return JSONResponse(add_log_links(doc, info, backend.cluster_info()))

    def _visualization(request: Request) -> dict[str, Any]:
        window = window_of(request)
        info = backend.topology(request.path_params["id"])
        return visualization(backend.spec(info["id"]), info, windows_of(info)[window])

    @_json_errors
    def vis(request: Request) -> Response:
        get(request)
        return JSONResponse(_visualization(request))

    @_json_errors
    def graph(request: Request) -> Response:
        get(request)
        return Response(render_svg(_visualization(request)), media_type="image/svg+xml")

    def action(name: str) -> Callable[[Request], Awaitable[Response]]:
        @_json_errors
        def act(request: Request, body: bytes) -> Response:
            auth.check_post(request.headers, request.cookies, request.url.scheme)
            topology_id = request.path_params["id"]
            args: dict[str, Any] = {}
            if name in ("kill", "rebalance"):
                args["wait_secs"] = _wait_time(request.path_params["wait"])
            if name == "rebalance":
                args["num_workers"], args["executors"] = parse_rebalance(body)
            if name == "debug":
                args["component"] = request.path_params.get("component")
                args["enable"], args["sampling_pct"] = parse_debug(request.path_params["action"],
                                                                   request.path_params["spct"])
            backend.action(name, topology_id, **args)
            return JSONResponse({"topologyOperation": name, "topologyId": topology_id, "status": "success"})

        async def endpoint(request: Request) -> Response:
            body = await request.body()
            return await run_in_threadpool(act, request, body)
        return endpoint

    @_json_errors
    def events(request: Request) -> Response:
        get(request)
        info = backend.topology(request.path_params["id"])
        component = request.query_params.get("component") or None
        return JSONResponse(events_doc(info, backend.latest.get(info["id"], {}), component))

    @_json_errors
    def metrics(request: Request) -> Response:
        get(request)
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    static = StaticFiles(directory=str(files("stormpy.ui") / "static"))
    routes = [
        Route("/api/v1/cluster/configuration", configuration),
        Route("/api/v1/cluster/summary", cluster),
        Route("/api/v1/nimbus/summary", nimbus),
        Route("/api/v1/supervisor/summary", supervisors),
        Route("/api/v1/topology/summary", topologies),
        Route("/api/v1/topology/{id}", topology),
        Route("/api/v1/topology/{id}/component/{component}", component),
        Route("/api/v1/topology-workers/{id}", workers),
        Route("/api/v1/topology/{id}/topology-workers", workers),
        Route("/api/v1/topology/{id}/visualization", vis),
        Route("/api/v1/topology/{id}/graph.svg", graph),
        Route("/api/v1/topology/{id}/activate", action("activate"), methods=["POST"]),
        Route("/api/v1/topology/{id}/deactivate", action("deactivate"), methods=["POST"]),
        Route("/api/v1/topology/{id}/rebalance/{wait}", action("rebalance"), methods=["POST"]),
        Route("/api/v1/topology/{id}/kill/{wait}", action("kill"), methods=["POST"]),
        *operation_routes(backend, auth, _json_errors, BadRequest),
        Route("/api/v1/topology/{id}/debug/{action}/{spct}", action("debug"), methods=["POST"]),
        Route("/api/v1/topology/{id}/component/{component}/debug/{action}/{spct}", action("debug"),
              methods=["POST"]),
        Route("/api/v1/topology/{id}/events", events),
        Route("/metrics", metrics),
        *pages.routes(auth),
        Mount("/static", app=static, name="static"),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        return _error(404, "Not Found", f"no such path {request.url.path!r}")

    return Starlette(routes=routes, exception_handlers={404: not_found})

