"""complete_topology under simulated time waits out the message timeout of a tuple nobody acks:
the run returns it as failed (a spout tuple times out between 1 and 1.5 timeouts), not as
neither acked nor failed."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy import Bolt, Spout, TopologyBuilder
from stormpy.testing import complete_topology


class _Source(Spout):
    outputs = ["n"]

    def next_tuple(self) -> None:
        pass


class _Swallow(Bolt):
    """Acks the even numbers only: the odd ones' trees never complete."""

    def execute(self, tup: Any) -> None:
        if tup["n"] % 2 == 0:
            self.ack(tup)


@pytest.mark.parametrize("timeout", [None, 7])
def test_tuples_nobody_acks_are_failed_by_their_timeout(timeout: int | None) -> None:
    builder = TopologyBuilder()
    builder.set_spout("source", _Source)
    builder.set_bolt("swallow", _Swallow).shuffle_grouping("source")
    conf = {} if timeout is None else {"topology.message.timeout.secs": timeout}
    result = complete_topology(builder.create_topology(), {"source": [[0], [1], [2], [3]]}, conf)
    assert result.acked("source") == [0, 2]
    assert result.failed("source") == [1, 3]
