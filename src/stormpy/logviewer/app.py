"""The log server's HTTP API (Storm's logviewer REST names and parameters).

Contract:

* ``GET /api/v1/log?file=F&start=S&length=L`` → ``{file, start, length, size, content}`` (L bytes
  from byte S; without S the last L bytes; L defaults to 51200, at most 1 MiB).
* ``GET /api/v1/download?file=F`` → the whole file as an attachment.
* ``GET /api/v1/search?file=F&search-string=X&start-byte-offset=O&num-matches=N`` → the matches of
  X from byte O (:meth:`~stormpy.logviewer.files.LogDir.search`; ``nextByteOffset`` continues).
* ``GET /api/v1/searchLogs?topoId=T&search-string=X&num-matches=N`` → ``{topoId, searchString,
  results: [search result per worker log file of T on this host]}`` (files without a match left out).
* ``GET /api/v1/deepSearch/T?search-string=X&num-matches=N&port=P`` → Storm's cross-worker
  search: a list with, per worker of T on this host (``port`` ``*`` or absent: all), its port and
  the search result of its current log file (N matches, default 1).
* ``GET /api/v1/listLogs?topoId=T[&port=P]`` → ``{logs: [...], artifacts: [...]}`` (file names for
  the calls above; artefacts are dumps and profiles).
* ``GET /log?file=F`` a page showing the file's end with links to earlier parts, for the UI's links.
* Errors: 400 bad parameter or path, 403 outside the log directory or a wrong token, 401 token
  missing, 404 no such file; the body is ``{"error": ..., "errorMessage": ...}``.
* Access: with a token configured (``ui.auth.token``, else ``nimbus.rpc.auth.token``) every
  request of ``/api/v1`` needs ``Authorization: Bearer <token>`` (logs are data, so this does not
  depend on ``ui.auth.protect.gets``); the page at ``/log`` holds no data and asks for the token
  when the API answers 401 (kept in the tab's session storage).
"""

from __future__ import annotations

import html
import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from stormpy.logviewer.files import BadRequest, Forbidden, LogDir, NotFound
from stormpy.ui._security import Denied, UiAuth

__all__ = ["DEFAULT_LENGTH", "create_app"]

DEFAULT_LENGTH = 51200


def _int(request: Request, name: str, default: int | None) -> int | None:
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise BadRequest(f"parameter {name!r} must be an integer, got {value!r}") from None


