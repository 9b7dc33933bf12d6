"""The topology graph as SVG, drawn on the server from the visualization document.

Layout: each component sits in the column of its longest path from a spout (spouts in column 0;
in a cycle, the subscription that closes it, walking from the spouts in name order, does not
count), rows in name order. Every subscription is an arrow labelled ``<stream> <rate>/s``
(:func:`edge_shapes`): a forward edge runs from the source's right side to the target's left
side, a back edge (a cycle, or a target not right of its source) bends below both boxes, a
component's subscription to itself loops below its box. Edges between the same two components
(several streams, or both directions) get lanes: each bends by its own offset, so their curves
and labels stand apart (18 px between neighbouring labels); a label sits just off its curve's
middle (on the outer side of its curve) over a white halo. An edge that skips columns arcs
over the boxes between. A bolt's box
is coloured by its capacity (green below 0.5, amber below 0.8, red from 0.8, like Storm's UI)
when the workers report execute latencies, grey otherwise; spouts are blue. Every text is
escaped; the SVG needs no script and no external resource.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from html import escape
from typing import Any

__all__ = ["EdgeShape", "capacity_colour", "edge_shapes", "node_positions", "render_svg"]

_W, _H, _GAP_X, _GAP_Y, _PAD = 170, 56, 110, 36, 20
#: distance between the labels (and curves) of edges sharing their two components
LANE = 18.0
#: how far below the boxes the first back edge of a pair bends; a self-loop's first depth
_BACK, _LOOP = 24.0, 34.0
#: a label's centre lies this far off its curve (above a forward edge, below the others), so the
#: line never runs through its text
_LABEL_GAP = 9.0


def capacity_colour(kind: str, capacity: str | None) -> str:
    if kind == "spout":
        return "#cfe2ff"
    if capacity is None:
        return "#e5e7eb"
    value = float(capacity)
    return "#bbf7d0" if value < 0.5 else "#fde68a" if value < 0.8 else "#fca5a5"


def _columns(vis: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """Each component's column: its longest path from a spout, over the subscriptions left when
    each cycle's closing one is dropped (walking from the components without inputs, in name
    order; a component's subscription to itself moves nothing)."""
    parents = {name: {i[":component"] for i in entry.get(":inputs", [])
                      if i[":component"] in vis and i[":component"] != name}
               for name, entry in vis.items()}
    children: dict[str, list[str]] = {name: [] for name in vis}
    for name, mine in parents.items():
        for parent in mine:
            children[parent].append(name)
    on_path: set[str] = set()
    walked: set[str] = set()

    def walk(name: str) -> None:
        walked.add(name)
        on_path.add(name)
        for child in sorted(children[name]):
            if child in on_path:
                parents[child].discard(name)  # closes a cycle
            elif child not in walked:
                walk(child)
        on_path.discard(name)

    for name in [n for n in sorted(vis) if not parents[n]] + sorted(vis):
        if name not in walked:
            walk(name)
    column: dict[str, int] = {}

    def depth(name: str) -> int:
        if name not in column:
            column[name] = 1 + max(depth(p) for p in parents[name]) if parents[name] else 0
        return column[name]

    for name in vis:
        depth(name)
    return column


def node_positions(vis: Mapping[str, Mapping[str, Any]]) -> dict[str, tuple[int, int]]:
    """Each component's box's top-left corner (see the module doc)."""
    columns = _columns(vis)
    pos: dict[str, tuple[int, int]] = {}
    rows: dict[int, int] = {}
    for name in sorted(vis, key=lambda n: (columns[n], n)):
        col = columns[name]
        row = rows.get(col, 0)
        rows[col] = row + 1
        pos[name] = (_PAD + col * (_W + _GAP_X), _PAD + row * (_H + _GAP_Y))
    return pos


@dataclass(frozen=True)
class EdgeShape:
    """One subscription as drawn: the SVG path (from source to target), its label and the
    label's centre."""

    source: str
    target: str
    stream: str
    rate: float
    path: str
    label: str
    label_x: float
    label_y: float
    bottom: float  # the lowest y the curve or its label reaches


def _bend(x1: float, y1: float, x2: float, y2: float, offset: float, *, down: bool = False
          ) -> tuple[str, float, float]:
    """A quadratic curve from (x1, y1) to (x2, y2) whose middle lies ``offset`` px off the
    straight line (below a left-to-right line, or below whatever its direction with ``down``);
    (path, where its label goes: :data:`_LABEL_GAP` px off the middle on the outer side, above a
    curve that bends up or not at all, below one that bends down)."""
    dx, dy = x2 - x1, y2 - y1
    length = math.hypot(dx, dy) or 1.0
    nx, ny = -dy / length, dx / length
    if down and ny < 0:
        nx, ny = -nx, -ny
    cx, cy = (x1 + x2) / 2 + 2 * nx * offset, (y1 + y2) / 2 + 2 * ny * offset
    side = offset + (_LABEL_GAP if down or offset > 0 else -_LABEL_GAP)
    lx, ly = (x1 + x2) / 2 + nx * side, (y1 + y2) / 2 + ny * side
    return f"M {x1:.1f} {y1:.1f} Q {cx:.1f} {cy:.1f} {x2:.1f} {y2:.1f}", lx, ly


