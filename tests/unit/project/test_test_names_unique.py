"""pytest imports test modules by their basename (rootdir-relative, no packages), so two test
files with the same name in different directories break collection of the whole suite. The
sample topology directories count too (their modules are imported by basename). Sample projects
laid out as their tools expect (streamparse: ``topologies/wordcount.py`` beside
``src/bolts/wordcount.py``) import their modules by dotted names and are left out."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]
#: sample projects whose modules are imported by package-qualified names
SAMPLE_PROJECTS = (TESTS / "multilang" / "streamparse_wordcount",)


def test_every_test_module_name_is_unique_across_test_directories() -> None:
    names = Counter(p.name for p in TESTS.rglob("*.py")
                    if p.name != "conftest.py" and "__pycache__" not in p.parts
                    and not any(p.is_relative_to(d) for d in SAMPLE_PROJECTS))
    assert [name for name, count in names.items() if count > 1] == []
