"""The topology graph as SVG, drawn on the server from the visualization document.

Layout: each component sits in the column of its longest path from a spout (spouts in column 0),
rows in name order. Every subscription is an arrow labelled ``<stream> <rate>/s``. A bolt's box
is coloured by its capacity (green below 0.5, amber below 0.8, red from 0.8, like Storm's UI)
when the workers report execute latencies, grey otherwise; spouts are blue. Every text is
escaped; the SVG needs no script and no external resource.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

__all__ = ["capacity_colour", "render_svg"]

_W, _H, _GAP_X, _GAP_Y, _PAD = 170, 56, 110, 36, 20


def capacity_colour(kind: str, capacity: str | None) -> str:
    if kind == "spout":
        return "#cfe2ff"
    if capacity is None:
        return "#e5e7eb"
    value = float(capacity)
    return "#bbf7d0" if value < 0.5 else "#fde68a" if value < 0.8 else "#fca5a5"


def _columns(vis: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    column: dict[str, int] = {}

    def depth(name: str, seen: frozenset[str]) -> int:
        if name in column:
            return column[name]
        inputs = [i[":component"] for i in vis[name].get(":inputs", []) if i[":component"] in vis]
        parents = [p for p in inputs if p not in seen]
        value = 0 if not parents else 1 + max(depth(p, seen | {name}) for p in parents)
        column[name] = value
        return value

    for name in sorted(vis):
        depth(name, frozenset())
    return column


def render_svg(vis: Mapping[str, Mapping[str, Any]]) -> str:
    """An ``<svg>`` element for a visualization document (``stormdocs.visualization``)."""
    columns = _columns(vis)
    pos: dict[str, tuple[int, int]] = {}
    rows: dict[int, int] = {}
    for name in sorted(vis, key=lambda n: (columns[n], n)):
        col = columns[name]
        row = rows.get(col, 0)
        rows[col] = row + 1
        pos[name] = (_PAD + col * (_W + _GAP_X), _PAD + row * (_H + _GAP_Y))
    width = _PAD * 2 + (max(columns.values(), default=0) + 1) * (_W + _GAP_X) - _GAP_X
    height = _PAD * 2 + max(rows.values(), default=1) * (_H + _GAP_Y) - _GAP_Y
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="topology-graph" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="topology graph">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" '
             'markerHeight="8" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
             'fill="#475569"/></marker></defs>']
    for name, entry in sorted(vis.items()):
        tx, ty = pos[name]
        for i, inp in enumerate(entry.get(":inputs", [])):
            source = inp[":component"]
            if source not in pos:
                continue
            sx, sy = pos[source]
            x1: float = sx + _W
            y1: float = sy + _H / 2
            x2: float = tx
            y2: float = ty + _H / 2 + (i - (len(entry[":inputs"]) - 1) / 2) * 8
            if source == name or x2 <= x1:  # a loop or a back edge: go around below
                x1, y1, x2, y2 = sx + _W / 2, sy + _H, tx + _W / 2, ty + _H
            label = f'{inp[":stream"]} {inp[":rate"]:.1f}/s'
            parts.append(f'<g class="edge" data-source="{escape(source)}" data-target="{escape(name)}" '
                         f'data-stream="{escape(inp[":stream"])}" data-rate="{inp[":rate"]}">'
                         f'<line x1="{x1:.0f}" y1="{y1:.0f}" x2="{x2:.0f}" y2="{y2:.0f}" stroke="#475569" '
                         f'stroke-width="1.5" marker-end="url(#arrow)"/>'
                         f'<text x="{(x1 + x2) / 2:.0f}" y="{(y1 + y2) / 2 - 6:.0f}" font-size="11" '
                         f'text-anchor="middle" fill="#1e293b">{escape(label)}</text></g>')
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
