"""complete_topology returns exactly what each component emitted (Storm's word count test)."""

from __future__ import annotations

from collections import Counter

from stormpy import Spout, TopologyBuilder
from stormpy.testing import complete_topology
from stormpy.windowing import Duration, Window, WindowedBolt
from wordcount import build  # examples/ is on pytest's pythonpath


def test_word_count_through_complete_topology() -> None:
    spec = build().create_topology()
    sentences = [["the cow jumped"], ["the moon"], ["cow cow"]]
    result = complete_topology(spec, {"sentences": sentences})
    assert sorted(result.tuples("sentences")) == sorted(sentences)
    words = [w for s in sentences for w in s[0].split()]
    assert sorted(result.tuples("split")) == sorted([w] for w in words)
    final = {}
    for word, count in result.tuples("count"):
        final[word] = max(final.get(word, 0), count)
    assert final == dict(Counter(words))
    assert result.acked("sentences") == [0, 1, 2]
    assert result.failed("sentences") == []
    assert result.stats["count"]["executed"] == len(words)


def test_word_count_across_three_in_process_workers_with_real_messaging() -> None:
    spec = build().create_topology()
    sentences = [[f"w{i % 7} w{i % 3} shared"] for i in range(300)]
    result = complete_topology(spec, {"sentences": sentences}, {"topology.acker.executors": 2},
                               workers=3)
    words = [w for s in sentences for w in s[0].split()]
    final: dict[str, int] = {}
    for word, count in result.tuples("count"):
        final[word] = max(final.get(word, 0), count)
    assert final == dict(Counter(words))
    assert result.acked("sentences") == list(range(300))
    assert result.stats["count"]["executed"] == len(words)


class _Lines(Spout):
    outputs = ["path"]

    def next_tuple(self) -> None:
        pass


class _TopPaths(WindowedBolt):
    outputs = ["end", "path", "hits"]

    def execute(self, window: Window) -> None:
        hits = Counter(t["path"] for t in window.get())
        for path, n in hits.most_common():
            self.emit([window.end_timestamp, path, n])


def test_complete_topology_waits_for_a_window_to_close_in_simulated_time() -> None:
    """A windowed bolt holds its tuples until its window closes: the run moves simulated time
    on until every mocked tuple's tree completed, as a tracked wait does."""
    builder = TopologyBuilder()
    builder.set_spout("lines", _Lines)
    builder.set_bolt("top", _TopPaths.with_tumbling_window(Duration(seconds=5))
                     ).global_grouping("lines")
    result = complete_topology(builder.create_topology(), {"lines": [["/a"], ["/b"], ["/a"]]})
    assert result.tuples("top") == [[5000, "/a", 2], [5000, "/b", 1]]
    assert result.acked("lines") == [0, 1, 2] and result.failed("lines") == []