def edge_shapes(vis: Mapping[str, Mapping[str, Any]],
                pos: Mapping[str, tuple[int, int]]) -> list[EdgeShape]:
    """Every subscription between drawn components, laid out as the module doc says."""
    edges: list[tuple[str, str, int, Mapping[str, Any]]] = []
    for name, entry in sorted(vis.items()):
        for i, inp in enumerate(entry.get(":inputs", [])):
            if inp[":component"] in pos:
                edges.append((inp[":component"], name, i, inp))
    pairs: dict[frozenset[str], list[tuple[str, str, int, Mapping[str, Any]]]] = {}
    for edge in edges:
        pairs.setdefault(frozenset(edge[:2]), []).append(edge)
    shapes = []
    for group in pairs.values():
        group.sort(key=lambda e: (e[0], e[1], str(e[3][":stream"]), e[2]))
        lanes: dict[str, int] = {"loop": 0, "forward": 0, "back": 0}
        n_forward = sum(1 for s, t, _, _ in group if s != t and pos[t][0] > pos[s][0])
        for source, target, i, inp in group:
            (sx, sy), (tx, ty) = pos[source], pos[target]
            n_inputs = len(vis[target].get(":inputs", []))
            kind = "loop" if source == target else "forward" if tx > sx else "back"
            k = lanes[kind]
            lanes[kind] += 1
            if kind == "loop":  # below the box, deeper for each further stream
                depth = _LOOP + k * LANE / 0.75
                x0, y0 = sx + _W / 2, sy + _H
                path = (f"M {x0 - 22:.1f} {y0:.1f} C {x0 - 22 - depth * 0.6:.1f} {y0 + depth:.1f} "
                        f"{x0 + 22 + depth * 0.6:.1f} {y0 + depth:.1f} {x0 + 22:.1f} {y0:.1f}")
                mx, my = x0, y0 + 0.75 * depth + _LABEL_GAP
            elif kind == "forward" and tx - sx > _W + _GAP_X:  # over the columns it skips
                t = _GAP_X / (tx - sx - _W)  # where the first skipped box begins, along the curve
                offset = -(_H / 2 + 10) / (4 * t * (1 - t)) - k * LANE
                y2 = ty + _H / 2 + (i - (n_inputs - 1) / 2) * 8
                path, mx, my = _bend(sx + _W, sy + _H / 2, tx, y2, offset)
            elif kind == "forward":  # lanes on both sides of the straight line
                offset = (k - (n_forward - 1) / 2) * LANE
                y2 = ty + _H / 2 + (i - (n_inputs - 1) / 2) * 8
                path, mx, my = _bend(sx + _W, sy + _H / 2, tx, y2, offset)
            else:  # a back edge: from below the source to below the target, bending down
                shift = (i - (n_inputs - 1) / 2) * 8
                path, mx, my = _bend(sx + _W / 2, sy + _H, tx + _W / 2 + shift, ty + _H,
                                     _BACK + k * LANE, down=True)
            stream = str(inp[":stream"])
            rate = float(inp[":rate"])
            shapes.append(EdgeShape(source, target, stream, rate, path, f"{stream} {rate:.1f}/s",
                                    mx, my, max(my + 8, sy + _H, ty + _H)))
    return sorted(shapes, key=lambda s: (s.target, s.source, s.stream))


def render_svg(vis: Mapping[str, Mapping[str, Any]]) -> str:
    """An ``<svg>`` element for a visualization document (``stormdocs.visualization``)."""
    pos = node_positions(vis)
    shapes = edge_shapes(vis, pos)
    width = max((x + _W for x, _ in pos.values()), default=_W) + _PAD
    height = max([y + _H for _, y in pos.values()] + [s.bottom for s in shapes], default=_H) + _PAD
    # labels of many lanes above the first row: the picture starts above them
    top = min([0.0] + [s.label_y - 8 - _PAD / 2 for s in shapes])
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="topology-graph" width="{width:.0f}" '
             f'height="{height - top:.0f}" viewBox="0 {top:.0f} {width:.0f} {height - top:.0f}" '
             'role="img" aria-label="topology graph">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" '
             'markerHeight="8" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
             'fill="#475569"/></marker></defs>']
    for shape in shapes:
        parts.append(f'<g class="edge" data-source="{escape(shape.source)}" '
                     f'data-target="{escape(shape.target)}" data-stream="{escape(shape.stream)}" '
                     f'data-rate="{shape.rate}"><path d="{shape.path}" fill="none" stroke="#475569" '
                     f'stroke-width="1.5" marker-end="url(#arrow)"/>'
                     f'<text x="{shape.label_x:.1f}" y="{shape.label_y:.1f}" font-size="11" '
                     'text-anchor="middle" dominant-baseline="central" fill="#1e293b" '
                     'stroke="#ffffff" stroke-width="4" stroke-linejoin="round" paint-order="stroke">'
                     f'{escape(shape.label)}</text></g>')
    for name, entry in sorted(vis.items()):
        x, y = pos[name]
        kind = str(entry.get(":type"))
        capacity = entry.get(":capacity")
        colour = capacity_colour(kind, capacity)
        detail = f"capacity {capacity}" if capacity is not None else f"{kind}, acked {entry.get(':acked', 0)}"
        parts.append(f'<g class="node" data-component="{escape(name)}" data-kind="{escape(kind)}"'
                     f'{f" data-capacity={chr(34)}{escape(capacity)}{chr(34)}" if capacity else ""}>'
                     f'<a href="{escape(entry.get(":link", "#"))}"><rect x="{x}" y="{y}" width="{_W}" '
                     f'height="{_H}" rx="8" fill="{colour}" stroke="#334155"/>'
                     f'<text x="{x + _W / 2:.0f}" y="{y + 23}" font-size="14" font-weight="bold" '
                     f'text-anchor="middle">{escape(name)}</text>'
                     f'<text x="{x + _W / 2:.0f}" y="{y + 42}" font-size="11" text-anchor="middle" '
                     f'fill="#334155">{escape(detail)}</text></a></g>')
    parts.append("</svg>")
    return "".join(parts)
