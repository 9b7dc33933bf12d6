"""The topology graph's figures (``stormpy.ui._graph``): where each box sits, its colour at the
capacity thresholds Storm's UI uses, the text of each box and edge label, and the picture's size."""

from __future__ import annotations

from stormpy.ui._graph import capacity_colour, edge_shapes, node_positions, render_svg

GREEN, AMBER, RED, GREY, BLUE = "#bbf7d0", "#fde68a", "#fca5a5", "#e5e7eb", "#cfe2ff"


def test_a_bolts_colour_follows_its_capacity_and_a_spout_is_blue() -> None:
    assert [capacity_colour("bolt", c) for c in ("0.000", "0.499", "0.500", "0.799", "0.800", "2.5")] == [
        GREEN, GREEN, AMBER, AMBER, RED, RED]
    assert capacity_colour("bolt", None) == GREY
    assert capacity_colour("spout", "0.900") == BLUE and capacity_colour("spout", None) == BLUE


def inputs(*sources: str, stream: str = "default") -> list[dict[str, object]]:
    return [{":component": s, ":stream": stream, ":rate": 1.0} for s in sources]


def test_boxes_sit_in_the_column_of_their_longest_path_from_a_spout_rows_in_name_order() -> None:
    vis = {"words": {":type": "spout", ":inputs": []},
           "lines": {":type": "spout", ":inputs": []},
           "split": {":type": "bolt", ":inputs": inputs("lines", "split")},  # a loop moves nothing
           "count": {":type": "bolt", ":inputs": inputs("split", "words", "report")},  # report: a cycle
           "report": {":type": "bolt", ":inputs": inputs("count", "gone")},  # gone: not drawn
           "audit": {":type": "bolt", ":inputs": inputs("words")}}
    # columns 280 px apart (170 + 110), rows 92 px apart (56 + 36), 20 px padding
    assert node_positions(vis) == {"lines": (20, 20), "words": (20, 112), "audit": (300, 20),
                                   "split": (300, 112), "count": (580, 20), "report": (860, 20)}


HEAD = ('<svg xmlns="http://www.w3.org/2000/svg" class="topology-graph" width="{w}" height="{h}" '
        'viewBox="0 {top} {w} {h}" role="img" aria-label="topology graph"><defs><marker id="arrow" '
        'viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#475569"/></marker></defs>')


def edge(source: str, target: str, stream: str, rate: str, path: str, x: str, y: str, label: str) -> str:
    return (f'<g class="edge" data-source="{source}" data-target="{target}" data-stream="{stream}" '
            f'data-rate="{rate}"><path d="{path}" fill="none" stroke="#475569" stroke-width="1.5" '
            f'marker-end="url(#arrow)"/><text x="{x}" y="{y}" font-size="11" text-anchor="middle" '
            'dominant-baseline="central" fill="#1e293b" stroke="#ffffff" stroke-width="4" '
            f'stroke-linejoin="round" paint-order="stroke">{label}</text></g>')


def node(name: str, kind: str, capacity: str, link: str, x: int, fill: str, detail: str) -> str:
    data = f' data-capacity="{capacity}"' if capacity else ""
    return (f'<g class="node" data-component="{name}" data-kind="{kind}"{data}><a href="{link}">'
            f'<rect x="{x}" y="20" width="170" height="56" rx="8" fill="{fill}" stroke="#334155"/>'
            f'<text x="{x + 85}" y="43" font-size="14" font-weight="bold" text-anchor="middle">{name}</text>'
            f'<text x="{x + 85}" y="62" font-size="11" text-anchor="middle" fill="#334155">{detail}</text>'
            '</a></g>')


def test_an_empty_topology_is_one_empty_box_wide() -> None:
    assert render_svg({}) == HEAD.format(w=190, h=76, top=0) + "</svg>"


