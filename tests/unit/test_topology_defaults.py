"""Defaults the topology layer repeats because it may not import ``stormpy.config`` (the import
directions) stay equal to the config's own, and take effect when a conf leaves them out."""

from __future__ import annotations

import pytest

from stormpy.config import DEFAULTS, message_timeout_secs
from stormpy.topology import Bolt, InvalidTopologyError, Spout, TopologyBuilder
from stormpy.topology.spec import DEFAULT_MESSAGE_TIMEOUT_SECS, MIN_MESSAGE_TIMEOUT_KEY
from stormpy.topology.tuple import Tuple


class Nothing(Spout):
    outputs = ["n"]

    def next_tuple(self) -> None:
        pass


class Holder(Bolt):
    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


def test_the_message_timeout_default_is_the_configs() -> None:
    assert DEFAULTS["topology.message.timeout.secs"] == DEFAULT_MESSAGE_TIMEOUT_SECS
    assert message_timeout_secs({}) == DEFAULT_MESSAGE_TIMEOUT_SECS


@pytest.mark.parametrize("need, refused", [(DEFAULT_MESSAGE_TIMEOUT_SECS, False),
                                           (DEFAULT_MESSAGE_TIMEOUT_SECS + 1, True)])
def test_check_conf_applies_the_default_timeout_when_the_conf_has_none(need: int,
                                                                       refused: bool) -> None:
    builder = TopologyBuilder()
    builder.set_spout("nothing", Nothing)
    builder.set_bolt("hold", Holder).shuffle_grouping("nothing") \
        .add_configuration(MIN_MESSAGE_TIMEOUT_KEY, need)
    spec = builder.create_topology()
    if refused:
        with pytest.raises(InvalidTopologyError, match="topology.message.timeout.secs >="):
            spec.check_conf({})
    else:
        spec.check_conf({})
