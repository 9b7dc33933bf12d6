"""The soak's verdict (``bench.soak.verdict``): a series growing faster than its bound fails, a
flat one (or one growing by less than the tolerance over a short run) passes, a worker's own
start-up is not counted as growth, ZooKeeper's RSS is held to a ceiling, and a lost id fails the
run whatever the series."""

from __future__ import annotations

from bench.soak import BOUNDS, Series, slope_per_hour, verdict


def series(role: str, pid: int, metric: str, values: list[float], start: float = 0.0) -> Series:
    s = Series(role, pid)
    s.points[metric] = [(start + i, v) for i, v in enumerate(values)]
    return s


def run(*ss: Series, lost: int = 0) -> dict:
    return verdict({(s.role, s.pid): s for s in ss}, warmup_min=5.0, minutes=60.0, lost=lost,
                   count=1000, kills=[], rate=10.0, drain_secs=1.0)


def test_slope_is_per_hour() -> None:
    assert slope_per_hour([(0, 0), (1, 1), (2, 2)]) == 60.0
    assert slope_per_hour([(0, 5), (1, 5)]) is None  # too few points to fit


def test_a_leaking_daemon_fails_and_a_flat_one_passes() -> None:
    leak = BOUNDS["daemon"][0] * 2 / 60  # MB per minute: twice the bound
    out = run(series("nimbus", 1, "rss_mb", [50 + leak * i for i in range(60)]),
              series("supervisor-0", 2, "rss_mb", [50.0] * 60))
    verdicts = {c["role"]: c["ok"] for c in out["checks"]}
    assert verdicts == {"nimbus": False, "supervisor-0": True}
    assert out["ok"] is False


def test_one_more_fd_in_a_short_run_is_tolerated_a_steady_climb_is_not() -> None:
    short = run(series("nimbus", 1, "fds", [20] * 8 + [21] * 7))
    assert short["ok"], short
    climbing = run(series("nimbus", 1, "fds", [20 + i // 3 for i in range(60)]))
    assert not climbing["ok"]


def test_worker_start_up_is_warm_up_and_zookeeper_rss_has_a_ceiling() -> None:
    # a worker restarted at minute 30: its first minutes climb, then it is flat
    worker = series("worker", 7, "rss_mb", [15, 30, 34, 34.5] + [35.0] * 26, start=30.0)
    zk = series("zookeeper", 3, "rss_mb", [60 + 3 * i for i in range(60)])  # fills its heap
    out = run(worker, zk)
    assert out["ok"], out
    assert run(series("zookeeper", 3, "rss_mb", [60 + 10 * i for i in range(60)]))["ok"] is False


def test_a_lost_id_fails_the_run() -> None:
    assert run(series("nimbus", 1, "rss_mb", [50.0] * 60), lost=1)["ok"] is False
