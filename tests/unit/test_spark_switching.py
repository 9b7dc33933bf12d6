"""The process's thread switch interval held low while Spark bolts run (connectors/spark/
switching.py): the lowest hold wins, the last restore puts back what was there before."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from stormpy.connectors.spark import switching


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    monkeypatch.setattr(switching, "_holders", 0)
    monkeypatch.setattr(switching, "_saved", None)
    yield
    sys.setswitchinterval(before)


def test_a_hold_lowers_the_interval_and_its_restore_puts_the_old_one_back() -> None:
    assert switching.lower(0.0005) is True
    assert sys.getswitchinterval() == pytest.approx(0.0005)
    switching.restore()
    assert sys.getswitchinterval() == pytest.approx(0.005)
    assert switching._holders == 0 and switching._saved is None  # noqa: SLF001


def test_holds_nest_the_lowest_wins_and_only_the_last_restore_resets() -> None:
    switching.lower(0.001)
    switching.lower(0.002)  # higher than the current: held, not raised
    assert sys.getswitchinterval() == pytest.approx(0.001)
    switching.lower(0.0002)
    assert sys.getswitchinterval() == pytest.approx(0.0002)
    switching.restore()
    switching.restore()
    assert sys.getswitchinterval() == pytest.approx(0.0002)
    switching.restore()
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_a_hold_above_the_current_interval_keeps_it_and_restores_it() -> None:
    sys.setswitchinterval(0.001)
    assert switching.lower(0.01) is True
    assert sys.getswitchinterval() == pytest.approx(0.001)
    sys.setswitchinterval(0.003)  # changed meanwhile by someone else: the saved one comes back
    switching.restore()
    assert sys.getswitchinterval() == pytest.approx(0.001)


@pytest.mark.parametrize("seconds", [None, 0, 0.0, -1.0])
def test_none_zero_or_negative_takes_no_hold(seconds: float | None) -> None:
    assert switching.lower(seconds) is False
    assert sys.getswitchinterval() == pytest.approx(0.005)
    assert switching._holders == 0  # noqa: SLF001


def test_a_restore_without_a_hold_changes_nothing() -> None:
    switching.restore()
    assert sys.getswitchinterval() == pytest.approx(0.005)
    assert switching._holders == 0  # noqa: SLF001
    switching.lower(0.0005)
    switching.restore()
    switching.restore()  # one too many
    assert sys.getswitchinterval() == pytest.approx(0.005)
    assert switching._holders == 0  # noqa: SLF001