def test_the_picture_of_lanes_a_loop_a_back_edge_and_an_edge_over_a_column() -> None:
    def to(source: str, stream: str = "default", rate: float = 1.0) -> dict[str, object]:
        return {":component": source, ":stream": stream, ":rate": rate}
    vis = {"s": {":type": "spout", ":inputs": [], ":link": "/c?id=s"},
           "a": {":type": "bolt", ":capacity": "0.250",
                 ":inputs": [to("s", "default", 2.0), to("s", "x", 0.5), to("a", "self", 3.25),
                             to("c", "back")]},
           "c": {":type": "bolt", ":inputs": [to("a"), to("s", "skip", 4.0)], ":acked": 7}}
    # the skip edge's label sits above the first row: the picture starts at y -24 (-5.9 - 8 - 10);
    # the loop's label reaches lowest (118.5), plus 20 px padding
    assert render_svg(vis) == "".join([
        HEAD.format(w=770, h=162, top=-24),
        # the loop below a's box (34 px deep), its label 0.75 x 34 + 9 px below the box
        edge("a", "a", "self", "3.25", "M 363.0 76.0 C 342.6 110.0 427.4 110.0 407.0 76.0", "385.0",
             "110.5", "self 3.2/s"),
        # the back edge from below c to below a, 24 px down, entering a 12 px right of its middle
        # (a's fourth input of four)
        edge("c", "a", "back", "1.0", "M 665.0 76.0 Q 531.0 124.0 397.0 76.0", "531.0", "109.0",
             "back 1.0/s"),
        # two streams between the same two boxes: lanes 9 px either side of the straight line
        edge("s", "a", "default", "2.0", "M 190.0 48.0 Q 243.0 24.1 300.0 36.0", "243.0", "24.1",
             "default 2.0/s"),
        edge("s", "a", "x", "0.5", "M 190.0 48.0 Q 245.7 64.0 300.0 44.0", "245.7", "64.0", "x 0.5/s"),
        edge("a", "c", "default", "1.0", "M 470.0 48.0 Q 525.0 46.0 580.0 44.0", "524.7", "37.0",
             "default 1.0/s"),
        # over a's box to c
        edge("s", "c", "skip", "4.0", "M 190.0 48.0 Q 386.0 -43.8 580.0 52.0", "385.6", "-5.9", "skip 4.0/s"),
        node("a", "bolt", "0.250", "#", 300, GREEN, "capacity 0.250"),
        node("c", "bolt", "", "#", 580, GREY, "bolt, acked 7"),
        node("s", "spout", "", "/c?id=s", 20, BLUE, "spout, acked 0"),
        "</svg>"])


def test_shapes_report_how_low_they_reach() -> None:
    vis = {"s": {":type": "spout", ":inputs": []},
           "b": {":type": "bolt", ":inputs": [{":component": "b", ":stream": "again", ":rate": 0.0},
                                               {":component": "b", ":stream": "more", ":rate": 0.0},
                                               {":component": "s", ":stream": "default", ":rate": 0.0}]}}
    shapes = edge_shapes(vis, node_positions(vis))
    assert [(s.source, s.target, s.stream, s.label, s.bottom) for s in shapes] == [
        ("b", "b", "again", "again 0.0/s", 76 + 0.75 * 34 + 9 + 8),
        ("b", "b", "more", "more 0.0/s", 76 + 0.75 * (34 + 24) + 9 + 8),  # one lane (18 px) deeper
        ("s", "b", "default", "default 0.0/s", 76)]


def to(source: str, stream: str = "default") -> dict[str, object]:
    return {":component": source, ":stream": stream, ":rate": 1.0}


def drawn(vis: dict[str, dict[str, object]]) -> list[tuple[str, str, str, str, float, float, float]]:
    return [(s.source, s.target, s.stream, s.path, round(s.label_x, 1), round(s.label_y, 1), s.bottom)
            for s in edge_shapes(vis, node_positions(vis))]