_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif}}pre{{white-space:pre-wrap;font-size:12px}}</style></head>
<body><h3>{title}</h3><p id="nav"></p><pre id="log">loading…</pre><script>
const file = {file};
const length = 51200;
async function show(start) {{
  const token = sessionStorage.getItem("stormpy-ui-token") || "";
  const q = new URLSearchParams({{file, length}});
  if (start !== null) q.set("start", start);
  const r = await fetch("/api/v1/log?" + q, {{headers: token ? {{Authorization: "Bearer " + token}} : {{}}}});
  const doc = await r.json();
  if (!r.ok) {{
    if (r.status === 401) {{
      const t = prompt("UI token");
      if (t) {{ sessionStorage.setItem("stormpy-ui-token", t); return show(start); }}
    }}
    document.getElementById("log").textContent = doc.errorMessage || r.statusText; return;
  }}
  document.getElementById("log").textContent = doc.content;
  const nav = document.getElementById("nav"); nav.textContent = "";
  const add = (label, at) => {{ const a = document.createElement("a"); a.href = "#"; a.textContent = label;
    a.onclick = (e) => {{ e.preventDefault(); show(at); }}; nav.append(a, " "); }};
  if (doc.start > 0) add("earlier", Math.max(0, doc.start - length));
  if (doc.start + doc.length < doc.size) add("later", doc.start + doc.length);
  add("end", null);
  const dl = document.createElement("a"); dl.textContent = "download";
  dl.href = "/api/v1/download?" + new URLSearchParams({{file}}); nav.append(dl);
  nav.append(` bytes ${{doc.start}}-${{doc.start + doc.length}} of ${{doc.size}}`);
}}
show(null);
</script></body></html>"""


def create_app(log_dir: LogDir, conf: dict[str, Any]) -> Starlette:
    """The log server's app on ``log_dir`` (access rules from ``conf``)."""
    auth = UiAuth(conf)

    def guarded(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                if auth.token is not None:
                    auth.protect_gets = True
                    auth.check_get(request.headers)
                return handler(request)
            except Denied as exc:
                return JSONResponse({"error": "denied", "errorMessage": exc.message}, exc.status)
            except (BadRequest, Forbidden, NotFound) as exc:
                return JSONResponse({"error": type(exc).__name__, "errorMessage": str(exc)}, exc.status)
        return endpoint

    def log(request: Request) -> Response:
        q = request.query_params
        return JSONResponse(log_dir.read(q.get("file", ""), _int(request, "start", None),
                                         _int(request, "length", DEFAULT_LENGTH) or DEFAULT_LENGTH))

    def download(request: Request) -> Response:
        name = request.query_params.get("file", "")
        path = log_dir.resolve(name)
        return FileResponse(path, filename=path.name, media_type="text/plain")

    def search(request: Request) -> Response:
        q = request.query_params
        return JSONResponse(log_dir.search(q.get("file", ""), q.get("search-string", ""),
                                           _int(request, "start-byte-offset", 0) or 0,
                                           _int(request, "num-matches", 10) or 10))

    def search_logs(request: Request) -> Response:
        q = request.query_params
        topo = q.get("topoId", "")
        needle = q.get("search-string", "")
        if not topo or not needle:
            raise BadRequest("parameters 'topoId' and 'search-string' are required")
        results = []
        for path in log_dir.topology_logs(topo):
            found = log_dir.search(path.name, needle, 0, _int(request, "num-matches", 10) or 10)
            if found["matches"]:
                results.append(found)
        return JSONResponse({"topoId": topo, "searchString": needle, "results": results})

    def deep_search(request: Request) -> Response:
        topo = request.path_params["topo_id"]
        q = request.query_params
        needle = q.get("search-string", "")
        port = q.get("port") or "*"
        if port != "*" and not port.isdigit():
            raise BadRequest(f"parameter 'port' must be a port or '*', got {port!r}")
        found = []
        for t, prt, path in log_dir.worker_logs():
            if t != topo or path.name != f"worker-{t}-{prt}.log":
                continue  # the current file of each worker, as Storm's default (no archived files)
            if port != "*" and prt != int(port):
                continue
            result = log_dir.search(path.name, needle, 0, _int(request, "num-matches", 1) or 1)
            found.append({"port": prt, **result})
        return JSONResponse(found)

    def list_logs(request: Request) -> Response:
        topo = request.query_params.get("topoId", "")
        if not topo:
            raise BadRequest("parameter 'topoId' is required")
        port = _int(request, "port", None)
        logs = [p.name for t, prt, p in log_dir.worker_logs() if t == topo and port in (None, prt)]
        ports = sorted({prt for t, prt, _ in log_dir.worker_logs() if t == topo and port in (None, prt)}
                       | ({port} if port is not None else set()))
        artifacts = [str(p.relative_to(log_dir.root)) for prt in ports for p in log_dir.artifacts(topo, prt)]
        return JSONResponse({"topoId": topo, "logs": logs, "artifacts": artifacts})

    async def page(request: Request) -> Response:
        name = request.query_params.get("file", "")
        return HTMLResponse(_PAGE.format(title=html.escape(name or "log"), file=json.dumps(name)))

    return Starlette(routes=[
        Route("/api/v1/log", guarded(log)),
        Route("/api/v1/download", guarded(download)),
        Route("/api/v1/search", guarded(search)),
        Route("/api/v1/searchLogs", guarded(search_logs)),
        Route("/api/v1/listLogs", guarded(list_logs)),
        Route("/api/v1/deepSearch/{topo_id}", guarded(deep_search)),
        Route("/log", page),
    ])
