"""Bolts that wait on the component clock, for the tests of simulated time (the test kit's and
LocalCluster's): under simulated time they move only when the test advances it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy import Bolt, TopologyContext, Tuple


class Sleepy(Bolt):
    """Sleeps 30 s on the component clock (``context.clock``), then passes the tuple on."""

    outputs = ["v"]

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.clock = context.clock

    def execute(self, tup: Tuple) -> None:
        self.clock.sleep(30)
        self.emit(list(tup.values), anchors=tup)
        self.ack(tup)
