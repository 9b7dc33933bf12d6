"""The topology graph in a headless Chromium: where edges share their two components (several
streams between them, both directions, a component subscribed to itself), the labels the
browser draws do not overlap (their measured boxes), and the picture holds every curve."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from ui_kit import chrome_driver, png_is_not_blank

from stormpy.ui._graph import render_svg

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]


def inputs(*edges: tuple[str, str, float]) -> list[dict[str, Any]]:
    return [{":component": c, ":stream": s, ":rate": r} for c, s, r in edges]


#: a parser feeding a counter on three streams, the counter feeding back, retries to itself
VIS = {
    "lines": {":type": "spout", ":inputs": [], ":link": "#"},
    "parse": {":type": "bolt", ":capacity": "0.120", ":link": "#",
              ":inputs": inputs(("lines", "default", 1204.5), ("count", "feedback", 3.0))},
    "count": {":type": "bolt", ":capacity": "0.910", ":link": "#",
              ":inputs": inputs(("parse", "default", 1180.2), ("parse", "errors", 12.0),
                                ("parse", "late", 0.4), ("count", "retry", 2.5),
                                ("count", "again", 0.1))},
    "report": {":type": "bolt", ":link": "#",
               ":inputs": inputs(("parse", "default", 1180.2), ("count", "default", 50.0))},
}


def test_edge_labels_do_not_overlap_in_chromium(tmp_path: Path) -> None:
    page = tmp_path / "graph.html"
    page.write_text(f"<!doctype html><html><body style='margin:0'>{render_svg(VIS)}</body></html>")
    driver = chrome_driver(tmp_path)
    try:
        driver.get(page.as_uri())
        boxes = driver.execute_script(
            "return [...document.querySelectorAll('g.edge')].map(g => {"
            " const r = g.querySelector('text').getBoundingClientRect();"
            " return [g.dataset.source + '>' + g.dataset.target + ':' + g.dataset.stream,"
            "         r.left, r.top, r.right, r.bottom]; })")
        assert len(boxes) == 9
        assert all(right - left > 20 for _, left, _top, right, _bottom in boxes)  # drawn text
        clashes = [(a[0], b[0]) for a, b in itertools.combinations(boxes, 2)
                   if a[1] < b[3] and b[1] < a[3] and a[2] < b[4] and b[2] < a[4]]
        assert clashes == []
        inside = driver.execute_script(
            "const svg = document.querySelector('svg'); const box = svg.getBoundingClientRect();"
            "return [...svg.querySelectorAll('path, text')].every(e => {"
            " const r = e.getBoundingClientRect();"
            " return r.bottom <= box.bottom + 0.5 && r.right <= box.right + 0.5"
            "        && r.top >= box.top - 0.5; })")
        assert inside
        shot = tmp_path / "graph.png"
        assert driver.save_screenshot(str(shot)) and png_is_not_blank(shot.read_bytes())
    finally:
        driver.quit()
