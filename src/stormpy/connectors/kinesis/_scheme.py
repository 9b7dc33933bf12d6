"""Record schemes: how a Kinesis record becomes the values of a tuple.

A scheme is a class with a ``fields`` list and ``deserialize(record) -> list``; the spout
config names it by import path (``"package.module:Class"``) and the spout builds it with no
arguments. ``deserialize`` may return ``None`` to skip a record (it then counts as done).
"""

from __future__ import annotations

from typing import Any, ClassVar

from stormpy.config import SettingError
from stormpy.connectors.kinesis._records import KinesisRecord
from stormpy.topology._imports import import_object


class DefaultRecordScheme:
    """Emits ``partition_key, sequence_number, data`` (data as bytes)."""

    fields: ClassVar[list[str]] = ["partition_key", "sequence_number", "data"]

    def deserialize(self, record: KinesisRecord) -> list[Any] | None:
        return [record.partition_key, record.sequence_number, record.data]


_SETTING = "KinesisSpoutConfig.record_scheme"


def load_scheme(path: str) -> Any:
    """Build the scheme named by ``path``; SettingError naming ``KinesisSpoutConfig.record_scheme``
    (and the path) when it is not a scheme class."""
    try:
        cls = import_object(path)
    except ImportError as exc:
        raise SettingError(_SETTING, f"{path!r} cannot be imported: {exc}") from None
    if not isinstance(cls, type) or not callable(getattr(cls, "deserialize", None)):
        raise SettingError(_SETTING, f"{path!r} is not a class with a deserialize(record) method")
    scheme = cls()
    names = getattr(scheme, "fields", None)
    if not isinstance(names, list | tuple) or not names or not all(isinstance(f, str) for f in names):
        raise SettingError(_SETTING, f"{path!r} must have a non-empty 'fields' list of names")
    return scheme
