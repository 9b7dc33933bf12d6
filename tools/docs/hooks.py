"""MkDocs hooks of the documentation site (``mkdocs.yml``: ``hooks``).

Contract: ``docs/reference/configuration.md`` holds the marker ``<!-- config-keys -->``; at build
time it is replaced by one table per group of keys (name, type as its check states it, default,
meaning), made from the key table itself
(:data:`stormpy.config.KEYS` after every section registered), so the reference can never drift
from the code. Nothing else is rewritten.
"""

from __future__ import annotations

import importlib
from typing import Any

MARKER = "<!-- config-keys -->"
#: packages whose import registers a configuration section
SECTION_PACKAGES = ("stormpy.transactional._settings", "stormpy.connectors.spark._settings")


def _cell(value: Any) -> str:
    """One table cell: inline code for values, pipes escaped, no line breaks."""
    text = repr(value) if not isinstance(value, str) else value
    return text.replace("|", "\\|").replace("\n", " ")


def _table(keys: list[Any]) -> str:
    from stormpy.config import COMPONENT_KEYS

    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for key in keys:
        default = "`" + _cell(repr(key.default)) + "`"
        kind = _cell(key.check.expected) if key.check is not None else "checked by its settings class"
        per_component = " *Per component.*" if key.name in COMPONENT_KEYS else ""
        rows.append(f"| `{key.name}` | {kind} | {default} | {_cell(key.doc)}{per_component} |")
    return "\n".join(rows)


def config_reference() -> str:
    """The Markdown of every configuration key, core keys grouped by prefix, then each section."""
    for name in SECTION_PACKAGES:
        importlib.import_module(name)
    from stormpy.config import sections
    from stormpy.config.keys import CORE_KEYS

    parts: list[str] = []
    groups: dict[str, list[Any]] = {}
    for key in CORE_KEYS:
        groups.setdefault(key.name.split(".", 1)[0], []).append(key)
    for prefix, keys in groups.items():
        parts.append(f"### `{prefix}.*`\n\n{_table(keys)}\n")
    for section in sorted(sections().values(), key=lambda s: s.prefix):
        parts.append(f"### `{section.prefix}*` ({section.name})\n\n{section.doc}\n\n"
                     f"{_table(list(section.keys))}\n")
    return "\n".join(parts)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs hook: fill the configuration reference's marker."""
    if MARKER in markdown:
        return markdown.replace(MARKER, config_reference())
    return markdown
