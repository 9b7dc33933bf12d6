"""KinesisSpout → RecordBolt, whose progress is visible from outside the worker processes (the
Kinesis cluster test): every record the bolt receives is appended as ``<partition key> <sequence
number>`` to ``processed-<task id>.txt`` in ``out_dir`` *before* it is acked. With ``fail_every`` =
n, the first delivery of every record whose data ends in a multiple of n is failed instead (so acks
arrive out of order and records are replayed while later ones are done)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stormpy import Bolt, TopologyBuilder, TopologyContext, TopologySpec, Tuple
from stormpy.connectors.kinesis import KinesisSpout, KinesisSpoutConfig


class RecordBolt(Bolt):
    def __init__(self, out_dir: str, fail_every: int = 0) -> None:
        self.out_dir = out_dir
        self.fail_every = fail_every
        self.failed: set[tuple[str, str]] = set()

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        path = Path(self.out_dir) / f"processed-{context.task_id}.txt"
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def execute(self, tup: Tuple) -> None:
        pk, seq, data = tup.values
        if self.fail_every and int(data.rsplit(b"-", 1)[1]) % self.fail_every == 0 \
                and (pk, seq) not in self.failed:
            self.failed.add((pk, seq))
            self.fail(tup)
            return
        os.write(self.fd, f"{pk} {seq}\n".encode())
        self.ack(tup)

    def cleanup(self) -> None:
        os.close(self.fd)


def processed(out_dir: Path) -> set[tuple[str, str]]:
    """Every (partition key, sequence number) written so far (complete lines only)."""
    out: set[tuple[str, str]] = set()
    for path in out_dir.glob("processed-*.txt"):
        lines = path.read_text().split("\n")[:-1]  # the last element is an unfinished line or ""
        for line in lines:
            pk, _, seq = line.partition(" ")
            if seq:
                out.add((pk, seq))
    return out


def build(config: KinesisSpoutConfig, out_dir: str, spouts: int = 2,
          fail_every: int = 0) -> TopologySpec:
    builder = TopologyBuilder()
    builder.set_spout("kinesis", KinesisSpout.of(config), spouts)
    builder.set_bolt("record", RecordBolt, 2, kwargs={"out_dir": out_dir, "fail_every": fail_every}) \
        .fields_grouping("kinesis", ["partition_key"])
    return builder.create_topology()
