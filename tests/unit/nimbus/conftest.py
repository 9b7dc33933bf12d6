"""Fixtures shared by the Nimbus unit tests: a simulated clock, a Nimbus local dir, and every
upload manager closed after its test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from nimbus_fakes import SimClock

from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.uploads import UploadManager


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


@pytest.fixture(autouse=True)
def uploads_closed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every :class:`UploadManager` a test creates is closed when the test ends, so no session's
    open ``.part`` file is left for a later test's garbage collection to report."""
    created: list[UploadManager] = []
    original = UploadManager.__init__

    def recording_init(self: UploadManager, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        created.append(self)

    monkeypatch.setattr(UploadManager, "__init__", recording_init)
    yield
    for manager in created:
        manager.close()
