"""Duration: seconds, milliseconds and minutes become whole milliseconds; anything else is refused
with a message naming the value."""

from __future__ import annotations

import pytest

from stormpy.windowing import Duration
from stormpy.windowing._config import WindowConfigError


def test_every_unit_becomes_whole_milliseconds() -> None:
    assert Duration(minutes=2).ms == 120_000 and Duration.of_minutes(0.5).ms == 30_000
    assert Duration(seconds=1.5).ms == 1500 and Duration(seconds=3).ms == 3000
    assert Duration(ms=250).ms == 250
    assert Duration(ms=2.0000001).ms == 2  # float noise below a microsecond is rounded away


@pytest.mark.parametrize("kwargs, message", [
    ({"seconds": 0.0015}, "Duration: must be a whole number of milliseconds, got 1.5 ms"),
    ({"ms": 2.5}, "Duration: must be a whole number of milliseconds, got 2.5 ms"),
    ({"seconds": float("inf")}, "Duration: needs a finite number, got inf"),
    ({"seconds": True}, "Duration: needs a finite number, got True"),
    ({"ms": "5"}, "Duration: needs a finite number, got '5'"),
])
def test_bad_durations_are_refused_naming_the_value(kwargs: dict, message: str) -> None:
    with pytest.raises(WindowConfigError) as err:
        Duration(**kwargs)
    assert str(err.value) == message
