"""The benchmark harness runs end to end on a tiny workload (no timing is asserted)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

ROOT = Path(__file__).resolve().parents[3]


def topology_modules(*names: str) -> list[ModuleType]:
    """The modules ``names`` of bench/topologies, imported with that directory as their root
    (as in the bundle the bench ships to workers; it is on pytest's pythonpath)."""
    return [importlib.import_module(name) for name in names]


def test_bench_local_runners_produce_a_result_file(tmp_path: Path) -> None:
    args = ["--sentences", "300", "--repeat", "1", "--output",
            str(tmp_path / "out.json")]
    res = subprocess.run([sys.executable, "-m", "bench", *args], cwd=ROOT, capture_output=True,
                         text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    doc = json.loads((tmp_path / "out.json").read_text())
    runs = doc["throughput"]
    for workload in ("final", "running"):
        assert {f"{workload}: plain python loop", f"{workload}: bytewax (1 worker)",
                f"{workload}: stormpy local, acking off, per-tuple",
                f"{workload}: stormpy local, acking on, per-tuple",
                f"{workload}: stormpy local, acking off, batch",
                f"{workload}: stormpy local, acking on, batch"} <= set(runs)
    words = {r["words"] for r in runs.values()}
    assert len(words) == 1  # every runner processed the same workload
    assert all(r["words_per_sec"] > 0 and r["vs_bytewax"] for r in runs.values())
    assert isinstance(doc["stormpy_compiled"], bool)


def test_windowing_state_bench_runs_and_checks_its_sides_agree(tmp_path: Path) -> None:
    args = ["--events", "3000", "--sentences", "300", "--repeat", "1", "--memory-tuples", "1000",
            "--anchored-events", "500", "--output", str(tmp_path / "ws.json")]
    res = subprocess.run([sys.executable, "-m", "bench.windowing_state", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    doc = json.loads((tmp_path / "ws.json").read_text())
    assert doc["sliding_window"]["rows"] > 0
    assert set(doc["stateful_wordcount"]["runs"]) == {"plain acked word count",
                                                      "stateful word count"}
    assert doc["window_memory"]["bytes_per_tuple"] > 0


def test_persistent_window_bench_runs_and_checks_the_last_window(tmp_path: Path) -> None:
    args = ["--tuples", "6000", "--length", "2000", "--slide", "500", "--max-events", "400",
            "--in-memory", "--output", str(tmp_path / "pw.json")]
    res = subprocess.run([sys.executable, "-m", "bench.persistent_window", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    persistent, in_memory = json.loads((tmp_path / "pw.json").read_text())
    assert persistent["persistent"] and not in_memory["persistent"]
    assert persistent["metrics"]["window-events-cached-peak"] <= 400
    assert persistent["windows"] == in_memory["windows"] == 12


def test_bytewax_with_two_processes_counts_the_whole_workload() -> None:
    from bench import runners
    r = runners.bytewax_processes(200, "running", 2)  # asserts the sink got every pair
    assert r["words"] > 0 and r["seconds"] > 0 and r["wall"] >= r["seconds"]


def test_a_spout_partition_of_the_workload_is_the_same_with_or_without_the_cache() -> None:
    [workload] = topology_modules("bench_workload")
    fresh = [workload.sentence_share(1003, i, 3, seed=11) for i in range(3)]  # generated
    whole = workload.sentences(1003, seed=11)
    assert [workload.sentence_share(1003, i, 3, seed=11) for i in range(3)] == fresh  # cached
    assert fresh == [list(whole[i::3]) for i in range(3)]
    assert sorted(s for part in fresh for s in part) == sorted(whole) and len(whole) == 1003


def test_a_rate_limited_bench_spout_holds_only_what_is_in_flight() -> None:
    bench_wordcount, bench_workload = topology_modules("bench_wordcount", "bench_workload")
    spout = bench_wordcount.BenchSentenceSpout(101, reliable=True, rate=1e9)
    emitted: list[tuple[str, int]] = []
    spout.emit = lambda values, msg_id=None: emitted.append((values[0], msg_id))  # type: ignore[method-assign]
    spout.open({}, SimpleNamespace(component_tasks=[1, 2], task_index=1, task_id=2))  # type: ignore[arg-type]
    assert spout.lines is None
    for _ in range(60):
        spout.next_tuple()
    expected = bench_workload.sentence_share(101, 1, 2, seed=7)
    assert [line for line, _ in emitted] == expected and [i for _, i in emitted] == list(range(1, 101, 2))
    for _, i in emitted[:49]:
        spout.ack(i)
    assert spout.held == {99: expected[49]}  # the one not acked yet
    spout.fail(99)
    spout.next_tuple()
    assert emitted[-1] == (expected[49], 99)  # replayed from what is held


def test_the_bench_spouts_start_together_behind_the_start_barrier(tmp_path: Path) -> None:
    [bench_wordcount] = topology_modules("bench_wordcount")
    spouts = []
    emitted: list[tuple[int, str]] = []
    for index in range(2):
        spout = bench_wordcount.BenchSentenceSpout(20, reliable=False, report_dir=str(tmp_path),
                                                   start_barrier=True)
        spout.emit = (lambda values, msg_id=None, i=index:  # type: ignore[method-assign]
                      emitted.append((i, values[0])))
        spout.open({}, SimpleNamespace(component_tasks=[3, 4], task_index=index,  # type: ignore[arg-type]
                                       task_id=3 + index))
        spouts.append(spout)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ready-3.json", "ready-4.json"]
    for spout in spouts:
        spout.next_tuple()
    assert emitted == [] and all(s.first_emit is None for s in spouts)  # held until "go"
    (tmp_path / "go").touch()
    for spout in spouts:
        spout.next_tuple()
    assert [i for i, _ in emitted] == [0, 1] and all(s.first_emit is not None for s in spouts)


def test_join_bench_runs_and_checks_its_sides_agree(tmp_path: Path) -> None:
    args = ["--events", "3000", "--keys", "50", "--output", str(tmp_path / "join.json")]
    res = subprocess.run([sys.executable, "-m", "bench.join", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    doc = json.loads((tmp_path / "join.json").read_text())
    assert doc["rows"] > 0
    assert all(r["events_per_sec"] > 0 for r in doc["runs"].values())
