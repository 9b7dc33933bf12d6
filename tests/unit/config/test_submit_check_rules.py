"""The submit check's rules (stormpy.config.validate.check_topology_config) on hand-made
components: the config's shape, unknown core keys, the state provider, and what windows need of
the message timeout and of max spout pending, at their edges and in their order."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy.config import SettingError
from stormpy.config.validate import (
    SUBMIT_WARNINGS_KEY,
    WARNING_LOG_EXTRA,
    check_topology_config,
)

TIMEOUT = "topology.message.timeout.secs"
PENDING = "topology.max.spout.pending"
MIN_TIMEOUT = "topology.message.timeout.secs.min"
MIN_PENDING = "topology.max.spout.pending.min"


class Part:
    """A component as the submit check reads it."""

    def __init__(self, kind: str, **config: Any) -> None:
        self.kind = kind
        self.config = config


def timed(secs: float) -> Part:
    return Part("bolt", **{MIN_TIMEOUT: secs})


def counted(n: int) -> Part:
    return Part("bolt", **{MIN_PENDING: n})


def spout(pending: int | None = None) -> Part:
    return Part("spout", **({} if pending is None else {PENDING: pending}))


def test_the_names_front_ends_read() -> None:
    assert SUBMIT_WARNINGS_KEY == "topology.submit.warnings"
    assert WARNING_LOG_EXTRA == {"submit_warning": True}


@pytest.mark.parametrize("conf", [["topology.workers", 1], "topology.workers=1", None, {1: 2},
                                  {"topology.workers": 1, 2: "x"}])
def test_a_config_that_is_not_a_map_with_string_keys_is_refused(conf: Any) -> None:
    with pytest.raises(SettingError) as refused:
        check_topology_config(conf, {})
    assert str(refused.value) == f"topology config: must be a map with string keys, got {conf!r}"


def test_unknown_core_keys_are_warnings_in_key_order_with_a_hint_when_one_is_close() -> None:
    warnings = check_topology_config({"topology.workrs": 2, "storm.zzzzzz.qqqqqq": 1,
                                      "dev.zzzzzzzzzz": 1, "myapp.anything": 1,
                                      "topology.workers": 2}, {})
    assert warnings == [
        "unknown config key dev.zzzzzzzzzz; it is passed on but stormpy does not read it",
        "unknown config key storm.zzzzzz.qqqqqq; it is passed on but stormpy does not read it",
        "unknown config key topology.workrs (did you mean topology.workers?); it is passed on but "
        "stormpy does not read it"]


def test_every_components_own_values_are_checked_in_component_order() -> None:
    parts = {"b2": Part("bolt", **{"topology.tasks": 0}), "b1": Part("bolt", **{"topology.tasks": -1})}
    with pytest.raises(SettingError, match="^topology.tasks: component 'b1': must be an integer"):
        check_topology_config({}, parts)


def test_the_state_provider_is_checked_with_the_defaults_under_the_topology_and_cluster() -> None:
    conf = {"topology.state.provider": "sqlite", "topology.state.provider.config": {"nope": 1}}
    with pytest.raises(SettingError, match="^topology.state.provider.config"):
        check_topology_config(conf, {})
    with pytest.raises(SettingError, match="^topology.state.provider.config"):
        check_topology_config({"topology.state.provider": "sqlite"}, {},
                              cluster_conf={"topology.state.provider.config": {"nope": 1}})
    # the topology's own provider config over the cluster's
    assert check_topology_config({"topology.state.provider.config": {"path": "/tmp/x.db"}}, {},
                                 cluster_conf={"topology.state.provider.config": {"nope": 1}}) == []


def test_a_message_timeout_below_a_windows_need_is_refused_naming_the_component() -> None:
    with pytest.raises(SettingError) as refused:
        check_topology_config({TIMEOUT: 44.5}, {"win": timed(45)})
    assert str(refused.value) == (
        f"{TIMEOUT}: must be >= 45 for component 'win' (its window holds tuples un-acked that "
        "long), got 44.5; raise the timeout or shorten the window")
    assert check_topology_config({TIMEOUT: 45}, {"win": timed(45)}) == []
    # timeouts off, or no timeout known (a client that does not know the cluster's): no refusal
    assert check_topology_config({TIMEOUT: 5, "topology.enable.message.timeouts": False},
                                 {"win": timed(45)}) == []
    assert check_topology_config({}, {"win": timed(45)}) == []
    # the cluster's timeout counts when the topology sets none, the topology's over it
    with pytest.raises(SettingError, match="got 10;"):
        check_topology_config({}, {"win": timed(45)}, cluster_conf={TIMEOUT: 10})
    assert check_topology_config({TIMEOUT: 50}, {"win": timed(45)}, cluster_conf={TIMEOUT: 10}) == []
    with pytest.raises(SettingError, match="got 30;"):
        check_topology_config({}, {"win": timed(45)}, cluster_conf={})
    with pytest.raises(SettingError, match="got 10;"):
        check_topology_config({}, {"win": timed(45)},
                              cluster_conf={TIMEOUT: 10, "topology.enable.message.timeouts": True})


def test_max_spout_pending_below_a_count_windows_need_is_refused_naming_the_component() -> None:
    with pytest.raises(SettingError) as refused:
        check_topology_config({PENDING: 59}, {"a": counted(10), "win": counted(60)})
    assert str(refused.value) == (
        f"{PENDING}: must be >= 60 for component 'win' (its count window holds that many tuples "
        "un-acked), got 59; raise it, unset it or shorten the window")
    assert check_topology_config({PENDING: 60}, {"win": counted(60)}) == []
    assert check_topology_config({}, {"win": counted(60)}, cluster_conf={}) == []
    with pytest.raises(SettingError, match="got 5;"):
        check_topology_config({}, {"win": counted(60)}, cluster_conf={PENDING: 5})


def test_a_spouts_own_pending_below_a_count_window_warns_once_per_spout_and_window() -> None:
    parts = {"win": counted(60), "other": counted(100), "s1": spout(59), "s2": spout(60),
             "s3": spout(), "b": Part("bolt", **{PENDING: 1})}
    assert check_topology_config({}, parts) == [
        f"spout 's1' sets {PENDING} 59, below the 100 tuples the count window of 'other' holds: if "
        "it feeds that window, the window never fills and the spout stalls",
        f"spout 's2' sets {PENDING} 60, below the 100 tuples the count window of 'other' holds: if "
        "it feeds that window, the window never fills and the spout stalls",
        f"spout 's1' sets {PENDING} 59, below the 60 tuples the count window of 'win' holds: if "
        "it feeds that window, the window never fills and the spout stalls"]


def test_a_time_window_warns_of_the_rate_each_pending_limit_allows() -> None:
    parts = {"win": timed(30), "s1": spout(10), "s2": spout(100000)}
    assert check_topology_config({PENDING: 7}, parts) == [
        f"component 'win' holds each tuple un-acked for up to {who_secs} s (its time window); with "
        f"{PENDING} {value} ({who}) a spout task stalls at {value} pending tuples, so the window "
        f"sees at most {rate} tuples/s per spout task; raise or unset {PENDING} if the spouts emit "
        "faster"
        for who_secs, value, who, rate in [(30, 10, "s1", "0.3333"), (30, 100000, "s2", "3333"),
                                           (30, 7, "every spout", "0.2333")]]
    assert check_topology_config({}, {"win": timed(2.5), "s": spout(5)}) == [
        f"component 'win' holds each tuple un-acked for up to 2.5 s (its time window); with "
        f"{PENDING} 5 (s) a spout task stalls at 5 pending tuples, so the window sees at most "
        f"2 tuples/s per spout task; raise or unset {PENDING} if the spouts emit faster"]
    assert check_topology_config({}, {"win": timed(30), "s": spout()}) == []


def test_a_window_needing_nothing_is_no_window() -> None:
    parts = {"win": Part("bolt", **{MIN_TIMEOUT: 0, MIN_PENDING: 0}), "s": spout(1)}
    assert check_topology_config({TIMEOUT: 1, PENDING: 1}, parts) == []


def test_the_warnings_of_every_window_are_kept_in_component_order() -> None:
    parts = {"a": counted(60), "b": timed(30), "c": counted(20), "s": spout(10)}
    assert [w.split(":")[0].split(" (")[0] for w in check_topology_config({}, parts)] == [
        f"spout 's' sets {PENDING} 10, below the 60 tuples the count window of 'a' holds",
        "component 'b' holds each tuple un-acked for up to 30 s",
        f"spout 's' sets {PENDING} 10, below the 20 tuples the count window of 'c' holds"]
