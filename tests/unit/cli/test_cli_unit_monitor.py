"""``stormpy monitor``'s lines exactly (``cli/monitor_cmd.py``), on a driven clock and a fake Nimbus:
the heading, the column titles, each interval's time, seconds, watched tuples and rates of the
chosen component and stream; a restarted worker's counters; the refusal of an unknown component
naming the topology's components; and the samples and rates at their edges."""

from __future__ import annotations

import re
from typing import Any

import pytest

from stormpy.cli.monitor_cmd import rates, run_monitor, sample


class Counters:
    """Nimbus answering ``topology_info`` from a list of (emitted on default, on other,
    transferred, acked) of component ``split``; records the names asked."""

    def __init__(self, readings: list[tuple[int, int, int, int]], components: Any = None) -> None:
        self.readings = readings
        self.asked: list[str] = []
        self.components = components if components is not None else {
            "split": {"tasks": 3}, "count": {"tasks": 2}, "__acker": {"tasks": 1}}

    def topology_info(self, name: str) -> dict[str, Any]:
        self.asked.append(name)
        default, other, transferred, acked = self.readings[min(len(self.asked) - 1, len(self.readings) - 1)]
        info: dict[str, Any] = {"stats": {"split": {"transferred": transferred, "acked": acked},
                                          "count": {"transferred": 1000, "acked": 1000}},
                                "streams": {"split": {"default": default, "other": other},
                                            "count": {"default": 1000}}}
        if self.components != "missing":
            info["components"] = self.components
        return info


class Clock:
    def __init__(self) -> None:
        self.now = 50.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, secs: float) -> None:
        self.slept.append(secs)
        self.now += secs


def monitor(nimbus: Counters, capsys: pytest.CaptureFixture[str], stream: str = "default",
            interval: float = 0.5, watch: str = "emitted", samples: int = 2) -> list[list[str]]:
    clock = Clock()
    run_monitor(nimbus, "wc", "split", stream, interval, watch,  # type: ignore[arg-type]
                clock=clock, sleep=clock.sleep, samples=samples)
    assert clock.slept == [interval] * samples
    assert nimbus.asked == ["wc"] * (samples + 1)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (f"topology wc component split (3 tasks) stream {stream}: every {interval:g} s, "
                      f"watching {watch}")
    assert out[1] == f"time          secs {watch:>12}   emitted/s  transferred/s   acked/s"
    for line in out[2:]:
        assert re.fullmatch(r"\d\d:\d\d:\d\d ", line[:9]), line
    return [line[9:].split() for line in out[2:]]


def test_each_interval_prints_the_emitted_tuples_and_the_rates(capsys: pytest.CaptureFixture[str]) -> None:
    nimbus = Counters([(0, 0, 0, 0), (40, 5, 80, 30), (100, 9, 200, 45)])
    assert monitor(nimbus, capsys) == [["0.5", "40", "80.0", "160.0", "60.0"],
                                       ["0.5", "60", "120.0", "240.0", "30.0"]]


def test_watching_transferred_and_another_stream(capsys: pytest.CaptureFixture[str]) -> None:
    nimbus = Counters([(10, 3, 0, 0), (40, 5, 80, 30)])
    assert monitor(nimbus, capsys, stream="other", interval=2.0, watch="transferred", samples=1) == [
        ["2.0", "80", "1.0", "40.0", "15.0"]]


def test_a_restarted_worker_counts_from_its_new_value(capsys: pytest.CaptureFixture[str]) -> None:
    nimbus = Counters([(100, 0, 100, 100), (20, 0, 100, 150)])
    assert monitor(nimbus, capsys, interval=1.0, samples=1) == [["1.0", "20", "20.0", "0.0", "50.0"]]


@pytest.mark.parametrize(("components", "listed"), [
    ({"split": {"tasks": 1}, "count": {"tasks": 1}, "__acker": {"tasks": 1}}, "count, split"),
    ({"__acker": {"tasks": 1}}, "(none)"),
    ("missing", "(none)")])
def test_an_unknown_component_is_refused_with_the_components(components: Any, listed: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run_monitor(Counters([(0, 0, 0, 0)], components),  # type: ignore[arg-type]
                    "wc", "spilt", "default", 1.0, "emitted", samples=1)
    assert exit_info.value.code == 2
    assert capsys.readouterr() == (
        "", f"error: topology 'wc' has no component 'spilt'; its components: {listed}\n")


def test_a_sample_of_a_topology_without_figures_yet() -> None:
    assert sample({}, "split", "default", 3.0) == (3.0, 0, 0, 0)
    empty = {"stats": {"split": {}}, "streams": {"split": {}}}
    assert sample(empty, "split", "default", 1.5) == (1.5, 0, 0, 0)


def test_rates_at_their_edges() -> None:
    assert rates((0.0, 5, 5, 5), (0.5, 5, 6, 4)) == (0.5, [0, 1, 4], [0.0, 2.0, 8.0])
    secs, deltas, per_sec = rates((2.0, 0, 0, 0), (2.0, 1, 0, 0))  # one clock reading: no division by 0
    assert secs == 1e-9 and deltas == [1, 0, 0] and per_sec[0] == 1 / 1e-9
