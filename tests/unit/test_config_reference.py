"""docs/configuration.md is the key table rendered (stormpy.config.reference): it cannot drift."""

from __future__ import annotations

from pathlib import Path

from stormpy.config.keys import CORE_KEYS
from stormpy.config.reference import render

PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_the_reference_page_is_the_table_rendered() -> None:
    assert PAGE.read_text() == render(), (
        "docs/configuration.md is stale: run "
        "`python -m stormpy.config.reference --write docs/configuration.md`")


def test_every_core_key_is_on_the_page_with_its_type() -> None:
    page = render()
    for key in CORE_KEYS:
        assert key.check is not None
        assert f"| `{key.name}` | {key.check.expected.replace('|', chr(92) + '|')} |" in page
