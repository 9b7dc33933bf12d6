"""The documentation site (mkdocs.yml) covers what users may import and every configuration key.

The build itself (`make docs`, run by `make test` with --strict) fails on a broken link, an
omitted page or an unknown object; these tests pin what the build cannot know: that each pinned
public package has its reference page and that the configuration reference lists every key.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import yaml
from test_public_api import PUBLIC

from stormpy.config import KEYS

ROOT = Path(__file__).resolve().parents[3]


def _load_hooks():
    spec = importlib.util.spec_from_file_location("stormpy_docs_hooks", ROOT / "tools/docs/hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _nav_pages(nav) -> list[str]:
    pages: list[str] = []
    for entry in nav:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            pages.extend(_nav_pages(value) if isinstance(value, list) else [value])
    return pages


def test_every_public_package_has_a_reference_page_in_the_nav() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    pages = _nav_pages(config["nav"])
    documented = set()
    for page in pages:
        if page.startswith("reference/"):
            documented |= set(re.findall(r"^::: (\S+)$", (ROOT / "docs" / page).read_text(), re.M))
    public = {package for package, names in PUBLIC.items() if names}
    assert sorted(public - documented) == []


def test_the_configuration_reference_lists_every_key_with_its_default() -> None:
    text = _load_hooks().config_reference()
    for name, key in KEYS.items():
        row = next((line for line in text.splitlines() if line.startswith(f"| `{name}` |")), None)
        assert row is not None, f"{name} is missing from the configuration reference"
        assert repr(key.default).replace("|", "\\|") in row
        if key.check is not None:  # every core key has one (tests/unit/config/test_config_types.py)
            assert f"| {key.check.expected.replace('|', chr(92) + '|')} |" in row


def test_the_marker_is_replaced_and_other_pages_are_left_alone() -> None:
    hooks = _load_hooks()
    assert "topology.workers" in hooks.on_page_markdown("a\n<!-- config-keys -->\nb", None, None, None)
    assert hooks.on_page_markdown("plain page", None, None, None) == "plain page"
