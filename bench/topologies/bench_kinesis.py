"""The counting bolt of the Kinesis throughput bench (imported by path by the worker)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy import Bolt, TopologyContext, Tuple


class CountRecords(Bolt):
    """Counts records and their bytes; acks every one."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.records = 0
        self.bytes = 0

    def execute(self, tup: Tuple) -> None:
        self.records += 1
        self.bytes += len(tup.values[2])
        self.ack(tup)
