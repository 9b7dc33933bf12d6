"""A machine probe for the latency runs: how fast does this machine's CPU run, moment by moment?

``python -m bench.cpu_probe OUT`` runs a fixed piece of pure-Python work (a ~60 µs loop) about
every millisecond until SIGTERM, then writes each unit's wall time to ``OUT`` (JSON). It shares
nothing with stormpy (its own process, no sockets, no files until it stops), so a unit that takes
many times its median says the machine itself ran slowly then: a vCPU that the host shares or
throttles, which no guest-side figure (steal time, the guest's scheduler delays) has to show.

It writes one line, :data:`READY_LINE`, to stdout once its signal handlers are set and its first
unit is timed: :func:`start` waits for that line (a deadline, not a guess at how long a busy
machine takes to start Python), so a stop signal sent after it always ends the run cleanly.

``CpuProbe`` starts and stops it around a bench run; ``slow_windows`` groups the slowed units into
windows, and ``in_flight`` says which tuples were in flight during one. On the 2-CPU KVM guest
these benchmarks ran on, the probe alone on the idle machine saw its unit slowed 12–18x for
30–40 ms about every 1.5–2 s: see docs/performance.md, "Cluster, latency and memory".
"""

from __future__ import annotations

import contextlib
import json
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

import psutil

from stormpy.host.processes import terminate

#: a unit this many times the run's median counts as slowed
SLOW_FACTOR = 4.0
#: slowed units closer than this (seconds) belong to one window
WINDOW_GAP = 0.005
#: a slowed window at least this long is a stall (the scale of the p99 target)
STALL_SECS = 0.005
#: how long after a slowed window its backlog is taken to last (``summary``)
DRAIN_SECS = 0.1
#: iterations of the probe's unit of work (~60 µs in CPython 3.11 on a 2.1 GHz Xeon)
UNIT_ITERATIONS = 1500
#: what the probe writes to stdout once it is running (handlers set, first unit timed)
READY_LINE = b"probing\n"
#: how long :func:`start` waits for :data:`READY_LINE` (generous: a loaded machine is slow to
#: start an interpreter)
READY_WAIT_SECS = 120.0


def _unit() -> int:
    s = 0
    for i in range(UNIT_ITERATIONS):
        s += i
    return s


def run(out: Path) -> None:
    """Time one unit every ~1 ms until SIGTERM or SIGINT; write ``{"units": [[t, secs], ...]}``
    (``t`` is ``time.time()`` at the unit's start, comparable with a spout's emit stamps)."""
    stop = False

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    units: list[tuple[float, float]] = []
    clock, wall = time.perf_counter, time.time
    while not stop:
        t, t0 = wall(), clock()
        _unit()
        units.append((t, clock() - t0))
        if len(units) == 1:
            sys.stdout.buffer.write(READY_LINE)
            sys.stdout.flush()
        time.sleep(0.001)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps({"units": units}))
    tmp.replace(out)


