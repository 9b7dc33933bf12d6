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


#: every way two edges can share both components: three streams parse → count, the back edge
#: count → parse, two streams from count to itself; and report fed by parse (over count's
#: column) and count
CROWDED = {
    "lines": {":type": "spout", ":inputs": [], ":link": "#"},
    "parse": {":type": "bolt", ":inputs": inputs(("lines", "default"), ("count", "feedback")),
              ":link": "#"},
    "count": {":type": "bolt", ":inputs": inputs(("parse", "default"), ("parse", "errors"),
                                                 ("parse", "late"), ("count", "retry"),
                                                 ("count", "again")), ":link": "#"},
    "report": {":type": "bolt", ":inputs": inputs(("parse", "default"), ("count", "default")),
               ":link": "#"},
}


def label_box(x: float, y: float, text: str) -> tuple[float, float, float, float]:
    half = len(text) * CHAR_PX / 2
    return x - half, y - FONT_PX * 0.65, x + half, y + FONT_PX * 0.65


def overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_no_two_labels_overlap_when_edges_share_components() -> None:
    shapes = edge_shapes(CROWDED, node_positions(CROWDED))
    assert len(shapes) == 9
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
    line_y = 56 / 2 + 20  # straight, through the boxes' middles: the label just above it
    assert " Q " in alone.path and line_y - 12 < alone.label_y < line_y - 6


def test_loops_and_back_edges_stay_inside_the_picture() -> None:
    svg = render_svg(CROWDED)
    height = float(re.search(r'height="(\d+)"', svg).group(1))  # type: ignore[union-attr]
    assert all(s.bottom < height for s in edge_shapes(CROWDED, node_positions(CROWDED)))
    assert svg.count('class="edge"') == 9 and 'paint-order="stroke"' in svg


def test_many_lanes_above_the_first_row_stay_inside_the_picture() -> None:
    vis = {"a": {":type": "spout", ":inputs": []},
           "b": {":type": "bolt", ":inputs": inputs(*((("a", f"s{i}")) for i in range(6)))}}
    svg = render_svg(vis)
    box = re.search(r'viewBox="0 (-?\d+) \d+ (\d+)"', svg)
    assert box is not None
    top = float(box.group(1))
    assert all(s.label_y - FONT_PX > top for s in edge_shapes(vis, node_positions(vis)))


def test_a_loop_does_not_push_its_component_a_column_further() -> None:
    xs = [node_positions(CROWDED)[c][0] for c in ("lines", "parse", "count", "report")]
    assert xs == sorted(xs) and len({b - a for a, b in zip(xs, xs[1:])}) == 1  # no empty column
