"""The UI's on-call endpoints and log links: run-time log levels, worker dumps and profiles, and
links to the hosts' log servers (:mod:`stormpy.logviewer`).

Contract (Storm's REST names; every call goes through Nimbus):

* ``GET /api/v1/topology/:id/logconfig`` → ``{"namedLoggerLevels": {logger: {target_level,
  reset_level, timeout, timeout_epoch}}}``.
* ``POST /api/v1/topology/:id/logconfig`` with that shape: each logger with a ``target_level``
  is set (for ``timeout`` seconds when > 0); one with an empty or missing ``target_level`` is
  reset. Answers the resulting document.
* ``POST /api/v1/topology/:id/profiling/dumpjstack/:host-port`` and ``.../dumpheap/:host-port``
  ask the worker for a stack dump or heap summary and wait (up to 30 s) for it:
  ``{"status": "done", "id": "host:port", "file": <path in the log dir>, "logLink": <its page on
  the host's log server>}``. ``.../profiling/start/:host-port/:timeout`` starts a sampled CPU
  profile of ``timeout`` seconds (1 to 600; Storm's unit is minutes, stormpy's profiles are
  short) and answers ``{"status": "started", "request": id}``; ``GET
  .../profiling/result/:request`` tells ``pending`` or the outcome as above. These are POSTs (Storm
  uses GETs) so that the UI's token and CSRF rules apply.
* :func:`add_log_links` adds ``workerLogLink`` (the worker's log on its host's log server) to the
  worker rows and executor rows of a topology or component document, and ``logviewerPort`` to
  ``hostPortList`` entries, from the supervisors' published log server ports.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from stormpy.client import await_worker_action, request_worker_action
from stormpy.ui._security import UiAuth
from stormpy.ui._source import NotFound, UiBackend

__all__ = ["add_log_links", "log_link", "operation_routes"]

WAIT_SECS = 30.0


def log_link(host: str, logviewer_port: int | None, file: str) -> str | None:
    """The page of ``file`` on the log server of ``host`` (None without a log server; an IPv6
    host in brackets)."""
    if not logviewer_port:
        return None
    where = f"[{host}]" if ":" in host else host
    return f"http://{where}:{int(logviewer_port)}/log?{urlencode({'file': file})}"


def _ports(cluster: Mapping[str, Any]) -> dict[str, int | None]:
    return {s["id"]: s.get("logviewer_port") for s in cluster.get("supervisors", [])}


def add_log_links(doc: dict[str, Any], info: Mapping[str, Any], cluster: Mapping[str, Any]) -> dict[str, Any]:
    """See the module contract; returns ``doc``."""
    ports = _ports(cluster)
    nodes = {(w["host"], w["port"]): w["node"] for w in info.get("workers", [])}
    for key in ("workers", "executorStats", "hostPortList"):
        for row in doc.get(key) or []:
            node = row.get("supervisorId") or nodes.get((row.get("host"), row.get("port")))
            lv = ports.get(node) if node else None
            if key == "hostPortList":
                row["logviewerPort"] = lv
            row["workerLogLink"] = log_link(row.get("host", ""), lv,
                                            f"worker-{info['id']}-{row.get('port')}.log")
    return doc


def operation_routes(backend: UiBackend, auth: UiAuth, json_errors: Callable[..., Any],
                     bad_request: type[Exception]) -> list[Route]:
    """The routes of the module contract (``json_errors`` and ``bad_request``: the app's)."""

    def post(func: Callable[[Request, bytes], Response]) -> Callable[[Request], Any]:
        guarded = json_errors(func)

        async def endpoint(request: Request) -> Response:
            body = await request.body()
            return await run_in_threadpool(guarded, request, body)
        return endpoint

    def worker(request: Request) -> tuple[dict[str, Any], str, int]:
        info = backend.topology(request.path_params["id"])
        host, _, port = request.path_params["hostport"].rpartition(":")
        if not host or not port.isdigit():
            raise bad_request(f"worker {request.path_params['hostport']!r} must be host:port")
        if not any(w["host"] == host and w["port"] == int(port) for w in info.get("workers", [])):
            raise NotFound("worker", f"{host}:{port}", f" of topology {info['id']!r}")
        return info, host, int(port)

    def outcome(info: Mapping[str, Any], hostport: str, answer: Mapping[str, Any]) -> dict[str, Any]:
        doc: dict[str, Any] = {"status": answer["status"], "id": hostport}
        if answer["status"] == "done":
            host, _, port = hostport.rpartition(":")
            doc["file"] = answer["result"].get("file")
            node = next((w["node"] for w in info.get("workers", [])
                         if w["host"] == host and str(w["port"]) == port), None)
            lv = _ports(backend.cluster_info()).get(node) if node else None
            doc["logLink"] = log_link(host, lv, doc["file"]) if doc["file"] else None
        elif answer["status"] == "failed":
            doc["error"] = answer.get("error")
        return doc

    def get_logconfig(request: Request) -> Response:
        auth.check_get(request.headers)
        info = backend.topology(request.path_params["id"])
        return JSONResponse(backend.call("get_log_config", name=info["name"]))

    def set_logconfig(request: Request, body: bytes) -> Response:
        auth.check_post(request.headers, request.cookies, request.url.scheme)
        info = backend.topology(request.path_params["id"])
        try:
            doc = json.loads(body or b"{}")
        except ValueError as exc:
            raise bad_request(f"logconfig body is not JSON ({exc})") from None
        levels = doc.get("namedLoggerLevels") if isinstance(doc, dict) else None
        if not isinstance(levels, dict):
            raise bad_request("logconfig body must be {\"namedLoggerLevels\": {logger: {...}}}")
        settings, resets = [], []
        for logger, entry in levels.items():
            entry = entry if isinstance(entry, dict) else {}
            level = str(entry.get("target_level") or "").strip()
            if not level:
                resets.append(logger)
                continue
            timeout = entry.get("timeout") or 0
            if not isinstance(timeout, int) or isinstance(timeout, bool) or timeout < 0:
                raise bad_request(f"logger {logger!r}: timeout must be whole seconds >= 0")
            settings.append(f"{logger}={level}:{timeout}" if timeout else f"{logger}={level}")
        try:
            result = backend.call("set_log_config", name=info["name"], settings=settings, resets=resets)
        except Exception as exc:  # an InvalidRequestError from Nimbus names the bad level
            message = getattr(exc, "message", None)
            if message is None:
                raise
            raise bad_request(message) from None
        return JSONResponse(result)

    def request_action(request: Request, action: str,
                       args: dict[str, Any]) -> tuple[dict[str, Any], str, str]:
        auth.check_post(request.headers, request.cookies, request.url.scheme)
        info, host, port = worker(request)
        request_id = request_worker_action(backend.call, info["name"], host, port, action, args)
        return info, f"{host}:{port}", request_id

    def dump(action: str) -> Callable[[Request, bytes], Response]:
        def run(request: Request, _body: bytes) -> Response:
            info, hostport, req = request_action(request, action, {})
            # this module's clock and sleep: the tests drive them
            answer = await_worker_action(backend.call, info["name"], req, WAIT_SECS, interval=0.3,
                                         clock=time.monotonic, sleep=time.sleep)
            doc = outcome(info, hostport, answer)
            if answer["status"] == "pending":
                doc["request"] = req
            return JSONResponse(doc, status_code=200 if answer["status"] != "failed" else 409)
        return run

    def start_cpu(request: Request, _body: bytes) -> Response:
        timeout = request.path_params["timeout"]
        if not timeout.isdigit() or not 1 <= int(timeout) <= 600:
            raise bad_request(f"timeout {timeout!r} must be 1 to 600 seconds")
        _info, hostport, req = request_action(request, "cpu", {"seconds": int(timeout)})
        return JSONResponse({"status": "started", "id": hostport, "request": req,
                             "timeout": int(timeout)})

    def result(request: Request) -> Response:
        auth.check_get(request.headers)
        info = backend.topology(request.path_params["id"])
        req = request.path_params["request"]
        answer = backend.call("worker_action_result", name=info["name"], request=req)
        node, _, _seq = req.partition("/")
        port = node.rpartition("-")[2]
        host = next((w["host"] for w in info.get("workers", []) if str(w["port"]) == port
                     and w["node"] == node.rpartition("-")[0]), "")
        return JSONResponse(outcome(info, f"{host}:{port}", answer))

    base = "/api/v1/topology/{id}"
    return [
        Route(f"{base}/logconfig", json_errors(get_logconfig), methods=["GET"]),
        Route(f"{base}/logconfig", post(set_logconfig), methods=["POST"]),
        Route(f"{base}/profiling/dumpjstack/{{hostport}}", post(dump("jstack")), methods=["POST"]),
        Route(f"{base}/profiling/dumpheap/{{hostport}}", post(dump("heap")), methods=["POST"]),
        Route(f"{base}/profiling/start/{{hostport}}/{{timeout}}", post(start_cpu), methods=["POST"]),
        Route(f"{base}/profiling/result/{{request:path}}", json_errors(result), methods=["GET"]),
    ]
