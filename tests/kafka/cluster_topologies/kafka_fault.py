"""KafkaSpout → file-writing bolt, observable from outside the worker processes (cluster tests).

In ``out_dir`` (topology config ``kafka.fault.out``):

* ``opens.txt`` — one line ``<spout task id> <pid>`` each time a spout task opens (a listener);
* ``counted-<bolt task id>.txt`` — one line ``<partition> <offset> <value>`` per record, written
  and flushed before the tuple is acked, so every acked record is in these files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stormpy import Bolt, TopologyBuilder, TopologyContext, TopologySpec, Tuple
from stormpy.connectors.kafka import KafkaSpout, KafkaSpoutConfig, KafkaTupleListener

OUT_KEY = "kafka.fault.out"


class OpenRecorder(KafkaTupleListener):
    """Notes every spout task open with the worker's pid."""

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        with open(Path(conf[OUT_KEY]) / "opens.txt", "a") as f:
            f.write(f"{context.task_id} {os.getpid()}\n")


class CountingBolt(Bolt):
    """Writes ``partition offset value`` per record, flushed, then acks."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.out = open(Path(conf[OUT_KEY]) / f"counted-{context.task_id}.txt", "a")  # noqa: SIM115

    def execute(self, tup: Tuple) -> None:
        _, partition, offset, _, value = tup.values
        self.out.write(f"{partition} {offset} {value.decode()}\n")
        self.out.flush()
        self.ack(tup)

    def cleanup(self) -> None:
        self.out.close()


def build(bootstrap: str, topic: str, group: str, spout_executors: int, spout_tasks: int) -> TopologySpec:
    config = KafkaSpoutConfig(
        bootstrap_servers=bootstrap, group_id=group, topics=[topic], offset_commit_period_ms=300,
        partition_refresh_period_ms=1_000, tuple_listener=f"{__name__}:OpenRecorder",
        consumer_props={"fetch.wait.max.ms": 10, "fetch.error.backoff.ms": 10},
        retry={"initial_delay_ms": 0, "delay_period_ms": 10, "max_delay_ms": 200})
    builder = TopologyBuilder()
    builder.set_spout("kafka", KafkaSpout.of(config), spout_executors).set_num_tasks(spout_tasks)
    builder.set_bolt("count", CountingBolt, 2).shuffle_grouping("kafka")
    return builder.create_topology()


def counted(out_dir: Path) -> list[tuple[int, int, str]]:
    """Every complete line of the bolt files (a line cut by kill -9 is left out)."""
    rows = []
    for path in sorted(out_dir.glob("counted-*.txt")):
        for line in path.read_text().split("\n")[:-1]:
            parts = line.split(" ")
            if len(parts) == 3:
                rows.append((int(parts[0]), int(parts[1]), parts[2]))
    return rows


def opens(out_dir: Path) -> list[tuple[int, int]]:
    path = out_dir / "opens.txt"
    if not path.exists():
        return []
    return [(int(a), int(b)) for a, b in (line.split() for line in path.read_text().splitlines())]
