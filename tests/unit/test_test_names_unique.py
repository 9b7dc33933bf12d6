"""pytest imports test modules by their basename (rootdir-relative, no packages), so two test
files with the same name in different directories break collection of the whole suite."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_module_name_is_unique_across_test_directories() -> None:
    names = Counter(p.name for p in TESTS.rglob("*.py")
                    if p.name != "conftest.py" and "__pycache__" not in p.parts)
    assert [name for name, count in names.items() if count > 1] == []
