"""``stormpy monitor``: rates between two topology-info samples and the lines it prints, over a
fake Nimbus (the cluster test shows it on a running topology)."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy.cli.monitor_cmd import rates, run_monitor, sample


class FakeNimbus:
    """Each call: the counters grow by 40 emitted (default stream), 80 transferred, 30 acked."""

    def __init__(self) -> None:
        self.calls = 0

    def topology_info(self, name: str) -> dict[str, Any]:
        n = self.calls
        self.calls += 1
        return {"name": name, "components": {"split": {"tasks": 2, "executors": 2},
                                             "__acker": {"tasks": 1, "executors": 1}},
                "stats": {"split": {"emitted": 50 * n, "transferred": 80 * n, "acked": 30 * n}},
                "streams": {"split": {"default": 40 * n, "other": 10 * n}}}


def test_sample_and_rates() -> None:
    info = FakeNimbus.topology_info(type("N", (), {"calls": 2})(), "wc")  # type: ignore[arg-type]
    assert sample(info, "split", "default", 5.0) == (5.0, 80, 160, 60)
    assert sample(info, "split", "nope", 5.0)[1] == 0
    secs, deltas, per_sec = rates((0.0, 10, 20, 30), (2.0, 50, 10, 50))
    assert secs == 2.0 and deltas == [40, 10, 20]  # a counter that went down counts from zero
    assert per_sec == [20.0, 5.0, 10.0]


def test_run_monitor_prints_a_line_per_interval(capsys: pytest.CaptureFixture[str]) -> None:
    now = [100.0]

    def sleep(secs: float) -> None:
        now[0] += secs

    run_monitor(FakeNimbus(), "wc", "split", "default", 2.0, "transferred",  # type: ignore[arg-type]
                clock=lambda: now[0], sleep=sleep, samples=2)
    lines = capsys.readouterr().out.splitlines()
    assert "component split (2 tasks) stream default" in lines[0] and "watching transferred" in lines[0]
    assert lines[1].split() == ["time", "secs", "transferred", "emitted/s", "transferred/s", "acked/s"]
    assert [line.split()[1:] for line in lines[2:]] == [["2.0", "80", "20.0", "40.0", "15.0"]] * 2


def test_run_monitor_names_the_components_of_an_unknown_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run_monitor(FakeNimbus(), "wc", "nope", "default", 1.0, "emitted", samples=1)  # type: ignore[arg-type]
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "'nope'" in err and "split" in err and "__acker" not in err
