"""The state provider's settings (stormpy.config.state) at their edges: what each reader takes,
its defaults, and the error naming the key and entry for each bad value."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy.config import SettingError
from stormpy.config.state import positive_number


@pytest.mark.parametrize(("value", "read"), [(None, 7.5), ("", 7.5), (0, 7.5), (0.0, 7.5), (3, 3.0),
                                             (0.25, 0.25)])
def test_a_positive_number_or_the_default_when_unset(value: Any, read: float) -> None:
    got = positive_number("my.key", value, 7.5)
    assert got == read and type(got) is float


@pytest.mark.parametrize("value", [-1, -0.5, False, True, "3", [1], float("nan")])
def test_anything_else_is_refused_naming_the_setting(value: Any) -> None:
    with pytest.raises(SettingError) as refused:
        positive_number("my.key", value, 7.5)
    assert str(refused.value) == f"my.key: must be a positive number, got {value!r}"
