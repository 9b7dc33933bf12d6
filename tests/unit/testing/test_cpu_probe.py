"""The latency bench's machine probe: slowed windows, stalls, and which slow tuples they explain
(pure logic on made-up unit timings; short runs of the real probe process, which wait on what
the probe reports and on its CPU time, never on a fixed time, so a busy machine only slows them)."""

from __future__ import annotations

import json
import shutil
import signal
import sys
from pathlib import Path

import psutil
import pytest
from bench import cpu_probe
from bench.cpu_probe import CpuProbe, covered, in_flight, slow_windows, summary

from stormpy.testing import wait_for

ROOT = Path(__file__).resolve().parents[3]


def units_with(slowed: dict[int, float], n: int = 1000, step: float = 0.001,
               unit: float = 0.0001) -> list[list[float]]:
    """``n`` units ``step`` apart of ``unit`` seconds, unit ``i`` taking ``slowed[i]`` instead."""
    return [[i * step, slowed.get(i, unit)] for i in range(n)]


def test_slow_windows_groups_close_slowed_units_and_keeps_the_worst_factor() -> None:
    # units 100..102 slowed (1 ms apart: one window), 500 alone, 530 is 4x: the border
    units = units_with({100: 0.0008, 101: 0.002, 102: 0.0005, 500: 0.0009, 530: 0.0004})
    median, windows = slow_windows(units)
    assert median == pytest.approx(0.0001)
    assert len(windows) == 3
    start, end, worst = windows[0]
    assert (start, end) == pytest.approx((0.1, 0.102 + 0.0005))
    assert worst == pytest.approx(20.0)
    assert windows[1][:2] == pytest.approx((0.5, 0.5009))
    assert windows[2][2] == pytest.approx(4.0)


def test_slow_windows_of_a_steady_run_is_empty() -> None:
    assert slow_windows(units_with({}))[1] == []
    assert slow_windows([]) == (0.0, [])


def test_in_flight_counts_spans_overlapping_a_window_or_its_drain() -> None:
    windows = [(1.0, 1.03, 20.0)]
    spans = [[0.99, 0.02],   # in flight when the window starts
             [1.01, 0.001],  # inside it
             [1.05, 0.01],   # after it: only with a drain
             [1.2, 0.01],    # well after
             [0.5, 0.1]]     # before
    assert in_flight(spans, windows) == 2
    assert in_flight(spans, windows, after=0.1) == 3
    assert in_flight(spans, []) == 0


def test_covered_is_the_share_of_the_run_in_windows_and_drains_without_double_counting() -> None:
    windows = [(1.0, 1.1, 5.0), (1.15, 1.2, 5.0), (5.0, 5.1, 9.0)]
    # 1.0..1.3 (the drains overlap) + 5.0..5.2 = 0.5 s of 10 s
    assert covered(windows, 0.0, 10.0, after=0.1) == pytest.approx(0.05)
    assert covered(windows, 0.0, 10.0, after=0.0) == pytest.approx(0.025)
    assert covered([], 0.0, 10.0, after=0.1) == 0.0
    assert covered(windows, 3.0, 3.0, after=0.1) == 0.0


def test_summary_counts_only_stalls_of_at_least_five_ms_against_slow_tuples() -> None:
    # a 10 ms stall at 0.2 s and a lone slowed unit (0.8 ms) at 0.7 s
    slowed = {i: 0.001 for i in range(200, 210)}
    slowed[700] = 0.0008
    units = units_with(slowed)
    spans = [[0.205, 0.02], [0.25, 0.006], [0.7, 0.006], [0.9, 0.007]]
    s = summary(units, spans)
    assert s["windows"] == 2 and s["stalls"] == 1
    assert s["longest_window_ms"] == pytest.approx(10.0, abs=0.1)
    assert s["worst_factor"] == pytest.approx(10.0)
    assert s["slow_tuples"] == 4
    assert s["slow_tuples_in_stalls"] == 2  # the one during it, the one in its drain
    assert s["stall_cover_share"] == pytest.approx(0.11 / 1.0001, abs=0.002)
    assert summary([])["windows"] == 0


def test_the_probe_process_times_units_until_sigterm(tmp_path: Path) -> None:
    out = tmp_path / "units.json"
    with CpuProbe(out) as probe:  # returns once the probe runs: its first unit is timed
        assert probe.pid is not None
        running = psutil.Process(probe.pid)
        cpu = sum(running.cpu_times()[:2])
        # more units: CPU time the probe spends after its first unit (its loop is all it does)
        wait_for(lambda: sum(running.cpu_times()[:2]) >= cpu + 0.02, 120, "the probe's next units")
    assert probe.pid is None
    assert len(probe.units) >= 2
    assert all(d > 0 for _, d in probe.units)
    assert [t for t, _ in probe.units] == sorted(t for t, _ in probe.units)
    assert json.loads(out.read_text())["units"] == probe.units


def test_the_probe_writes_nothing_until_it_is_stopped(tmp_path: Path) -> None:
    out = tmp_path / "units.json"
    proc = cpu_probe.start(out, cwd=ROOT)  # running: its handlers are set, a unit is timed
    try:
        assert not out.exists() and not out.with_suffix(".tmp").exists()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            cpu_probe.stop(proc)
    units = json.loads(out.read_text())["units"]
    assert units and cpu_probe.summary(units)["median_unit_us"] > 0


def test_a_probe_that_exits_before_it_runs_is_an_error(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    true = shutil.which("true")
    assert true is not None
    monkeypatch.setattr(sys, "executable", true)  # a "probe" that exits at once, silent
    with pytest.raises(RuntimeError, match=r"the CPU probe exited \(it wrote b'', not b'probing\\n'\)"):
        cpu_probe.start(tmp_path / "units.json")
