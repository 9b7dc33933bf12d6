"""The soak (``bench.soak``, ``make soak`` runs it for two hours) in a ten-minute version: a
reliable word count on ZooKeeper + Nimbus + two supervisors at 100 sentences/s, a worker
``kill -9`` every 2.5 minutes; no acked id may be lost and no daemon's or worker's RSS, open file
descriptors or threads, nor the znode count, may grow past the bounds of ``bench.soak`` after the
warm-up. Selected only with ``pytest -m soak`` (``SOAK_MINUTES`` changes its length)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from bench import soak

pytestmark = [pytest.mark.zookeeper, pytest.mark.cluster]


@pytest.mark.soak
@pytest.mark.timeout(3600)
def test_soak_ten_minutes(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if "soak" not in (request.config.option.markexpr or ""):
        pytest.skip("the ten-minute soak: select it with pytest -m soak")
    minutes = float(os.environ.get("SOAK_MINUTES", "10"))
    summary = soak.run(minutes, tmp_path, rate=100.0)
    assert summary["lost"] == 0, summary
    assert summary["kills"] >= 3, summary  # the worker kills happened
    assert (tmp_path / "samples.csv").stat().st_size > 0
    bad = [c for c in summary["checks"] if not c["ok"]]
    assert not bad, bad
    roles = {c["role"] for c in summary["checks"]}
    assert {"zookeeper", "nimbus", "supervisor-0", "supervisor-1", "worker", "znodes"} <= roles
