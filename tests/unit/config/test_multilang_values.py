"""The multilang settings as shell components read them (stormpy.config.multilang): the values
taken, and the error naming the setting (and the component whose config holds it)."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy.config import SettingError
from stormpy.config.multilang import max_pending_value, serializer_kind, subprocess_timeout_value

SERIALIZER = "topology.multilang.serializer"
PENDING = "topology.shellbolt.max.pending"


def test_a_serializer_is_named_by_pystorm_or_storm_names() -> None:
    for value, kind in ((None, "json"), ("", "json"), ("JSON", "json"), ("msgpack", "msgpack"),
                        ("org.apache.storm.multilang.JsonSerializer", "json"),
                        ("a.b.MessagePackSerializer", "msgpack"), ("x.MsgpackSerializer", "msgpack")):
        assert serializer_kind(value) == kind


def test_a_bad_serializer_is_refused_naming_the_component_when_it_holds_it() -> None:
    with pytest.raises(SettingError) as err:
        serializer_kind(5, "shell")
    assert str(err.value) == f"{SERIALIZER}: component 'shell': must be a serializer name, got 5"
    with pytest.raises(SettingError) as err:
        serializer_kind(["json"])
    assert str(err.value) == f"{SERIALIZER}: must be a serializer name, got ['json']"
    with pytest.raises(SettingError) as err:
        serializer_kind("a.XmlSerializer", "shell")
    assert str(err.value) == (f"{SERIALIZER}: component 'shell': unknown multilang serializer "
                              "'a.XmlSerializer' (json, msgpack, or a class name ending in "
                              "JsonSerializer / MsgpackSerializer)")
    with pytest.raises(SettingError, match=f"^{SERIALIZER}: unknown multilang serializer 'xml'"):
        serializer_kind("xml")


def test_max_pending_is_an_integer_from_1() -> None:
    assert max_pending_value(1) == 1
    for bad in (0, -1, True, "3", 2.0):
        with pytest.raises(SettingError) as err:
            max_pending_value(bad)
        assert str(err.value) == f"{PENDING}: must be an integer >= 1, got {bad!r}"
    with pytest.raises(SettingError) as err:
        max_pending_value(0, "shell")
    assert str(err.value) == f"{PENDING}: component 'shell': must be an integer >= 1, got 0"


@pytest.mark.parametrize("bad", [0, -1, 0.0, float("inf"), float("nan"), True, "5", None])
def test_the_subprocess_timeout_is_a_finite_number_of_seconds_above_0(bad: Any) -> None:
    with pytest.raises(SettingError) as err:
        subprocess_timeout_value(bad)
    assert str(err.value) == f"topology.subprocess.timeout.secs: must be a number of seconds > 0, got {bad!r}"
    with pytest.raises(SettingError, match="^supervisor.worker.timeout.secs: must be"):
        subprocess_timeout_value(bad, "supervisor.worker.timeout.secs")


def test_a_subprocess_timeout_is_read_as_float_seconds() -> None:
    for value in (0.001, 5, 30.5):
        got = subprocess_timeout_value(value)
        assert got == value and type(got) is float
