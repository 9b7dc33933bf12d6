"""The settings checks at their edges (``stormpy._settings``): a bound itself is accepted, the
message states the span that was asked (both bounds, one, none), every check raises the caller's
subclass, a number comes back as a float, the import-path forms accepted and refused, and a
settings document's unknown keys listed sorted with the known ones."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Self

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
from stormpy.config import SettingError


class OwnError(SettingError):
    """A connector's own subclass: every check must raise it when asked to."""


def problem(check: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(OwnError) as err:
        check("X.y", *args, error=OwnError, **kwargs)
    assert err.value.setting == "X.y"
    return err.value.problem


def test_check_int_accepts_its_bounds_and_states_the_span_asked() -> None:
    assert check_int("s", 1, 1, 5) == 1 and check_int("s", 5, 1, 5) == 5
    assert check_int("s", -7) == -7 and check_int("s", 9, None, 9) == 9
    assert problem(check_int, 0, 1, 5) == "must be an integer in 1..5, got 0"
    assert problem(check_int, 6, None, 5) == "must be an integer <= 5, got 6"
    assert problem(check_int, 0, 1) == "must be an integer >= 1, got 0"
    assert problem(check_int, "3") == "must be an integer, got '3'"
    assert problem(check_int, 2.0, 1, 5) == "must be an integer in 1..5, got 2.0"
    assert problem(check_int, False, 0) == "must be an integer >= 0, got False"


def test_check_number_gives_a_float_and_refuses_bools_text_and_infinities() -> None:
    value = check_number("s", 3, 3)
    assert value == 3.0 and type(value) is float
    assert check_number("s", -2.5) == -2.5
    assert problem(check_number, True) == "must be a number, got True"
    assert problem(check_number, "1") == "must be a number, got '1'"
    assert problem(check_number, math.inf, 0) == "must be a number >= 0, got inf"
    assert problem(check_number, 0.25, 0.5, unit="seconds") == \
        "must be a number of seconds >= 0.5, got 0.25"
    assert problem(check_number, None, unit="bytes") == "must be a number of bytes, got None"


def test_check_text_flag_and_mapping_raise_the_callers_error() -> None:
    assert problem(check_text, 3) == "must be a non-empty string, got 3"
    assert problem(check_text, "", "a topic name") == "must be a topic name, got ''"
    assert check_text("s", " t ") == " t "
    assert problem(check_flag, 1) == "must be True or False, got 1"
    assert check_flag("s", True) is True
    assert problem(check_mapping, "a=1", "a mapping of properties") == \
        "must be a mapping of properties, got 'a=1'"
    assert problem(check_mapping, {"ok": 1, 2: 3}) == "names must be strings, got 2"
    props = {"a": 1}
    assert check_mapping("s", props) is props


@pytest.mark.parametrize("path", ["pkg.mod:Class", "pkg.mod.Class", "m:f", "a_b.c_d:E_f"])
def test_check_import_path_accepts_module_and_name(path: str) -> None:
    assert check_import_path("s", path) == path


@pytest.mark.parametrize("path", ["Class", "pkg.mod:", ":Class", "pkg mod:C", "pkg.mod:C x", 3])
def test_check_import_path_refuses_what_cannot_be_imported(path: Any) -> None:
    assert problem(check_import_path, path) == \
        f"must be an import path like 'package.module:Class', got {path!r}"


@dataclass
class Tuning:
    """A settings class with a required field, defaults and a field not given to ``__init__``."""

    name: str
    size: int = 1
    tags: list[str] = field(default_factory=list)
    seen: int = field(default=0, init=False)
    counter: int = field(init=False, default_factory=lambda: 0)

    def validate(self) -> Self:
        check_int("Tuning.size", self.size, 1, error=OwnError)
        return self


def test_settings_from_doc_needs_only_the_fields_without_defaults() -> None:
    built = settings_from_doc(Tuning, {"name": "t"}, error=OwnError)
    assert (built.name, built.size, built.tags) == ("t", 1, [])
    with pytest.raises(OwnError) as err:
        settings_from_doc(Tuning, {"size": 2}, error=OwnError)
    assert (err.value.setting, err.value.problem) == ("Tuning.name", "is required")


def test_settings_from_doc_errors_name_the_class_and_list_keys_sorted() -> None:
    with pytest.raises(OwnError) as err:
        settings_from_doc(Tuning, {"name": "t", "zeta": 1, "alpha": 2}, error=OwnError)
    assert (err.value.setting, err.value.problem) == (
        "Tuning", "unknown settings ['alpha', 'zeta'] (known: ['counter', 'name', 'seen', 'size', 'tags'])")
    with pytest.raises(OwnError) as err:
        settings_from_doc(Tuning, "name=t", error=OwnError)
    assert (err.value.setting, err.value.problem) == ("Tuning",
                                                      "expected a mapping of settings, got 'name=t'")


def test_settings_from_doc_validates_what_it_builds_and_a_given_instance() -> None:
    with pytest.raises(OwnError, match=r"^Tuning.size: must be an integer >= 1, got 0$"):
        settings_from_doc(Tuning, {"name": "t", "size": 0})
    with pytest.raises(OwnError, match=r"^Tuning.size: must be an integer >= 1, got 0$"):
        settings_from_doc(Tuning, Tuning("t", 0))
