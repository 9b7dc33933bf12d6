"""The types of configuration values: what each key of the table (:mod:`stormpy.config.keys`)
accepts.

Contract: a check is called as ``check(key, value)`` and returns ``value`` when it is acceptable,
else raises :class:`~stormpy.config.errors.SettingError` whose message names the key, says what
was expected (``expected``, the same text the configuration reference shows) and repeats the
value given. Checks never convert or clamp a value: what passes is used as written. ``None`` is
the caller's business (it means unset: :func:`stormpy.config.check_value` lets it through).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from stormpy.config.errors import SettingError

__all__ = ["AnyOf", "Check", "Choice", "Custom", "Flag", "Int", "ListOf", "Map", "Number", "Port",
           "Text"]


class Check:
    """One kind of value. Subclasses define ``expected`` and :meth:`accepts`."""

    expected: str = "a value"

    def accepts(self, value: Any) -> bool:  # pragma: no cover - overridden
        raise NotImplementedError

    def __call__(self, key: str, value: Any) -> Any:
        if not self.accepts(value):
            raise SettingError(key, f"must be {self.expected}, got {value!r}")
        return value


def _span(low: float | None, high: float | None, above: bool = False) -> str:
    if low is not None and high is not None:
        return f" in {low:g}..{high:g}"
    if low is not None:
        return f" {'>' if above else '>='} {low:g}"
    return f" <= {high:g}" if high is not None else ""


@dataclass(frozen=True)
class Int(Check):
    """An integer (not a bool) in ``low..high`` (None: unbounded)."""

    low: int | None = None
    high: int | None = None

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"an integer{_span(self.low, self.high)}"

    def accepts(self, value: Any) -> bool:
        return (isinstance(value, int) and not isinstance(value, bool)
                and (self.low is None or value >= self.low)
                and (self.high is None or value <= self.high))


def Port() -> Int:  # noqa: N802 - reads as a type in the key table
    """A TCP port number."""
    return Int(1, 65535)


@dataclass(frozen=True)
class Number(Check):
    """A finite int or float (not a bool); ``above`` makes ``low`` exclusive."""

    low: float | None = None
    high: float | None = None
    above: bool = False
    unit: str = ""

    @property
    def expected(self) -> str:  # type: ignore[override]
        what = f"a number of {self.unit}" if self.unit else "a number"
        return what + _span(self.low, self.high, self.above)

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.above else value < self.low):
            return False
        return self.high is None or value <= self.high


@dataclass(frozen=True)
class Flag(Check):
    """true or false."""

    expected: str = "true or false"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, bool)


@dataclass(frozen=True)
class Text(Check):
    """A string with something besides blanks in it (``empty``: blank too; ``pattern``: it must
    match, whole)."""

    pattern: str | None = None
    expected: str = "a non-empty string"
    empty: bool = False

    def accepts(self, value: Any) -> bool:
        if not isinstance(value, str):
            return False
        if not value.strip():
            return self.empty
        return self.pattern is None or re.fullmatch(self.pattern, value) is not None


@dataclass(frozen=True)
class Choice(Check):
    """One of ``values`` (strings compare case-insensitively)."""

    values: tuple[Any, ...]

    @property
    def expected(self) -> str:  # type: ignore[override]
        return "one of " + ", ".join(map(str, self.values))

    def accepts(self, value: Any) -> bool:
        if isinstance(value, str):
            return value.lower() in {str(v).lower() for v in self.values}
        return False


@dataclass(frozen=True)
class ListOf(Check):
    """A list (or tuple) whose every item ``item`` accepts; ``min_len`` items at least; with
    ``single``, one bare item counts as a list of one (``nimbus.seeds: host``)."""

    item: Check
    min_len: int = 0
    single: bool = False

    @property
    def expected(self) -> str:  # type: ignore[override]
        least = f"at least {self.min_len} " if self.min_len else ""
        what = f"a list of {least}items, each {self.item.expected}"
        return f"{self.item.expected} or {what}" if self.single else what

    def accepts(self, value: Any) -> bool:
        if self.single and self.item.accepts(value):
            return True
        return (isinstance(value, list | tuple) and len(value) >= self.min_len
                and all(self.item.accepts(v) for v in value))


@dataclass(frozen=True)
class Map(Check):
    """A mapping with string keys."""

    expected: str = "a map"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, Mapping) and all(isinstance(k, str) for k in value)


@dataclass(frozen=True)
class AnyOf(Check):
    """What any of ``choices`` accepts."""

    choices: tuple[Check, ...]

    @property
    def expected(self) -> str:  # type: ignore[override]
        return " or ".join(c.expected for c in self.choices)

    def accepts(self, value: Any) -> bool:
        return any(c.accepts(value) for c in self.choices)


@dataclass(frozen=True)
class Custom(Check):
    """A rule of its own: ``rule(key, value)`` raises SettingError naming what is wrong (for
    structured values whose error must point inside them)."""

    rule: Callable[[str, Any], Any]
    expected: str = "a value"

    def accepts(self, value: Any) -> bool:
        try:
            self.rule("", value)
        except SettingError:
            return False
        return True

    def __call__(self, key: str, value: Any) -> Any:
        self.rule(key, value)
        return value
