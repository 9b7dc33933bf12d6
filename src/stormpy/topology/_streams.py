"""Output stream declarations."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from stormpy.topology._fields import Fields
from stormpy.topology._tuple import DEFAULT_STREAM


@dataclass(frozen=True)
class Stream:
    """A declared output stream: its name, its fields, and whether it only carries direct emits."""

    fields: Fields = field(default_factory=Fields)
    name: str = DEFAULT_STREAM
    direct: bool = False

    def __init__(self, fields: Iterable[str] | Fields = (), name: str = DEFAULT_STREAM,
                 direct: bool = False) -> None:
        object.__setattr__(self, "fields", fields if isinstance(fields, Fields) else Fields(fields))
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "direct", bool(direct))

    def to_doc(self) -> dict[str, Any]:
        return {"fields": self.fields.to_list(), "direct": self.direct}


def normalize_outputs(outputs: Any, owner: str) -> dict[str, Stream]:
    """Turn a component's ``outputs`` declaration into ``{stream name: Stream}``.

    Accepted forms: a list of field names (the default stream), a list of ``Stream`` objects,
    a mix of both, or a dict ``{stream name: [fields]}``; a single string is one field name (as
    in :class:`Fields`), never its characters. Anything else raises ValueError naming ``owner``.
    """
    if outputs is None:
        return {}
    if isinstance(outputs, str):
        outputs = [outputs]
    streams: dict[str, Stream] = {}
    if isinstance(outputs, dict):
        items: list[Stream] = []
        for name, spec in outputs.items():
            if not isinstance(spec, Stream | str | Fields | list | tuple):
                raise ValueError(f"{owner}: outputs stream {name!r} must be a list of field names or a "
                                 f"Stream, got {spec!r}")
            items.append(spec if isinstance(spec, Stream) else Stream(spec, name=name))
    elif not isinstance(outputs, list | tuple | Fields):
        raise ValueError(f"{owner}: outputs must be a list of field names or Stream objects, or a dict "
                         f"of stream name to fields, got {outputs!r}")
    else:
        items = []
        plain: list[str] = []
        for item in outputs:
            if isinstance(item, Stream):
                items.append(item)
            elif isinstance(item, str):
                plain.append(item)
            else:
                raise ValueError(f"{owner}: outputs entries must be field names or Stream objects, "
                                 f"got {item!r}")
        if plain:
            items.insert(0, Stream(plain))
    for s in items:
        if s.name in streams:
            raise ValueError(f"{owner}: stream {s.name!r} declared twice")
        if s.name.startswith("__"):
            raise ValueError(f"{owner}: stream names starting with '__' are reserved ({s.name!r})")
        streams[s.name] = s
    return streams
