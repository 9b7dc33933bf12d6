"""The checkpoint spout keeps its interval on the topology's clock: under the testing kit's
simulated time a stateful bolt's checkpoints commit as simulated time moves, so
complete_topology sees its held inputs acked (they were never acked when the interval ran on the
wall clock while the kit moved simulated time on)."""

from __future__ import annotations

from typing import Any

from stormpy import Spout, TopologyBuilder
from stormpy.state import KeyValueState, StatefulBolt
from stormpy.testing import complete_topology


class _Orders(Spout):
    outputs = ["customer", "amount"]

    def next_tuple(self) -> None:
        pass


class _Totals(StatefulBolt):
    outputs = ["customer", "total"]

    def init_state(self, state: KeyValueState) -> None:
        self.totals = state

    def execute(self, tup: Any) -> None:
        total = self.totals.get(tup["customer"], 0) + tup["amount"]
        self.totals.put(tup["customer"], total)
        self.emit([tup["customer"], total], anchors=tup)
        self.ack(tup)


def test_a_stateful_bolts_inputs_are_acked_at_a_simulated_checkpoint() -> None:
    builder = TopologyBuilder()
    builder.set_spout("orders", _Orders)
    builder.set_bolt("totals", _Totals, 2).fields_grouping("orders", ["customer"])
    orders = [["alice", 10], ["bob", 5], ["alice", 3]]
    result = complete_topology(builder.create_topology(), {"orders": orders},
                               {"topology.state.checkpoint.interval.ms": 2000})
    assert sorted(result.tuples("totals")) == [["alice", 10], ["alice", 13], ["bob", 5]]
    assert result.acked("orders") == [0, 1, 2]
    assert result.failed("orders") == []
