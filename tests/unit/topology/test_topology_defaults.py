"""Defaults take effect when a conf leaves a key out: the submit check reads the table's, and the
one default the topology layer repeats (it may not import ``stormpy.config``: the import
directions) stays equal to the table's."""

from __future__ import annotations

import pytest

from stormpy.config import DEFAULTS, SettingError, message_timeout_secs
from stormpy.config.validate import check_topology_config
from stormpy.topology import Bolt, Spout, TopologyBuilder
from stormpy.topology._layout import acker_count
from stormpy.topology._spec import MIN_MESSAGE_TIMEOUT_KEY
from stormpy.topology._tuple import Tuple


class Nothing(Spout):
    outputs = ["n"]

    def next_tuple(self) -> None:
        pass


class Holder(Bolt):
    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


def test_the_message_timeout_default_is_the_tables() -> None:
    assert message_timeout_secs({}) == DEFAULTS["topology.message.timeout.secs"] == 30


def test_one_acker_per_worker_by_default_with_the_tables_worker_count() -> None:
    assert acker_count({}) == DEFAULTS["topology.workers"]
    assert acker_count({"topology.workers": 3}) == 3


@pytest.mark.parametrize("extra, refused", [(0, False), (1, True)])
def test_the_submit_check_applies_the_default_timeout_when_the_conf_has_none(
        extra: int, refused: bool) -> None:
    builder = TopologyBuilder()
    builder.set_spout("nothing", Nothing)
    builder.set_bolt("hold", Holder).shuffle_grouping("nothing") \
        .add_configuration(MIN_MESSAGE_TIMEOUT_KEY, DEFAULTS["topology.message.timeout.secs"] + extra)
    spec = builder.create_topology()
    if refused:
        with pytest.raises(SettingError, match="topology.message.timeout.secs: must be >= 31"):
            check_topology_config({}, spec.components, cluster_conf={})
    else:
        assert check_topology_config({}, spec.components, cluster_conf={}) == []
    # a client that does not know the cluster's values leaves the rule to Nimbus
    assert check_topology_config({}, spec.components) == []