def test_a_component_reached_again_by_a_longer_path_sits_at_its_end() -> None:
    # c follows a (column 1) and x (column 2, after b): column 3, though a's walk reached it first
    vis: dict[str, dict[str, object]] = {
        "s": {":type": "spout"}, "a": {":inputs": [to("s")]}, "b": {":inputs": [to("s")]},
        "x": {":inputs": [to("b")]}, "c": {":inputs": [to("a"), to("x")]}}
    assert node_positions(vis) == {"s": (20, 20), "a": (300, 20), "b": (300, 112), "x": (580, 20),
                                   "c": (860, 20)}


def test_lanes_go_in_stream_name_order_for_every_kind_of_edge() -> None:
    vis: dict[str, dict[str, object]] = {
        "s": {":type": "spout"},  # no inputs at all
        "a": {":inputs": [to("s", "x"), to("s", "default"), to("c", "back"), to("c", "back2")]},
        "c": {":inputs": [to("a"), to("s", "skip"), to("s", "skip2")]}}
    assert drawn(vis) == [
        # back edges 24 and 42 px down, entering a at its third and fourth input
        ("c", "a", "back", "M 665.0 76.0 Q 527.0 124.0 389.0 76.0", 527.0, 109.0, 117.0),
        ("c", "a", "back2", "M 665.0 76.0 Q 531.0 160.0 397.0 76.0", 531.0, 127.0, 135.0),
        # "default" before "x" whatever the subscription order: the upper lane, entering a higher
        ("s", "a", "default", "M 190.0 48.0 Q 244.3 28.0 300.0 44.0", 244.3, 28.0, 76),
        ("s", "a", "x", "M 190.0 48.0 Q 247.0 59.9 300.0 36.0", 247.0, 59.9, 76),
        ("a", "c", "default", "M 470.0 48.0 Q 525.0 44.0 580.0 40.0", 524.3, 35.0, 76),
        # over a's box, the second stream one lane (18 px) higher
        ("s", "c", "skip", "M 190.0 48.0 Q 385.0 -45.8 580.0 48.0", 385.0, -7.9, 76),
        ("s", "c", "skip2", "M 190.0 48.0 Q 387.7 -77.8 580.0 56.0", 386.5, -21.9, 76)]


def test_two_subscriptions_to_the_same_stream_take_two_lanes_in_their_order() -> None:
    vis: dict[str, dict[str, object]] = {"s": {":type": "spout"},
                                         "b": {":inputs": [{**to("s"), ":rate": 2.0}, to("s")]}}
    shapes = edge_shapes(vis, node_positions(vis))
    assert [(s.label, s.path) for s in shapes] == [
        ("default 2.0/s", "M 190.0 48.0 Q 244.3 28.0 300.0 44.0"),
        ("default 1.0/s", "M 190.0 48.0 Q 244.3 68.0 300.0 52.0")]


def test_a_back_edge_from_a_lower_row_bends_below_both_boxes() -> None:
    vis: dict[str, dict[str, object]] = {
        "s": {":type": "spout"}, "a": {":inputs": [to("s"), to("c", "back")]},
        "bb": {":inputs": [to("a")]}, "c": {":inputs": [to("a")]}}  # c: column 2, second row
    assert drawn(vis)[0] == ("c", "a", "back", "M 665.0 168.0 Q 511.8 167.5 389.0 76.0", 516.6, 153.3, 168)


def test_an_edge_reaches_down_to_the_lower_of_its_two_boxes() -> None:
    vis: dict[str, dict[str, object]] = {
        "s1": {":type": "spout"}, "s2": {":type": "spout"}, "a": {":inputs": [to("s1")]},
        "b": {":inputs": [to("s1"), to("s2")]}}
    assert [(s, t, bottom) for s, t, _, _, _, _, bottom in drawn(vis)] == [
        ("s1", "a", 76), ("s1", "b", 168), ("s2", "b", 168)]


def test_boxes_without_edges_set_the_pictures_height() -> None:
    svg = render_svg({"s1": {":type": "spout"}, "s2": {":type": "spout"}})
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg" class="topology-graph" width="210" '
                          'height="188" viewBox="0 0 210 188" ')
