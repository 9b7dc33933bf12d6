"""The check every emit's values go through (``stormpy.worker.values.check_values``): what is
plain msgpack data and what is refused, at the edges (64-bit integers, nesting depth, dict keys
and values, byte buffers), and the error that names the component, the stream and the value."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy import EmitError
from stormpy.worker.values import check_values


def nested(levels: int, inner: Any = 1) -> Any:
    """``inner`` inside ``levels`` lists."""
    for _ in range(levels):
        inner = [inner]
    return inner


def refusal(values: Any) -> str:
    with pytest.raises(EmitError) as info:
        check_values(values, "comp", "strm")
    return str(info.value)


@pytest.mark.parametrize("values", [
    [], (), ["s", 1, 1.5, True, None, b"b"], ("tuple", "of", "values"),
    [2 ** 64 - 1, -(2 ** 63), 0],
    [[2 ** 64 - 1, -(2 ** 63)]], [{"k": -(2 ** 63)}], [(2 ** 64 - 1,)],
    [{"k": [1, {"n": None}], 2: b"x", (1, 2): "tuple key"}],
    [bytearray(b"buf"), memoryview(b"view")], [[bytearray(b"buf")], {"m": memoryview(b"v")}],
    [nested(65)],
])
def test_plain_data_passes(values: Any) -> None:
    check_values(values, "comp", "strm")


@pytest.mark.parametrize("values, what", [
    ([2 ** 64], f"integer {2 ** 64} does not fit in 64 bits"),
    ([-(2 ** 63) - 1], f"integer {-(2 ** 63) - 1} does not fit in 64 bits"),
    ([[2 ** 64]], f"integer {2 ** 64} does not fit in 64 bits"),
    ([[-(2 ** 63) - 1]], f"integer {-(2 ** 63) - 1} does not fit in 64 bits"),
    ([("ok", [2 ** 70])], f"integer {2 ** 70} does not fit in 64 bits"),
    ([{"k": 2 ** 64}], f"integer {2 ** 64} does not fit in 64 bits"),
    ([{2 ** 64: "v"}], f"integer {2 ** 64} does not fit in 64 bits"),
    ([{frozenset({1}): "v"}], "builtins.frozenset value frozenset({1})"),
    ([{"k": {1}}], "builtins.set value {1}"),
    ([[1, "a", {2}]], "builtins.set value {2}"),
    ([{3}], "builtins.set value {3}"),
    ([nested(66)], "values nested deeper than 64 levels"),
])
def test_what_is_refused_is_named(values: Any, what: str) -> None:
    message = refusal(values)
    assert message == (f"component 'comp', stream 'strm': cannot serialise {what}; emit plain "
                       "data (str, int, float, bool, None, bytes, lists, dicts)")


def test_a_refused_values_text_is_cut_at_80_characters() -> None:
    message = refusal([{"x" * 200}])
    assert "builtins.set value {'" + "x" * 78 + ";" in message


class Opaque:
    pass


def test_an_object_is_named_by_its_module_and_qualified_name() -> None:
    assert f"{__name__}.Opaque value <" in refusal(["ok", Opaque()])


@pytest.mark.parametrize("values, kind", [({"a": 1}, "dict"), ("abc", "str"), (None, "NoneType"),
                                          (iter([1]), "list_iterator")])
def test_values_must_be_a_list_or_tuple(values: Any, kind: str) -> None:
    assert refusal(values) == (f"component 'comp', stream 'strm': emit takes a list of values, "
                               f"got {kind}")


def test_the_first_bad_value_is_the_one_named() -> None:
    assert "integer" in refusal([1, [2 ** 64], {4}])
    assert "builtins.set" in refusal([1, {4}, [2 ** 64]])
    assert "frozenset" in refusal([{frozenset(): {5}}])


def tuple_key(levels: int) -> Any:
    inner: Any = 1
    for _ in range(levels):
        inner = (inner,)
    return inner


def nested_dicts(levels: int) -> Any:
    inner: Any = 1
    for _ in range(levels):
        inner = {"a": inner}
    return inner


def test_dict_keys_and_values_count_towards_the_nesting_depth() -> None:
    check_values([{tuple_key(64): 1}], "comp", "strm")
    check_values([nested_dicts(65)], "comp", "strm")
    assert "values nested deeper than 64 levels" in refusal([{tuple_key(65): 1}])
    assert "values nested deeper than 64 levels" in refusal([nested_dicts(66)])