def slow_windows(units: Sequence[Sequence[float]], factor: float = SLOW_FACTOR,
                 gap: float = WINDOW_GAP) -> tuple[float, list[tuple[float, float, float]]]:
    """The median unit time and the windows of slowed units: ``(start, end, worst factor)``,
    ``start`` the first slowed unit's start, ``end`` the last one's end. Units slower than
    ``factor`` × median are slowed; slowed units less than ``gap`` seconds apart share a window."""
    if not units:
        return 0.0, []
    times = sorted(d for _, d in units)
    median = times[len(times) // 2]
    windows: list[tuple[float, float, float]] = []
    for t, d in units:
        if median <= 0 or d < factor * median:
            continue
        ratio = d / median
        if windows and t - windows[-1][1] <= gap:
            start, _, worst = windows[-1]
            windows[-1] = (start, t + d, max(worst, ratio))
        else:
            windows.append((t, t + d, ratio))
    return median, windows


def in_flight(spans: Sequence[Sequence[float]],
              windows: Sequence[tuple[float, float, float]], after: float = 0.0) -> int:
    """How many of ``spans`` (``[emit time, latency]``) were in flight during some window or
    the ``after`` seconds that follow it (the backlog a slowed window leaves takes a while to
    drain)."""
    if not windows:
        return 0
    hit = 0
    for emit, latency in spans:
        end = emit + latency
        for start, stop, _ in windows:
            if emit <= stop + after and end >= start:
                hit += 1
                break
    return hit


def covered(windows: Sequence[tuple[float, float, float]], start: float, end: float,
            after: float) -> float:
    """The share of ``start``..``end`` that lies in some window or the ``after`` seconds that
    follow it: the share of tuples ``in_flight`` would count by chance alone."""
    if end <= start:
        return 0.0
    total, reach = 0.0, start
    for s, e, _ in sorted(windows):
        s, e = max(s, reach), min(e + after, end)
        if e > s:
            total += e - s
            reach = e
    return total / (end - start)


def summary(units: Sequence[Sequence[float]], spans: Sequence[Sequence[float]] = ()
            ) -> dict[str, Any]:
    """The probe's figures for a run: median unit (µs); slowed windows (count, share of the
    run's time, longest in ms, worst factor); the stalls among them (windows of at least
    ``STALL_SECS``), and of ``spans`` (slow tuples) how many were in flight during a stall or
    the ``DRAIN_SECS`` after it, beside the share of the run those cover (the chance level)."""
    median, windows = slow_windows(units)
    start = units[0][0] if units else 0.0
    end = (units[-1][0] + units[-1][1]) if units else 0.0
    slowed = sum(e - s for s, e, _ in windows)
    stalls = [w for w in windows if w[1] - w[0] >= STALL_SECS]
    return {"median_unit_us": round(median * 1e6, 1), "windows": len(windows),
            "slowed_share": round(slowed / (end - start), 4) if end > start else 0.0,
            "longest_window_ms": round(max((e - s for s, e, _ in windows), default=0.0) * 1000,
                                       1),
            "worst_factor": round(max((w for _, _, w in windows), default=0.0), 1),
            "stalls": len(stalls),
            "stall_cover_share": round(covered(stalls, start, end, DRAIN_SECS), 4),
            "slow_tuples": len(spans),
            "slow_tuples_in_stalls": in_flight(spans, stalls, DRAIN_SECS)}


def start(out: Path, *, cwd: Path | None = None,
          ready_wait: float = READY_WAIT_SECS) -> subprocess.Popen[bytes]:
    """Start the probe process writing to ``out`` and return it once it is running (it wrote
    :data:`READY_LINE`). RuntimeError (the probe stopped) when it exits first or is not running
    within ``ready_wait`` seconds."""
    proc = subprocess.Popen([sys.executable, "-m", "bench.cpu_probe", str(out)], cwd=cwd,
                            stdout=subprocess.PIPE)
    assert proc.stdout is not None
    try:
        deadline = time.monotonic() + ready_wait
        line, answered = b"", False
        while not answered and (left := deadline - time.monotonic()) > 0:
            if select.select([proc.stdout], [], [], left)[0]:
                line, answered = proc.stdout.readline(), True
        if line != READY_LINE:
            why = (f"was not running after {ready_wait:g} s" if not answered
                   else "exited" if not line else "answered something else")  # b"": it exited
            raise RuntimeError(f"the CPU probe {why} (it wrote {line!r}, not {READY_LINE!r})")
    except BaseException:
        stop(proc)
        raise
    finally:
        proc.stdout.close()  # it writes nothing more
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the probe (SIGKILL if it outlives a long grace) and reap it."""
    with contextlib.suppress(psutil.NoSuchProcess):
        terminate([psutil.Process(proc.pid)], grace=30.0)
    proc.wait()  # reaped already: sets the Popen's returncode


class CpuProbe:
    """``with CpuProbe(path) as probe: ...`` runs the probe process for the block (entering
    waits until it runs: :func:`start`); afterwards ``probe.units`` holds its units (empty if
    they could not be read)."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.units: list[list[float]] = []
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> CpuProbe:
        self._proc = start(self.out)
        return self

    @property
    def pid(self) -> int | None:
        """The probe process's pid while the block runs."""
        return self._proc.pid if self._proc is not None and self._proc.returncode is None else None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        proc = self._proc
        if proc is None:
            return
        stop(proc)
        try:
            self.units = json.loads(self.out.read_text())["units"]
        except (OSError, ValueError, KeyError):
            self.units = []


if __name__ == "__main__":
    run(Path(sys.argv[1]))
