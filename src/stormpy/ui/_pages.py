"""The UI's pages: small HTML shells that ``static/ui.js`` fills from the REST API and refreshes
every few seconds without reloading (the topology graph is the SVG of
``/api/v1/topology/:id/graph.svg``). Paths follow Storm's UI: ``/index.html``,
``/topology.html?id=``, ``/component.html?topology_id=&id=``, ``/supervisor.html``.

Each page response sets the ``stormpy_csrf`` cookie (when the browser has none) and carries the
same value in ``<meta name="csrf-token">`` for the script's POSTs (see :mod:`stormpy.ui._security`).
Nothing is loaded from outside the package.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from stormpy import __version__
from stormpy.ui._security import CSRF_COOKIE, UiAuth

__all__ = ["routes"]

_TITLES = {"index": "Cluster", "topology": "Topology", "component": "Component", "supervisor": "Supervisors",
           "events": "Sampled tuples"}

_DEBUG = """
<div class="actions debug">
  <button data-debug="enable">Debug</button>
  <button data-debug="disable">Stop Debug</button>
  <a id="events-link" href="#">Sampled tuples</a>
  <span id="debug-state"></span>
  <span id="debug-result" role="status"></span>
</div>"""

_BODIES = {
    "index": """
<section><h2>Cluster summary</h2><table id="cluster-summary" class="kv"></table></section>
<section><h2>Nimbus</h2><table id="nimbus-summary"></table></section>
<section><h2>Topologies</h2><table id="topology-summary"></table></section>
<section><h2>Supervisors</h2><table id="supervisor-summary"></table></section>""",
    "topology": """
<section><h2>Topology summary</h2><table id="topology-info"></table>
<div class="actions">
  <button data-action="activate">Activate</button>
  <button data-action="deactivate">Deactivate</button>
  <button data-action="rebalance">Rebalance</button>
  <button data-action="kill" class="danger">Kill</button>
  <label>wait (s) <input id="wait-time" type="number" min="0" value="30" size="4"></label>
  <span id="action-result" role="status"></span>
</div>""" + _DEBUG + """</section>
<section><h2>Topology graph</h2><div id="topology-graph" class="graph"></div>
<p class="legend">capacity: <span class="cap low">&lt; 0.5</span> <span class="cap mid">&lt; 0.8</span>
<span class="cap high">&ge; 0.8</span> <span class="cap none">not measured</span>; edges: tuples/s over the
window</p></section>
<section><h2>Topology stats</h2><table id="topology-stats"></table></section>
<section><h2>Spouts</h2><table id="spouts-table"></table></section>
<section><h2>Bolts</h2><table id="bolts-table"></table></section>
<section><h2>Last errors</h2><table id="errors-table"></table></section>
<section><h2>Workers</h2><table id="workers-table"></table></section>""",
    "component": """
<section><h2>Component summary</h2><table id="component-info"></table>""" + _DEBUG + """</section>
<section><h2>Stats by window</h2><table id="component-stats"></table></section>
<section><h2>Output streams</h2><table id="output-stats"></table></section>
<section><h2>Inputs</h2><table id="input-stats"></table></section>
<section><h2>Executors</h2><table id="executor-stats"></table></section>
<section><h2>Errors</h2><table id="component-errors"></table></section>
<section><h2>Metrics</h2><table id="component-metrics"></table></section>""",
    "events": """
<section><h2>Recent sampled tuples</h2>
<p>The newest tuples the event logger sampled (<code>stormpy debug</code>, the Debug button), as the
workers' heartbeats carry them; every sampled tuple is in the worker's events log.
<a id="topology-link" href="#">Back to the topology</a></p>
<table id="events-table"></table></section>""",
    "supervisor": """
<section><h2>Supervisors</h2><table id="supervisor-summary"></table></section>
<section><h2>Workers</h2><table id="supervisor-workers"></table></section>""",
}

_SHELL = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="{csrf}">
<meta name="auth-required" content="{auth}">
<title>stormpy UI: {title}</title>
<link rel="stylesheet" href="/static/ui.css">
</head>
<body data-page="{page}" data-refresh="{refresh}">
<header><a href="/index.html" class="brand">stormpy UI</a>
<nav><a href="/index.html">Cluster</a> <a href="/supervisor.html">Supervisors</a>
<a href="/api/v1/cluster/summary">REST API</a> <a href="/metrics">Metrics</a></nav>
<span class="window">window <select id="window">
<option value="600">10m</option><option value="10800">3h</option><option value="86400">1d</option>
<option value=":all-time">All time</option></select></span>
<span class="token" {token_style}>token <input id="ui-token" type="password" size="12"></span>
<span id="status-line" role="status"></span></header>
<main><h1 id="page-title">{title}</h1>{body}</main>
<footer>stormpy {version}</footer>
<script src="/static/ui.js"></script>
</body></html>
"""


def render(page: str, csrf: str, auth_required: bool, refresh: float) -> str:
    return _SHELL.format(csrf=escape(csrf), auth="true" if auth_required else "false",
                         title=_TITLES[page], page=page, refresh=f"{refresh:g}", body=_BODIES[page],
                         version=escape(__version__),
                         token_style="" if auth_required else 'hidden="hidden"')


def routes(auth: UiAuth, refresh_secs: float = 3.0) -> list[Route]:
    """Routes of the pages (and ``/`` → ``/index.html``)."""

    def page(name: str) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            csrf = request.cookies.get(CSRF_COOKIE) or auth.new_csrf_token()
            try:
                refresh = max(0.5, float(request.query_params.get("refresh", refresh_secs)))
            except ValueError:
                refresh = refresh_secs
            response = HTMLResponse(render(name, csrf, auth.token is not None, refresh))
            if CSRF_COOKIE not in request.cookies:
                response.set_cookie(CSRF_COOKIE, csrf, httponly=False, samesite="strict", path="/")
            return response
        return endpoint

    def root(request: Request) -> Response:
        return RedirectResponse("/index.html")

    return [Route("/", root), *(Route(f"/{name}.html", page(name)) for name in _TITLES)]
