"""A multilang word count for a real cluster (a test fixture; this directory is the bundle):
storm.py's sentence spout and split-sentence bolt as shell components run in the worker's code
dir, pystorm's WordCountBolt in-process, and a sink appending each [word, count] to a file of its
task under ``out_dir``."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

import pystorm_wordcount as wordcount

from stormpy import Bolt, TopologyBuilder, TopologySpec, Tuple
from stormpy.multilang import ShellBolt, ShellSpout, pystorm_component
from stormpy.topology._context import TopologyContext


class FileSink(Bolt):
    def __init__(self, out_dir: str) -> None:
        self.out_dir = out_dir

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.out = open(os.path.join(self.out_dir, f"counts-{context.task_id}.txt"), "a")  # noqa: SIM115

    def execute(self, tup: Tuple) -> None:
        self.out.write(f"{tup.values[0]} {tup.values[1]}\n")
        self.out.flush()
        self.ack(tup)

    def cleanup(self) -> None:
        self.out.close()


def build(out_dir: str, sentences: list[str]) -> TopologySpec:
    b = TopologyBuilder()
    b.set_spout("sentences", ShellSpout(sys.executable, "sentence_spout.py", *sentences)
                .declare(["sentence"]))
    b.set_bolt("split", ShellBolt(sys.executable, "splitsentence.py").declare(["word"]), 2) \
        .shuffle_grouping("sentences")
    b.set_bolt("count", pystorm_component(wordcount.WordCountBolt), 2) \
        .fields_grouping("split", ["word"])
    b.set_bolt("sink", FileSink, kwargs={"out_dir": out_dir}).shuffle_grouping("count")
    return b.create_topology()
