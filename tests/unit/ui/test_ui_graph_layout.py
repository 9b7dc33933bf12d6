"""The topology graph's edge layout (``stormpy.ui._graph.edge_shapes``): edges that share their two
components (several streams between them, both directions, a component subscribed to itself)
bend apart, so no two labels overlap. The labels' boxes here are estimated from the font size;
the browser test (tests/integration/test_ui_graph_labels.py) measures them in Chromium."""

from __future__ import annotations

import itertools
import re
from typing import Any

from stormpy.ui._graph import LANE, edge_shapes, node_positions, render_svg

FONT_PX = 11
#: a generous estimate of a character's width at 11 px in a sans-serif font
CHAR_PX = 7.0


def inputs(*edges: tuple[str, str]) -> list[dict[str, Any]]:
    return [{":component": c, ":stream": s, ":rate": 12.5} for c, s in edges]


#: every way two edges can share both components: three streams a → b, the back edge b → a, two
#: streams from b to itself, and c fed by both a and b
CROWDED = {
    "a": {":type": "spout", ":inputs": inputs(("b", "feedback")), ":link": "#"},
    "b": {":type": "bolt", ":inputs": inputs(("a", "default"), ("a", "errors"), ("a", "late"),
                                             ("b", "retry"), ("b", "again")), ":link": "#"},
    "c": {":type": "bolt", ":inputs": inputs(("a", "default"), ("b", "default")), ":link": "#"},
}


def label_box(x: float, y: float, text: str) -> tuple[float, float, float, float]:
    half = len(text) * CHAR_PX / 2
    return x - half, y - FONT_PX * 0.65, x + half, y + FONT_PX * 0.65


def overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_no_two_labels_overlap_when_edges_share_components() -> None:
    shapes = edge_shapes(CROWDED, node_positions(CROWDED))
    assert len(shapes) == 8
    boxes = {(s.source, s.target, s.stream): label_box(s.label_x, s.label_y, s.label) for s in shapes}
    clashes = [(p, q) for (p, a), (q, b) in itertools.combinations(boxes.items(), 2) if overlap(a, b)]
    assert clashes == []


def test_parallel_streams_take_lanes_around_the_straight_line() -> None:
    vis = {"a": {":type": "spout", ":inputs": []},
           "b": {":type": "bolt", ":inputs": inputs(("a", "s1"), ("a", "s2"))}}
    shapes = edge_shapes(vis, node_positions(vis))
    (x1, y1), (x2, y2) = ((s.label_x, s.label_y) for s in shapes)
    assert abs(y1 - y2) >= LANE - 1 and abs(x1 - x2) < 5  # one above the other
    assert len({s.path for s in shapes}) == 2
    single = {"a": vis["a"], "b": {":type": "bolt", ":inputs": inputs(("a", "s1"))}}
    [alone] = edge_shapes(single, node_positions(single))
    assert " Q " in alone.path and abs(alone.label_y - (56 / 2 + 20)) < 1  # straight: no bend


def test_loops_and_back_edges_stay_inside_the_picture() -> None:
    svg = render_svg(CROWDED)
    height = float(re.search(r'height="(\d+)"', svg).group(1))  # type: ignore[union-attr]
    assert all(s.bottom < height for s in edge_shapes(CROWDED, node_positions(CROWDED)))
    assert svg.count('class="edge"') == 8 and 'paint-order="stroke"' in svg
