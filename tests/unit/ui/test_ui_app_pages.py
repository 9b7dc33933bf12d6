"""The UI's pages (stormpy.ui._pages) through the app: Storm's page paths, each page's shell with
its title, tables and refresh period, the CSRF cookie set once and echoed in the page, the token
field shown only when the UI has a token."""

from __future__ import annotations

import os
import re

import pytest

if os.environ.get("CI", "").lower() != "true":  # in CI the [ui] extra is installed: no skip
    pytest.importorskip("starlette")

from stormpy import __version__  # noqa: E402
from stormpy.ui._pages import render  # noqa: E402
from stormpy.ui._security import CSRF_COOKIE  # noqa: E402
from ui_nimbus_kit import ui_app  # noqa: E402

PAGES = {
    "index": ("Cluster", 'id="topology-summary"'),
    "topology": ("Topology", 'data-action="kill"'),
    "component": ("Component", 'id="executor-stats"'),
    "supervisor": ("Supervisors", 'id="supervisor-workers"'),
    "events": ("Sampled tuples", 'id="events-table"'),
}


def meta(text: str, name: str) -> str:
    found = re.search(rf'<meta name="{name}" content="([^"]*)">', text)
    assert found is not None, name
    return found.group(1)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_each_page_has_its_title_tables_and_the_default_refresh(page: str) -> None:
    client, nimbus, _ = ui_app()
    answer = client.get(f"/{page}.html")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
    title, table = PAGES[page]
    text = answer.text
    assert f"<title>stormpy UI: {title}</title>" in text
    assert f'<h1 id="page-title">{title}</h1>' in text
    assert table in text
    assert f'<body data-page="{page}" data-refresh="3">' in text
    assert f"<footer>stormpy {__version__}</footer>" in text
    assert nimbus.calls == []  # a page holds no data: it asks Nimbus nothing


def test_the_root_redirects_to_the_cluster_page() -> None:
    client, _, _ = ui_app()
    answer = client.get("/", follow_redirects=False)
    assert answer.status_code == 307 and answer.headers["location"] == "/index.html"
    assert client.get("/nope.html").status_code == 404


def test_a_page_sets_the_csrf_cookie_once_and_echoes_it() -> None:
    client, _, _ = ui_app()
    first = client.get("/index.html")
    token = first.cookies[CSRF_COOKIE]
    assert meta(first.text, "csrf-token") == token and len(token) == 32
    cookie = first.headers["set-cookie"]
    assert cookie.startswith(f"{CSRF_COOKIE}={token};")
    assert "Path=/" in cookie and "SameSite=strict" in cookie and "HttpOnly" not in cookie
    # the browser sends it back: the page reuses it and sets nothing
    again = client.get("/topology.html?id=wc-1")
    assert meta(again.text, "csrf-token") == token and "set-cookie" not in again.headers


def test_a_page_is_open_but_shows_the_token_field_only_when_the_ui_has_a_token() -> None:
    locked, _, _ = ui_app({"ui.auth.token": "tok", "ui.auth.protect.gets": True})
    text = locked.get("/index.html").text  # no token needed for a page
    assert meta(text, "auth-required") == "true"
    assert '<span class="token" >token' in text
    open_ui, _, _ = ui_app()
    text = open_ui.get("/index.html").text
    assert meta(text, "auth-required") == "false"
    assert '<span class="token" hidden="hidden">token' in text


@pytest.mark.parametrize(
    ("query", "refresh"),
    [
        ("?refresh=10", "10"),
        ("?refresh=0.75", "0.75"),
        ("?refresh=0.1", "0.5"),
        ("?refresh=0.5", "0.5"),
        ("?refresh=soon", "3"),
        ("", "3"),
    ],
)
def test_the_refresh_period_comes_from_the_query_at_least_half_a_second(query: str, refresh: str) -> None:
    client, _, _ = ui_app()
    assert f'data-refresh="{refresh}"' in client.get(f"/index.html{query}").text


def test_the_shell_escapes_what_it_echoes() -> None:
    text = render("component", '"><script>', True, 1.5)
    assert meta(text, "csrf-token") == "&quot;&gt;&lt;script&gt;"
    assert 'data-page="component" data-refresh="1.5"' in text
    assert "<script>" not in text.replace('<script src="/static/ui.js"></script>', "")
