"""The process's thread switch interval held low while Spark bolts run (connectors/spark/
switching.py): the lowest hold wins, the last restore puts back what was there before."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from stormpy.config import SettingError
from stormpy.connectors.spark import _switching as switching
from stormpy.connectors.spark._settings import SWITCH_INTERVAL_KEY


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


def test_configured_reads_the_setting_with_its_default_and_names_bad_values() -> None:
    assert switching.configured({}, "c") == pytest.approx(switching.DEFAULT_INTERVAL)
    assert switching.configured({SWITCH_INTERVAL_KEY: 0.002}, "c") == pytest.approx(0.002)
    assert switching.configured({SWITCH_INTERVAL_KEY: 1}, "c") == pytest.approx(1.0)
    assert switching.configured({SWITCH_INTERVAL_KEY: None}, "c") is None
    assert switching.configured({SWITCH_INTERVAL_KEY: 0}, "c") is None
    for bad in (-0.001, "fast", True, [0.001]):
        with pytest.raises(SettingError, match=rf"^{SWITCH_INTERVAL_KEY}: must be a number of "
                                               r"seconds >= 0 or None, got .* \(component 'counts'\)"):
            switching.configured({SWITCH_INTERVAL_KEY: bad}, "counts")


class _Context:
    component_id = "commit"


def test_the_spark_committer_holds_the_interval_per_task_and_its_cleanup_restores_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from stormpy.connectors.spark import _committer as committer

    held = [0]
    monkeypatch.setattr(committer, "require_spark", lambda: None)
    monkeypatch.setattr(committer, "retain_spark", lambda: held.__setitem__(0, held[0] + 1))
    monkeypatch.setattr(committer, "release_spark", lambda: held.__setitem__(0, held[0] - 1))
    ctx: Any = _Context()
    committer.SparkCommitterBolt.prepare_task({}, ctx)
    committer.SparkCommitterBolt.prepare_task({}, ctx)
    assert sys.getswitchinterval() == pytest.approx(switching.DEFAULT_INTERVAL)
    committer.SparkCommitterBolt.cleanup_task({}, ctx)
    assert sys.getswitchinterval() == pytest.approx(switching.DEFAULT_INTERVAL)
    committer.SparkCommitterBolt.cleanup_task({}, ctx)
    assert sys.getswitchinterval() == pytest.approx(0.005)
    assert held == [0]
    off = {SWITCH_INTERVAL_KEY: 0}
    committer.SparkCommitterBolt.prepare_task(off, ctx)
    assert sys.getswitchinterval() == pytest.approx(0.005)
    committer.SparkCommitterBolt.cleanup_task(off, ctx)
    assert switching._holders == 0 and held == [0]  # noqa: SLF001
    with pytest.raises(SettingError, match=rf"^{SWITCH_INTERVAL_KEY}: .*\(component 'commit'\)"):
        committer.SparkCommitterBolt.prepare_task({SWITCH_INTERVAL_KEY: "x"}, ctx)
    assert held == [0]
