"""Real multilang components under the shell host: Storm's own storm.py (a spout and the
split-sentence BasicBolt), a Node.js bolt and a Perl bolt (asking for task ids) speaking the
protocol directly, and a streamparse-style
pystorm word count run through the host (JSON and msgpack) and in-process, all giving the same
counts."""

from __future__ import annotations

import shutil
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pystorm_wordcount as wordcount
import pytest
from mlkit import conf, no_subprocess_left_behind

from stormpy import TopologyBuilder
from stormpy.multilang import ShellBolt, ShellSpout, pystorm_component
from stormpy.testing import Capture, FeederSpout, LocalCluster, wait_for

pytestmark = pytest.mark.timeout(60)

SENTENCES = ["the cow jumped over the moon", "an apple a day keeps the doctor away",
             "four score and seven years ago", "snow white and the seven dwarfs"]
WORDS = Counter(w for s in SENTENCES for w in s.split())


@pytest.fixture(autouse=True)
def _no_subprocess_left_behind() -> Iterator[None]:
    yield from no_subprocess_left_behind()


def test_storm_py_spout_and_split_bolt() -> None:
    sink = Capture()
    b = TopologyBuilder()
    b.set_spout("sentences", ShellSpout(sys.executable, "sentence_spout.py", *SENTENCES)
                .declare(["sentence"]))
    b.set_bolt("split", ShellBolt(sys.executable, "splitsentence.py").declare(["word"]), 2) \
        .shuffle_grouping("sentences")
    b.set_bolt("sink", sink).shuffle_grouping("split")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(), b.create_topology())
        wait_for(lambda: cluster.get_stats("t")["sentences"]["acked"] == len(SENTENCES), 30,
                 "every sentence acked (storm.py's BasicBolt anchors and acks)")
        assert Counter(v[0] for v in sink.values) == WORDS
        assert cluster.errors("t") == []


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_node_bolt() -> None:
    feeder, sink = FeederSpout(["sentence"]), Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("split", ShellBolt("node", "split.js").declare(["word"]), 2) \
        .shuffle_grouping("feeder")
    b.set_bolt("sink", sink).shuffle_grouping("split")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(), b.create_topology())
        for i, sentence in enumerate([*SENTENCES, "fail me"]):
            feeder.feed([sentence], i)
        wait_for(lambda: len(feeder.acked) == len(SENTENCES) and feeder.failed == [len(SENTENCES)],
                 30, "the sentences acked and 'fail me' failed by the Node.js bolt")
        assert Counter(v[0] for v in sink.values) == WORDS
        assert cluster.errors("t") == []


@pytest.mark.skipif(shutil.which("perl") is None, reason="Perl is not installed")
def test_perl_bolt_asking_for_task_ids() -> None:
    feeder, sink = FeederSpout(["sentence"]), Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("split", ShellBolt("perl", "split.pl").declare(["word"])).shuffle_grouping("feeder")
    b.set_bolt("sink", sink, 2).shuffle_grouping("split")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(), b.create_topology())
        for i, sentence in enumerate(SENTENCES):
            feeder.feed([sentence], i)
        wait_for(lambda: len(feeder.acked) == len(SENTENCES), 30,
                 "the sentences acked by the Perl bolt")
        assert Counter(v[0] for v in sink.values) == WORDS
        assert cluster.errors("t") == []


@pytest.mark.parametrize("mode", ["in-process", "json", "msgpack"])
def test_pystorm_word_count(mode: str) -> None:
    shell = mode != "in-process"
    serializer = mode if shell else None
    sink = Capture()
    b = TopologyBuilder()
    b.set_spout("sentences", pystorm_component(wordcount.SentenceSpout))
    b.set_bolt("split", pystorm_component(wordcount.SplitSentenceBolt, shell=shell,
                                          serializer=serializer), 2).shuffle_grouping("sentences")
    b.set_bolt("count", pystorm_component(wordcount.WordCountBolt, shell=shell,
                                          serializer=serializer), 2) \
        .fields_grouping("split", ["word"])
    b.set_bolt("sink", sink).shuffle_grouping("count")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(**{wordcount.SENTENCES_KEY: SENTENCES}),
                                b.create_topology())
        wait_for(lambda: cluster.get_stats("t")["sentences"]["acked"] == len(SENTENCES), 30,
                 "every sentence acked")
        final: dict[str, int] = {}
        for word, count in sink.values:
            final[word] = max(final.get(word, 0), count)
        assert final == dict(WORDS)
        assert cluster.errors("t") == []


STREAMPARSE_PROJECT = Path(__file__).resolve().parents[1] / "multilang" / "streamparse_wordcount"


@pytest.mark.parametrize("serializer", ["json", "msgpack"])
def test_streamparse_topology_through_the_shell_host(serializer: str) -> None:
    """A streamparse project's Topology class (stormpy.multilang.streamparse) with every
    component run as on Storm: a subprocess per task importing it from the project's src/."""
    import importlib

    project = importlib.import_module("topologies.wordcount")  # on pytest's pythonpath
    sentences = project.config["wordcount.sentences"]
    words = Counter(w for s in sentences for w in s.split())
    counts = Capture()
    b = project.WordCount.to_builder(shell=True, serializer=serializer)
    b.set_bolt("counts", counts).shuffle_grouping("count_bolt")
    with LocalCluster() as cluster:
        cluster.submit_topology("wc", {**project.config, **conf(**{
            "worker.code.dir": str(STREAMPARSE_PROJECT / "src")})}, b.create_topology())
        wait_for(lambda: cluster.get_stats("wc")["sentence_spout"]["acked"] == len(sentences), 30,
                 "every sentence acked")
        final: dict[str, int] = {}
        for word, count in counts.values:
            final[word] = max(final.get(word, 0), count)
        assert final == dict(words)
        assert cluster.errors("wc") == []
