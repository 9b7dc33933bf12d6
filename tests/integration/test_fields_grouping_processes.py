"""Fields grouping on several fields across real worker processes with different
``PYTHONHASHSEED``s: every process sends a key to the same task."""

from __future__ import annotations

import os
import signal
from collections import defaultdict
from pathlib import Path

import pytest
from supervisor_kit import KEYED_FILES, SupervisorEnv, keyed_spec, prepare_node, wait_for

from stormpy.supervisor.launcher import launch_worker
from stormpy.testing import free_ports

pytest_plugins = ["supervisor_fixtures"]
pytestmark = [pytest.mark.zookeeper, pytest.mark.cluster, pytest.mark.timeout(120)]

KEYS = 40


def received(out: Path) -> dict[tuple[str, int], dict[int, int]]:
    """(word, n) → {sink task: emitter task} for every line the sinks logged."""
    seen: dict[tuple[str, int], dict[int, int]] = defaultdict(dict)
    for log in out.glob("sink-*.log"):
        task = int(log.stem.split("-")[1])
        for line in log.read_text().splitlines():
            word, n, emitter = line.split()
            key = (word, int(n))
            seen[key][int(emitter)] = task
    return seen


def test_multi_field_keys_go_to_the_same_task_from_every_process(
        supervisor_env: SupervisorEnv) -> None:
    """Guarantee: fields grouping on several fields picks the same task for a key in every worker
    process, whatever each process's PYTHONHASHSEED (the key hash is process-independent)."""
    env = supervisor_env
    out = env.base / "keyed-out"
    out.mkdir()
    slots = [("node-a", p) for p in free_ports(2)]
    assignment = env.publish("keyed-1", keyed_spec(str(out), KEYS), {}, slots, files=KEYED_FILES)
    dirs = prepare_node(env, "node-a", "keyed-1")
    workers = [launch_worker(dirs, "keyed-1", port, tuple(assignment.executors_of(node, port)),
                             env={**os.environ, "PYTHONHASHSEED": seed})
               for (node, port), seed in zip(slots, ("1", "2"), strict=True)]
    try:
        lines = lambda: sum(len(p.read_text().splitlines()) for p in out.glob("sink-*.log"))  # noqa: E731
        wait_for(lambda: lines() >= 2 * KEYS, 60, f"{2 * KEYS} keyed tuples in the sink logs")
        seen = received(out)
        assert len(seen) == KEYS and lines() == 2 * KEYS
        tasks_per_key = {key: sorted(set(by_emitter.values())) for key, by_emitter in seen.items()}
        split = {key: tasks for key, tasks in tasks_per_key.items() if len(tasks) != 1}
        assert split == {}, f"keys sent to different tasks by different processes: {split}"
        assert all(len(by_emitter) == 2 for by_emitter in seen.values()), "both emitters seen"
        assert len({t for (t,) in tasks_per_key.values()}) > 1, "keys spread over the sinks"
    finally:
        for w in workers:
            w.signal(signal.SIGTERM)
        for w in workers:
            assert w.proc is not None
            w.proc.wait(20)
