"""The test kit's contracts a user's test relies on, asserted exactly: the tuples complete_topology
captures, the acked/failed positions, the mocked acks' bookkeeping, FeederSpout/Capture, and the
clear errors for misuse (written for the ``testing`` mutation target, docs/testing.md)."""

from __future__ import annotations

import pytest

from stormpy.testing import MockedSources


def test_mocked_sources_keep_each_spouts_rows_per_stream_in_order() -> None:
    src = MockedSources({"s": [["a"], ["b"]], "t": {"x": [[1, 2]]}})
    src.add_mock_data("s", ["c"], stream="other")
    assert src.data == {"s": [("default", ["a"]), ("default", ["b"]), ("other", ["c"])],
                        "t": [("x", [1, 2])]}
    with pytest.raises(TypeError, match=r"mock data for s/default: each tuple must be a list of values, got 'ab'"):
        src.add_mock_data("s", "ab")
