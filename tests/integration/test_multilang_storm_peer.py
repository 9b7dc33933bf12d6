"""The same multilang shell component emits the same tuples under Apache Storm and under stormpy.

The component (``bench/peers/storm/src/main/resources/resources/multilang_probe.py``, on Storm's
own ``storm.py``) runs once as a ``ShellBolt`` in Apache Storm 2.8's ``LocalCluster``
(``bench/peers/storm``, a Maven project: ``ShellComponentRun.java``) and once under stormpy from
the same directory, on the same sentences; the multisets of ``(stream, values)`` its sink
received are compared. Needs ``java`` and ``mvn`` (the project is built here when it is not:
~10 s with Storm's jars in ``~/.m2``, more when Maven Central has to serve them); without them
the test is skipped, and under ``CI=true`` it fails.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench.peers import storm_peer, storm_shell
from mlkit import no_subprocess_left_behind

from parts_kit import unavailable

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(autouse=True)
def _no_subprocess_left_behind() -> Iterator[None]:
    yield from no_subprocess_left_behind()


@pytest.fixture
def storm_project() -> None:
    missing = storm_peer.missing_tools()
    if missing:
        unavailable("Apache Storm's LocalCluster", f"it needs {' and '.join(missing)} on PATH")
    storm_peer.build()


def test_the_same_shell_component_emits_the_same_tuples_under_apache_storm_and_stormpy(
        storm_project: None) -> None:
    on_storm = storm_shell.run_on_storm()
    on_stormpy = storm_shell.run_on_stormpy()
    words = sum(len(s.split(" ")) for s in storm_shell.SENTENCES)
    assert len(on_storm) == words + len(storm_shell.SENTENCES)  # every word, one shape each
    assert Counter(on_stormpy) == Counter(on_storm)
    shapes = [v for stream, v in on_storm if stream == "shape"]
    assert '["café naïve über straße", 4, 5.5, ["café", "naïve"], null, true, 1]' in shapes


def test_the_bench_row_runs_the_pystorm_split_bolt_under_apache_storm(storm_project: None,
                                                                        tmp_path: Path) -> None:
    """The multilang bench's Storm row (``bench/peers/storm_shell_split.py``): Storm's ShellBolt
    runs the same pystorm split bolt command as the stormpy JSON shell row, round after round in
    one JVM, and every word reaches the sink (no timing asserted)."""
    from bench.multilang_bench import sentences
    from bench.peers.storm_shell_split import StormShellSplit

    from stormpy.multilang._pystorm_spec import RUNNER
    from stormpy.multilang._shell import python_command

    rows = sentences(40)
    storm_peer.write_sentences(rows, tmp_path / "sentences.txt")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)}
    command = python_command(RUNNER, "bench.multilang_bench:PySplitBolt", "--serializer", "json")
    with StormShellSplit(tmp_path / "sentences.txt", command, env) as storm:
        assert storm.ready["sentences"] == 40
        for n in (40, 25):
            r = storm.run(n)
            words = sum(len(s.split()) for s in rows[:n])
            assert (r["sentences"], r["words"], r["counted"]) == (n, words, words)
            assert r["seconds"] > 0 and r["cpu_seconds"] >= 0
