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
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "multilang"))
sys.path.insert(0, str(ROOT))
from bench.peers import storm_peer, storm_shell  # noqa: E402
from mlkit import no_subprocess_left_behind  # noqa: E402

sys.path.remove(str(ROOT))

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(autouse=True)
def _no_subprocess_left_behind() -> Iterator[None]:
    yield from no_subprocess_left_behind()


@pytest.fixture
def storm_project() -> None:
    missing = storm_peer.missing_tools()
    if missing:
        why = f"Apache Storm's LocalCluster needs {' and '.join(missing)} on PATH"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
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
