"""The topology graph's figures (``stormpy.ui._graph``): where each box sits, its colour at the
capacity thresholds Storm's UI uses, the text of each box and edge label, and the picture's size."""

from __future__ import annotations

from stormpy.ui._graph import capacity_colour, node_positions

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
