"""The kinds of configuration values (stormpy.config.checks): what each accepts, at its bounds,
and the one error naming the key, what was expected and the value given."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy.config import SettingError
from stormpy.config.checks import AnyOf, Check, Choice, Custom, Flag, Int, ListOf, Map, Number, Port, Text


def refusal(check: Check, value: Any, key: str = "my.key") -> str:
    with pytest.raises(SettingError) as refused:
        check(key, value)
    assert refused.value.setting == key
    return str(refused.value)


def test_a_check_returns_the_value_as_written_and_refuses_naming_key_expectation_and_value() -> None:
    value = 3
    assert Int(1, 5)("k", value) is value
    assert refusal(Int(1, 5), 6) == "my.key: must be an integer in 1..5, got 6"
    assert refusal(Int(1, 5), "6", "other") == "other: must be an integer in 1..5, got '6'"


@pytest.mark.parametrize(("check", "expected"), [
    (Int(), "an integer"), (Int(0), "an integer >= 0"), (Int(high=9), "an integer <= 9"),
    (Int(1, 65535), "an integer in 1..65535"), (Port(), "an integer in 1..65535"),
    (Number(), "a number"), (Number(0.5), "a number >= 0.5"), (Number(0, above=True), "a number > 0"),
    (Number(high=1e6), "a number <= 1e+06"), (Number(0, 1), "a number in 0..1"),
    (Number(0, unit="seconds", above=True), "a number of seconds > 0"),
    (Number(0.05, unit="seconds"), "a number of seconds >= 0.05"),
    (Flag(), "true or false"), (Text(), "a non-empty string"),
    (Text(pattern="/.*", expected="a path"), "a path"),
    (Choice(("memory", 5)), "one of memory, 5"),
    (ListOf(Int(1)), "a list of items, each an integer >= 1"),
    (ListOf(Text(), min_len=2), "a list of at least 2 items, each a non-empty string"),
    (ListOf(Text(), min_len=1, single=True),
     "a non-empty string or a list of at least 1 items, each a non-empty string"),
    (Map(), "a map"), (AnyOf((Flag(), Int(0))), "true or false or an integer >= 0"),
    (Custom(lambda k, v: v, "a rule's value"), "a rule's value"),
])
def test_each_kind_says_what_it_expects(check: Check, expected: str) -> None:
    assert check.expected == expected


def test_an_integer_is_an_int_but_not_a_bool_within_inclusive_bounds() -> None:
    check = Int(-2, 3)
    for good in (-2, 0, 3):
        assert check.accepts(good)
    for bad in (-3, 4, True, False, 1.0, "1", None):
        assert not check.accepts(bad), bad
    assert Int().accepts(-10**30) and Int().accepts(10**30)
    assert Int(0).accepts(0) and not Int(0).accepts(-1) and Int(0).accepts(10**9)
    assert Int(high=0).accepts(0) and not Int(high=0).accepts(1) and Int(high=0).accepts(-10**9)
    assert Port().accepts(1) and Port().accepts(65535)
    assert not Port().accepts(0) and not Port().accepts(65536)


def test_a_number_is_a_finite_int_or_float_but_not_a_bool() -> None:
    check = Number(0, 1)
    for good in (0, 0.0, 0.5, 1, 1.0):
        assert check.accepts(good), good
    for bad in (-0.001, 1.001, True, False, float("nan"), float("inf"), "0.5", None):
        assert not check.accepts(bad), bad
    assert Number().accepts(-1e300) and Number().accepts(1e300)
    assert not Number().accepts(float("-inf"))
    above = Number(2, above=True)
    assert not above.accepts(2) and above.accepts(2.0001) and above.accepts(10**9)
    at_least = Number(2)
    assert at_least.accepts(2) and not at_least.accepts(1.9999)
    assert Number(high=5).accepts(5) and not Number(high=5).accepts(5.1) and Number(high=5).accepts(-9)


def test_a_flag_is_a_bool_only() -> None:
    assert Flag().accepts(True) and Flag().accepts(False)
    for bad in (1, 0, "true", None):
        assert not Flag().accepts(bad)
    assert refusal(Flag(), "yes") == "my.key: must be true or false, got 'yes'"


def test_text_has_something_besides_blanks_and_matches_its_pattern_whole() -> None:
    assert Text().accepts("x") and Text().accepts(" x ")
    for bad in ("", "  \t", 5, None, b"x"):
        assert not Text().accepts(bad), bad
    blank_ok = Text(empty=True)
    assert blank_ok.accepts("") and blank_ok.accepts("  ") and not blank_ok.accepts(None)
    path = Text(pattern=r"/[a-z]*")
    assert path.accepts("/abc") and path.accepts("/")
    assert not path.accepts("/abc/") and not path.accepts("x/abc") and not path.accepts("/ABC")
    assert not Text(pattern=r"/[a-z]*").accepts("   ")
    assert Text(pattern=r"\s*", empty=True).accepts("  ")


def test_a_choice_is_one_of_its_values_in_any_case_and_only_a_string() -> None:
    check = Choice(("memory", "SQLite", 5))
    for good in ("memory", "MEMORY", "sqlite", "SqLiTe", "5"):
        assert check.accepts(good), good
    for bad in ("mem", "", 5, None, ["memory"]):
        assert not check.accepts(bad), bad
    assert refusal(check, "redis") == "my.key: must be one of memory, SQLite, 5, got 'redis'"


def test_a_list_holds_enough_items_each_accepted_and_a_single_item_may_stand_alone() -> None:
    check = ListOf(Int(1), min_len=2)
    assert check.accepts([1, 2]) and check.accepts((1, 2, 3))
    for bad in ([1], [], [1, 0], [1, "2"], 5, "12", {1: 1, 2: 2}, None):
        assert not check.accepts(bad), bad
    assert ListOf(Int()).accepts([])
    single = ListOf(Text(), min_len=1, single=True)
    assert single.accepts("host") and single.accepts(["a", "b"])
    assert not single.accepts([]) and not single.accepts("") and not single.accepts(5)
    assert not ListOf(Text()).accepts("host")
    assert refusal(check, [1]) == "my.key: must be a list of at least 2 items, each an integer >= 1, got [1]"


def test_a_map_has_string_keys() -> None:
    assert Map().accepts({}) and Map().accepts({"a": 1, "b": [2]})
    for bad in ({1: "a"}, {"a": 1, 2: "b"}, [("a", 1)], "a", None):
        assert not Map().accepts(bad), bad


def test_any_of_accepts_what_one_of_its_choices_accepts() -> None:
    check = AnyOf((Flag(), Int(5)))
    assert check.accepts(True) and check.accepts(7)
    assert not check.accepts(3) and not check.accepts("true")
    assert refusal(check, 3) == "my.key: must be true or false or an integer >= 5, got 3"


def test_a_custom_rule_raises_its_own_error_naming_the_key_and_accepts_what_it_passes() -> None:
    seen: list[tuple[str, Any]] = []

    def rule(key: str, value: Any) -> None:
        seen.append((key, value))
        if value != "ok":
            raise SettingError(f"{key}.inner" if key else "inner", f"bad {value!r}")

    check = Custom(rule, "an ok")
    assert check("outer", "ok") == "ok" and seen == [("outer", "ok")]
    with pytest.raises(SettingError) as refused:
        check("outer", "no")
    assert str(refused.value) == "outer.inner: bad 'no'"
    assert check.accepts("ok") and not check.accepts("no")
    assert seen[-1] == ("", "no")
    with pytest.raises(ValueError):  # only a SettingError means "not accepted"
        Custom(lambda k, v: int(v)).accepts("x")


# -- the key table's own rules ---------------------------------------------------------------------
def register(value: Any) -> None:
    from stormpy.config import check_value

    check_value("topology.metrics.consumer.register", value)


def test_metrics_consumers_are_a_list_of_maps_with_a_class_and_optional_fields() -> None:
    class Consumer:
        pass

    register([])
    register([{"class": "pkg.mod:Consumer.Inner"},
              {"class": Consumer, "argument": [1], "parallelism.hint": 3}])
    register(({"class": "a:B", "parallelism.hint": 1},))


@pytest.mark.parametrize(("value", "message"), [
    ({"class": "a:B"}, "topology.metrics.consumer.register: must be a list of maps, got {'class': 'a:B'}"),
    ("a:B", "topology.metrics.consumer.register: must be a list of maps, got 'a:B'"),
    ([{"class": "a:B"}, "a:B"],
     "topology.metrics.consumer.register[1]: must be a map with a 'class', got 'a:B'"),
    ([{"class": "a:B", "parallelism": 2, "args": 1}],
     "topology.metrics.consumer.register[0]: has unknown fields ['args', 'parallelism'] (known: class, "
     "argument, parallelism.hint)"),
    ([{"class": "a.B"}],
     "topology.metrics.consumer.register[0].class: must be an import path 'module:Class', got 'a.B'"),
    ([{"class": ":B"}],
     "topology.metrics.consumer.register[0].class: must be an import path 'module:Class', got ':B'"),
    ([{"class": "a:"}],
     "topology.metrics.consumer.register[0].class: must be an import path 'module:Class', got 'a:'"),
    ([{"class": "a::B"}],
     "topology.metrics.consumer.register[0].class: must be an import path 'module:Class', got 'a::B'"),
    ([{"class": "a:B:"}],
     "topology.metrics.consumer.register[0].class: must be an import path 'module:Class', got 'a:B:'"),
    ([{"argument": 1}],
     "topology.metrics.consumer.register[0].class: is missing or not an import path 'module:Class'"),
    ([{"class": 5}],
     "topology.metrics.consumer.register[0].class: is missing or not an import path 'module:Class'"),
    ([{"class": "a:B", "parallelism.hint": 0}],
     "topology.metrics.consumer.register[0].parallelism.hint: must be an integer >= 1, got 0"),
    ([{"class": "a:B", "parallelism.hint": True}],
     "topology.metrics.consumer.register[0].parallelism.hint: must be an integer >= 1, got True"),
    ([{"class": "a:B", "parallelism.hint": 2.0}],
     "topology.metrics.consumer.register[0].parallelism.hint: must be an integer >= 1, got 2.0"),
])
def test_a_bad_metrics_consumer_is_refused_naming_the_entry_and_field(value: Any, message: str) -> None:
    with pytest.raises(SettingError) as refused:
        register(value)
    assert str(refused.value) == message
