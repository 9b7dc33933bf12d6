"""The multilang settings (``topology.multilang.serializer``, ``topology.subprocess.timeout.secs``,
``topology.shellbolt.max.pending``) are checked when a topology is submitted, in its config and
in each component's own config, and a bad one is refused with a SettingError naming the setting
(and the component): by the one submit check, which LocalCluster, Nimbus and the Nimbus client
(before it uploads) run."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from stormpy import TopologyBuilder
from stormpy.client import NimbusClient
from stormpy.config import DEFAULTS, SettingError
from stormpy.config.multilang import max_pending_value, serializer_kind, subprocess_timeout_value
from stormpy.config.validate import check_topology_config
from stormpy.multilang import ShellBolt
from stormpy.nimbus.submission import prepare_submission
from stormpy.rpc.errors import TopologyRefusedError
from stormpy.testing import FeederSpout, LocalCluster
from stormpy.topology._spec import TopologySpec

SERIALIZER = "topology.multilang.serializer"
TIMEOUT = "topology.subprocess.timeout.secs"
PENDING = "topology.shellbolt.max.pending"


class Part:
    """A component as the submit check reads it."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.kind = "bolt"
        self.config = config


def submit_check(conf: dict[str, Any], comp_confs: dict[str, dict[str, Any]]) -> None:
    check_topology_config(conf, {cid: Part(c) for cid, c in comp_confs.items()}, cluster_conf={})


def shell_topology(component_conf: dict[str, Any] | None = None) -> TopologySpec:
    b = TopologyBuilder()
    b.set_spout("feed", FeederSpout(["sentence"]))
    split = b.set_bolt("split", ShellBolt(sys.executable, "-c", "pass").declare(["word"]))
    split.shuffle_grouping("feed")
    if component_conf:
        split.add_configurations(component_conf)
    return b.create_topology()


@pytest.mark.parametrize("value", [None, "json", "msgpack", "JSON",
                                   "org.apache.storm.multilang.JsonSerializer",
                                   "pystorm.serializers.MsgpackSerializer",
                                   "x.MessagePackSerializer"])
def test_storms_and_pystorms_serializer_names_are_taken(value: Any) -> None:
    assert serializer_kind(value) in ("json", "msgpack")


def test_good_and_unset_values_pass_and_defaults_apply() -> None:
    submit_check(DEFAULTS, {})
    submit_check({SERIALIZER: "msgpack", TIMEOUT: 2.5, PENDING: 1},
                             {"split": {SERIALIZER: "json", PENDING: 7}, "sink": {}})
    assert max_pending_value(DEFAULTS[PENDING]) == 100
    assert max_pending_value(3) == 3
    assert subprocess_timeout_value(0.5) == 0.5


@pytest.mark.parametrize(("conf", "setting", "problem"), [
    ({SERIALIZER: "xml"}, SERIALIZER, "unknown multilang serializer 'xml'"),
    ({SERIALIZER: 3}, SERIALIZER, "must be a serializer name, got 3"),
    ({TIMEOUT: 0}, TIMEOUT, "must be a number of seconds > 0, got 0"),
    ({TIMEOUT: "soon"}, TIMEOUT, "must be a number of seconds > 0, got 'soon'"),
    ({TIMEOUT: float("inf")}, TIMEOUT, "must be a number of seconds > 0"),
    ({TIMEOUT: True}, TIMEOUT, "must be a number of seconds > 0, got True"),
    ({PENDING: 0}, PENDING, "must be an integer >= 1, got 0"),
    ({PENDING: 2.5}, PENDING, "must be an integer >= 1, got 2.5"),
])
def test_a_bad_topology_setting_is_refused_naming_it(conf: dict[str, Any], setting: str,
                                                      problem: str) -> None:
    with pytest.raises(SettingError) as err:
        submit_check(conf, {})
    assert err.value.setting == setting
    assert problem in str(err.value)
    assert str(err.value).startswith(f"{setting}: ")


@pytest.mark.parametrize(("comp_conf", "setting", "problem"), [
    ({SERIALIZER: "protobuf"}, SERIALIZER, "unknown multilang serializer 'protobuf'"),
    ({PENDING: -1}, PENDING, "must be an integer >= 1, got -1"),
])
def test_a_bad_component_setting_is_refused_naming_the_component(
        comp_conf: dict[str, Any], setting: str, problem: str) -> None:
    with pytest.raises(SettingError) as err:
        submit_check(DEFAULTS, {"sink": {}, "split": comp_conf})
    assert err.value.setting == setting
    assert str(err.value).startswith(f"{setting}: component 'split': ")
    assert problem in str(err.value)


def test_local_cluster_refuses_a_bad_setting_at_submit_and_starts_nothing() -> None:
    with LocalCluster() as cluster:
        with pytest.raises(SettingError, match=rf"^{PENDING}: component 'split': must be an "
                                               r"integer >= 1, got 0"):
            cluster.submit_topology("t", {}, shell_topology({PENDING: 0}))
        with pytest.raises(SettingError, match=rf"^{TIMEOUT}: must be a number of seconds > 0"):
            cluster.submit_topology("t", {TIMEOUT: -1}, shell_topology())
        assert "t" not in cluster.topologies()


def test_nimbus_refuses_a_bad_setting_naming_it_and_the_component() -> None:
    with pytest.raises(TopologyRefusedError) as err:
        prepare_submission("t", shell_topology({SERIALIZER: "xml"}), {}, {})
    assert f"{SERIALIZER}: component 'split': unknown multilang serializer 'xml'" in str(err.value)
    with pytest.raises(TopologyRefusedError, match=rf"topology 't' refused: {PENDING}: must be an "):
        prepare_submission("t", shell_topology(), {PENDING: "lots"}, {})


def test_the_nimbus_client_refuses_a_bad_setting_before_uploading(tmp_path: Any) -> None:
    doc = shell_topology({PENDING: 0}).to_doc()
    missing = tmp_path / "never-read.zip"  # the check comes first: the bundle is never opened
    with NimbusClient("127.0.0.1", 9, timeout_secs=1, retries=0) as client:
        with pytest.raises(SettingError, match=rf"^{PENDING}: component 'split'"):
            client.submit("t", missing, doc, {})
        with pytest.raises(SettingError, match=rf"^{SERIALIZER}: unknown multilang serializer"):
            client.submit("t", missing, shell_topology().to_doc(), {SERIALIZER: "yaml"})
