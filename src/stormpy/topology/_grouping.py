"""Stream groupings: how a subscribing bolt's tasks split a stream.

Groupings are described here (pure data); the worker turns each description into a router.
Custom groupings subclass ``CustomStreamGrouping`` (a runtime plug-in, in
:mod:`stormpy.topology._component`) and are referenced by import path, like components.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SHUFFLE = "shuffle"
FIELDS = "fields"
ALL = "all"
GLOBAL = "global"
DIRECT = "direct"
NONE = "none"
LOCAL_OR_SHUFFLE = "local_or_shuffle"
PARTIAL_KEY = "partial_key"
CUSTOM = "custom"

GROUPING_TYPES = frozenset({SHUFFLE, FIELDS, ALL, GLOBAL, DIRECT, NONE, LOCAL_OR_SHUFFLE,
                            PARTIAL_KEY, CUSTOM})


@dataclass(frozen=True)
class Grouping:
    """A grouping description: its type, the key fields (fields/partial_key) or the custom class."""

    type: str
    fields: tuple[str, ...] = ()
    custom_class: str | None = None
    custom_kwargs: Mapping[str, Any] = field(default_factory=dict)

    def to_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"type": self.type}
        if self.fields:
            doc["fields"] = list(self.fields)
        if self.custom_class:
            doc["class"] = self.custom_class
            doc["kwargs"] = dict(self.custom_kwargs)
        return doc

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> Grouping:
        return cls(type=doc["type"], fields=tuple(doc.get("fields", ())),
                   custom_class=doc.get("class"), custom_kwargs=dict(doc.get("kwargs", {})))
