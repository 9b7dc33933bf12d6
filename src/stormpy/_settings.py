"""Checks of settings classes: the one style of the connectors' and features' settings.

A settings class (``KafkaSpoutConfig``, ``KafkaBoltConfig``, ``KinesisSpoutConfig``,
``WindowConfig``, ...) is a dataclass whose ``validate()`` returns it checked (and normalised) or
raises a :class:`~stormpy.config.SettingError` naming the setting (``KafkaSpoutConfig.topics``);
``to_doc()`` gives the plain data that travels in the topology spec (components are never
pickled) and ``from_doc()`` rebuilds and validates it through :func:`settings_from_doc`. The
checks here raise ``error``: SettingError or the caller's subclass of it (``KafkaConfigError``,
``WindowConfigError``), so users' ``except`` clauses for those keep working.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import MISSING, fields, is_dataclass
from functools import cache
from typing import Any, Protocol, Self, TypeVar

from stormpy.config import SettingError

__all__ = ["check_flag", "check_import_path", "check_int", "check_mapping", "check_number",
           "check_text", "settings_from_doc"]


def check_int(setting: str, value: Any, low: int | None = None, high: int | None = None, *,
              error: type[SettingError] = SettingError) -> int:
    """``value`` when it is an integer (not a bool) in ``low..high`` (None: unbounded)."""
    if (isinstance(value, bool) or not isinstance(value, int) or (low is not None and value < low)
            or (high is not None and value > high)):
        span = (f" in {low}..{high}" if low is not None and high is not None
                else f" >= {low}" if low is not None else f" <= {high}" if high is not None else "")
        raise error(setting, f"must be an integer{span}, got {value!r}")
    return value


def check_number(setting: str, value: Any, low: float | None = None, *, unit: str = "",
                 error: type[SettingError] = SettingError) -> float:
    """``value`` as a float when it is a finite int or float (not a bool) ``>= low``."""
    if (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
            or (low is not None and value < low)):
        what = f"a number of {unit}" if unit else "a number"
        raise error(setting, f"must be {what}{f' >= {low:g}' if low is not None else ''}, "
                             f"got {value!r}")
    return float(value)


def check_text(setting: str, value: Any, what: str = "a non-empty string", *,
               error: type[SettingError] = SettingError) -> str:
    """``value`` when it is a string with something besides blanks in it."""
    if not isinstance(value, str) or not value.strip():
        raise error(setting, f"must be {what}, got {value!r}")
    return value


def check_flag(setting: str, value: Any, *, error: type[SettingError] = SettingError) -> bool:
    if not isinstance(value, bool):
        raise error(setting, f"must be True or False, got {value!r}")
    return value


def check_mapping(setting: str, value: Any, what: str = "a mapping", *,
                  error: type[SettingError] = SettingError) -> Mapping[str, Any]:
    """``value`` when it is a mapping whose keys are strings."""
    if not isinstance(value, Mapping):
        raise error(setting, f"must be {what}, got {value!r}")
    for key in value:
        if not isinstance(key, str):
            raise error(setting, f"names must be strings, got {key!r}")
    return value


_IMPORT_PATH = re.compile(r"[\w.]+[:.][\w.]+")


def check_import_path(setting: str, value: Any, *,
                      error: type[SettingError] = SettingError) -> str:
    """``value`` when it looks like ``package.module:Name`` (it is imported where it is used)."""
    if not isinstance(value, str) or not _IMPORT_PATH.fullmatch(value):
        raise error(setting, f"must be an import path like 'package.module:Class', got {value!r}")
    return value


class Validating(Protocol):
    """A settings class: ``validate()`` returns the instance checked or raises SettingError."""

    def validate(self) -> Self: ...


SettingsT = TypeVar("SettingsT", bound=Validating)


def settings_from_doc(cls: type[SettingsT], doc: Any, *,
                      error: type[SettingError] = SettingError) -> SettingsT:
    """``cls`` (a settings dataclass) rebuilt from its ``to_doc()`` mapping (or a hand-written
    one) and validated; an instance of ``cls`` is validated as it is. ``error`` names the
    class when ``doc`` is no mapping or has unknown keys, and ``cls.<field>`` when a field
    without default is missing."""
    if isinstance(doc, cls):
        return doc.validate()
    owner = cls.__name__
    if not isinstance(doc, Mapping):
        raise error(owner, f"expected a mapping of settings, got {doc!r}")
    known, required = _fields_of(cls)
    unknown = sorted(map(str, doc.keys() - known))
    if unknown:
        raise error(owner, f"unknown settings {unknown} (known: {sorted(known)})")
    for name in required:
        if name not in doc:
            raise error(f"{owner}.{name}", "is required")
    return cls(**doc).validate()


@cache
def _fields_of(cls: type) -> tuple[frozenset[str], tuple[str, ...]]:
    """The settings dataclass's field names, and those without a default (required)."""
    if not is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not a dataclass")
    every = fields(cls)
    return (frozenset(f.name for f in every),
            tuple(f.name for f in every
                  if f.init and f.default is MISSING and f.default_factory is MISSING))
