"""The one style of settings classes (``stormpy._settings``): every check raises a SettingError
(or the connector's subclass of it) whose ``setting`` names what to change and whose message
starts with it; a few bad values per settings class; the config readers of defaults."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from stormpy._settings import (
    check_flag,
    check_import_path,
    check_int,
    check_mapping,
    check_number,
    check_text,
    settings_from_doc,
)
from stormpy.config import (
    DEFAULTS,
    ConfigError,
    SettingError,
    local_dir,
    log_dir,
    message_timeout_secs,
)
from stormpy.connectors.kafka import KafkaBoltConfig, KafkaConfigError, KafkaSpoutConfig
from stormpy.connectors.kinesis import KinesisSpoutConfig
from stormpy.connectors.spark._settings import batch_timeout_secs, probe_secs, switch_interval_secs
from stormpy.windowing import Count, Duration, WindowConfig, WindowConfigError


def test_the_specific_errors_are_setting_errors_so_old_except_clauses_keep_working() -> None:
    for cls in (KafkaConfigError, WindowConfigError):
        err = cls("X.y", "is bad")
        assert isinstance(err, SettingError) and isinstance(err, ConfigError)
        assert isinstance(err, ValueError) and str(err) == "X.y: is bad"
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is cls and (back.setting, back.problem) == ("X.y", "is bad")


@pytest.mark.parametrize(("check", "value", "problem"), [
    (lambda v: check_int("s", v, 1), 0, "must be an integer >= 1, got 0"),
    (lambda v: check_int("s", v, 1, 5), 6, "must be an integer in 1..5, got 6"),
    (lambda v: check_int("s", v), True, "must be an integer, got True"),
    (lambda v: check_number("s", v, 0, unit="seconds"), -1, "must be a number of seconds >= 0, got -1"),
    (lambda v: check_number("s", v), float("nan"), "must be a number, got nan"),
    (lambda v: check_text("s", v), "  ", "must be a non-empty string, got '  '"),
    (lambda v: check_flag("s", v), "yes", "must be True or False, got 'yes'"),
    (lambda v: check_mapping("s", v), [1], "must be a mapping, got [1]"),
    (lambda v: check_mapping("s", v), {1: 2}, "names must be strings, got 1"),
    (lambda v: check_import_path("s", v), "no path", "must be an import path like "
                                                     "'package.module:Class', got 'no path'"),
])
def test_each_check_names_the_setting(check: Any, value: Any, problem: str) -> None:
    with pytest.raises(SettingError) as err:
        check(value)
    assert (err.value.setting, err.value.problem) == ("s", problem)


def test_each_check_returns_a_good_value_and_raises_the_callers_subclass() -> None:
    assert check_int("s", 3, 1, 5) == 3 and check_number("s", 2) == 2.0
    assert check_text("s", "x") == "x" and check_flag("s", False) is False
    assert check_import_path("s", "a.b:C") == "a.b:C" and check_mapping("s", {"k": 1}) == {"k": 1}
    with pytest.raises(KafkaConfigError):
        check_int("s", -1, 0, error=KafkaConfigError)


def test_settings_from_doc_refuses_non_mappings_unknown_and_missing_settings() -> None:
    with pytest.raises(SettingError, match=r"^KafkaBoltConfig: expected a mapping of settings"):
        settings_from_doc(KafkaBoltConfig, ["x"])
    with pytest.raises(SettingError, match=r"^KafkaBoltConfig: unknown settings \['topik'\]"):
        settings_from_doc(KafkaBoltConfig, {"bootstrap_servers": "h:1", "topik": "t"})
    with pytest.raises(SettingError) as err:
        settings_from_doc(KafkaBoltConfig, {"topic": "t"})
    assert err.value.setting == "KafkaBoltConfig.bootstrap_servers"
    ok = settings_from_doc(KafkaBoltConfig, {"bootstrap_servers": "h:1", "topic": "t"})
    assert ok.topic == "t" and settings_from_doc(KafkaBoltConfig, ok) is ok
    with pytest.raises(TypeError, match="not a dataclass"):
        settings_from_doc(int, {})  # type: ignore[type-var]


KAFKA = {"bootstrap_servers": "h:1", "group_id": "g", "topics": ["t"]}


@pytest.mark.parametrize(("build", "setting"), [
    (lambda: KafkaSpoutConfig(**{**KAFKA, "max_poll_records": 0}), "KafkaSpoutConfig.max_poll_records"),
    (lambda: KafkaSpoutConfig(**{**KAFKA, "tuple_listener": "x"}), "KafkaSpoutConfig.tuple_listener"),
    (lambda: KafkaSpoutConfig(**{**KAFKA, "batch_acking": 1}), "KafkaSpoutConfig.batch_acking"),
    (lambda: KafkaBoltConfig("h:1", topic=""), "KafkaBoltConfig.topic"),
    (lambda: KafkaBoltConfig("h:1", topic="t", max_backlog=-1), "KafkaBoltConfig.max_backlog"),
    (lambda: KafkaBoltConfig("h:1", topic="t", producer_props={"error_cb": 1}),
     "KafkaBoltConfig.producer_props"),
    (lambda: KafkaBoltConfig("", topic="t"), "KafkaBoltConfig.bootstrap_servers"),
    (lambda: KinesisSpoutConfig("n", "s", records_per_get=0), "KinesisSpoutConfig.records_per_get"),
    (lambda: KinesisSpoutConfig("n", "s", endpoint_url=""), "KinesisSpoutConfig.endpoint_url"),
    (lambda: KinesisSpoutConfig("n", " "), "KinesisSpoutConfig.stream"),
    (lambda: WindowConfig(Count(0), Count(1)), "window length"),
    (lambda: WindowConfig(Count(2), Count(3)), "sliding interval"),
    (lambda: WindowConfig.tumbling(Count(2)).with_(lag=Duration(ms=5)), "lag"),
])
def test_bad_values_of_each_settings_class_name_the_setting(build: Any, setting: str) -> None:
    with pytest.raises(SettingError) as err:
        build().validate()
    assert err.value.setting == setting and str(err.value).startswith(f"{setting}: ")


@pytest.mark.parametrize(("read", "key", "value", "problem"), [
    (batch_timeout_secs, "spark.stormpy.batch.timeout.secs", -5,
     "must be a number of seconds >= 0 or None, got -5"),
    (probe_secs, "spark.stormpy.master.probe.secs", "soon",
     "must be a number of seconds >= 0, got 'soon'"),
    (probe_secs, "spark.stormpy.master.probe.secs", -1, "must be a number of seconds >= 0, got -1"),
    (switch_interval_secs, "spark.stormpy.switch.interval.secs", True,
     "must be a number of seconds >= 0 or None, got True"),
])
def test_spark_settings_readers_name_the_key(read: Any, key: str, value: Any, problem: str) -> None:
    with pytest.raises(SettingError) as err:
        read({key: value})
    assert (err.value.setting, err.value.problem) == (key, problem)


def test_spark_settings_readers_give_the_value_in_force() -> None:
    assert batch_timeout_secs({}) == 300.0
    assert batch_timeout_secs({"spark.stormpy.batch.timeout.secs": 0}) is None
    assert probe_secs(None) == 5.0 and probe_secs({"spark.stormpy.master.probe.secs": 2}) == 2.0
    probe = "spark.stormpy.master.probe.secs"
    assert [probe_secs({probe: v}) for v in (0, None, 1, 0.5)] == [5.0, 5.0, 1.0, 0.5]  # 0: default
    assert switch_interval_secs({"spark.stormpy.switch.interval.secs": None}) is None


def test_defaults_are_read_from_the_config_table() -> None:
    assert message_timeout_secs({}) == DEFAULTS["topology.message.timeout.secs"] == 30
    assert message_timeout_secs({"topology.message.timeout.secs": None}) == 30.0
    assert message_timeout_secs({"topology.message.timeout.secs": 7}) == 7.0
    assert str(local_dir({})) == DEFAULTS["storm.local.dir"] == "stormpy-local"
    assert str(local_dir({"storm.local.dir": "/x"})) == "/x"
    assert str(log_dir({"storm.local.dir": "/x"})) == "/x/logs"
    assert str(log_dir({"storm.log.dir": "/l"})) == "/l"
