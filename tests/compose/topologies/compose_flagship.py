"""The flagship pipeline writing under ``STORMPY_SHARED_DIR`` (read when the topology is built, at
submit), a directory mounted at the same path in the supervisors and the Spark worker: the Spark
executors write the Parquet output where the reporter's driver reads it back."""

from __future__ import annotations

import os
from pathlib import Path

import flagship
from stormpy.topology import TopologySpec

LINES = 6000
config = dict(flagship.config)


def topology() -> TopologySpec:
    return flagship.build_topology(Path(os.environ["STORMPY_SHARED_DIR"]) / "flagship",
                                   lines=LINES)
