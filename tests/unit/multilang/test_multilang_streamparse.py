"""streamparse's topology DSL read by ``stormpy.multilang.streamparse``: a ``Topology`` class of
``Component.spec(...)`` attributes becomes the same stormpy topology as the TopologyBuilder
calls docs/multilang.md's conversion table gives, and runs; bad specs are refused naming the
component (streamparse itself is not installed)."""

from __future__ import annotations

import importlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from stormpy import TopologyBuilder
from stormpy.multilang import pystorm_component
from stormpy.multilang.streamparse import Bolt, Grouping, Spout, Stream, Topology, spec
from stormpy.testing import Capture, LocalCluster, wait_for

PROJECT = Path(__file__).resolve().parents[2] / "multilang" / "streamparse_wordcount"


@pytest.fixture
def project() -> Any:
    """The streamparse project's topology module (the project and its ``src/`` are on pytest's
    pythonpath, as streamparse runs it)."""
    return importlib.import_module("topologies.wordcount")


def test_the_dsl_gives_the_topology_the_builder_would(project: Any) -> None:
    from bolts.wordcount import SplitBolt, TotalBolt, WordCountBolt
    from spouts.sentences import SentenceSpout

    b = TopologyBuilder()
    b.set_spout("sentence_spout", pystorm_component(SentenceSpout))
    b.set_bolt("split_bolt", pystorm_component(SplitBolt), 2).shuffle_grouping("sentence_spout")
    b.set_bolt("count_bolt", pystorm_component(WordCountBolt), 2) \
        .fields_grouping("split_bolt", ["word"])
    b.set_bolt("totals", pystorm_component(TotalBolt)).global_grouping("split_bolt", "lengths")
    assert project.topology == b.create_topology()
    assert [s.name for s in project.WordCount.specs] == [
        "sentence_spout", "split_bolt", "count_bolt", "totals"]
    assert project.config == {"wordcount.sentences": project.WordCount.config[
        "wordcount.sentences"]}


def test_the_streamparse_word_count_runs_in_process(project: Any) -> None:
    sentences = project.config["wordcount.sentences"]
    words = Counter(w for s in sentences for w in s.split())
    counts, totals = Capture(), Capture()
    b = project.WordCount.to_builder()
    b.set_bolt("counts", counts).shuffle_grouping("count_bolt")
    b.set_bolt("totals_seen", totals).shuffle_grouping("totals")
    with LocalCluster() as cluster:
        cluster.submit_topology("wc", project.config, b.create_topology())
        wait_for(lambda: cluster.get_stats("wc")["sentence_spout"]["acked"] == len(sentences), 30,
                 "every sentence acked")
        final: dict[str, int] = {}
        for word, count in counts.values:
            final[word] = max(final.get(word, 0), count)
        assert final == dict(words)
        assert max(v[0] for v in totals.values) == sum(words.values())
        assert cluster.errors("wc") == []


class _Words(Spout):
    outputs = [Stream(["word"]), Stream(["word"], name="picked", direct=True)]


class _Sink(Bolt):
    outputs: list[str] = []


def test_groupings_and_names_map_to_the_builders() -> None:
    class T(Topology):
        words = _Words.spec(par=3, config={"topology.max.spout.pending": 7})
        a = _Sink.spec(inputs={words: Grouping.ALL})
        b = _Sink.spec(inputs={words: Grouping.fields(["word"])})
        c = spec(_Sink, name="sea", inputs={words: Grouping.LOCAL_OR_SHUFFLE})
        d = _Sink.spec(inputs={words["default"]: Grouping.NONE})
        e = _Sink.spec(inputs={words["picked"]: Grouping.DIRECT})

    topo = T.to_topology(shell=True, serializer="msgpack")
    assert set(topo.components) == {"words", "a", "b", "sea", "d", "e"}
    assert topo.components["words"].parallelism == 3
    assert topo.components["words"].config["topology.max.spout.pending"] == 7
    assert topo.components["a"].config["topology.multilang.serializer"] == "msgpack"
    assert {cid: (c.inputs[0].stream, c.inputs[0].grouping.to_doc())
            for cid, c in topo.components.items() if c.inputs} == {
        "a": ("default", {"type": "all"}),
        "b": ("default", {"type": "fields", "fields": ["word"]}),
        "sea": ("default", {"type": "local_or_shuffle"}),
        "d": ("default", {"type": "none"}),
        "e": ("picked", {"type": "direct"}),
    }


@pytest.mark.parametrize(("build", "message"), [
    (lambda: _Sink.spec(inputs="words"), "inputs must be a list of specs"),
    (lambda: _Sink.spec(inputs=[]), "a bolt needs inputs"),
    (lambda: _Sink.spec(inputs={"words": Grouping.SHUFFLE}), "is not a component spec"),
    (lambda: _Sink.spec(inputs={_Words.spec(): "shuffle"}), "is not one of Grouping's"),
])
def test_bad_inputs_are_refused_naming_the_component(build: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        type("T", (Topology,), {"words": _Words.spec(), "bad": build()}).to_topology()


def test_bad_specs_are_refused() -> None:
    with pytest.raises(ValueError, match="a spout takes no inputs"):
        _Words.spec(inputs=[_Words.spec()])
    with pytest.raises(ValueError, match="par must be an integer >= 1"):
        _Sink.spec(inputs=[], par=0)
    with pytest.raises(ValueError, match="not a pystorm Bolt or Spout"):
        spec(dict)
    with pytest.raises(ValueError, match="Grouping.fields needs field names"):
        Grouping.fields()
    with pytest.raises(ValueError, match="has no components"):
        type("Empty", (Topology,), {})
    with pytest.raises(ValueError, match="two components named 'x'"):
        type("Twice", (Topology,), {"x": _Words.spec(), "y": _Words.spec(name="x")})
    outside = _Words.spec(name="outside")
    with pytest.raises(ValueError, match="is not a component of topology Stray"):
        type("Stray", (Topology,), {"w": _Words.spec(),
                                    "s": _Sink.spec(inputs=[outside])}).to_topology()


def test_the_cli_loader_takes_the_topology_module(project: Any) -> None:
    from stormpy.cli.topology_loader import load_topology

    loaded = load_topology(PROJECT, "topologies.wordcount")
    assert loaded.spec == project.topology
    assert loaded.config == project.config
