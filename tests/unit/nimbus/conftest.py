"""Fixtures shared by the Nimbus unit tests: a simulated clock and a Nimbus local dir."""

from __future__ import annotations

from pathlib import Path

import pytest
from nimbus_fakes import SimClock

from stormpy.nimbus.localdirs import NimbusDirs


@pytest.fixture
def clock() -> SimClock:
    """A clock the test moves by hand (starts at a fixed time)."""
    return SimClock()


@pytest.fixture
def dirs(tmp_path: Path) -> NimbusDirs:
    """A Nimbus local dir under the test's temp dir, its folders created."""
    d = NimbusDirs(tmp_path / "local")
    d.ensure()
    return d
