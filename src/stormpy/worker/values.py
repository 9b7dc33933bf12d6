"""Checking that emitted values are msgpack-serialisable, cheaply."""

from __future__ import annotations

from typing import Any, Final

from stormpy.topology._errors import EmitError

_MIN_INT64: Final = -(2 ** 63)
_MAX_UINT64: Final = 2 ** 64
#: ints in this range pass the inline value check of ``emit``, ``emit_many``, ``emit_batch`` and
#: ``emit_columns`` with a plain compare (a compiled build keeps them unboxed); any other int
#: gets ``check_values``' exact 64-bit check
SHORT_INT_MIN: Final = -(2 ** 62)
SHORT_INT_MAX: Final = 2 ** 62 - 1
_SCALARS = frozenset({str, int, float, bool, type(None), bytes})


def _check_nested(value: Any, depth: int = 0) -> str | None:
    t = type(value)
    if t in _SCALARS:
        if t is int and not (_MIN_INT64 <= value < _MAX_UINT64):
            return f"integer {value} does not fit in 64 bits"
        return None
    if depth > 64:
        return "values nested deeper than 64 levels"
    if t is list or t is tuple:
        for v in value:
            err = _check_nested(v, depth + 1)
            if err:
                return err
        return None
    if t is dict:
        for k, v in value.items():
            err = _check_nested(k, depth + 1) or _check_nested(v, depth + 1)
            if err:
                return err
        return None
    if t is bytearray or t is memoryview:
        return None
    return f"{t.__module__}.{t.__qualname__} value {value!r:.80}"


def check_values(values: Any, component: str, stream: str) -> None:
    """Raise EmitError naming ``component`` and ``stream`` when ``values`` is not a list/tuple of
    msgpack-serialisable data. Plain scalars cost one set lookup each."""
    if type(values) is not list and type(values) is not tuple:
        raise EmitError(f"component {component!r}, stream {stream!r}: emit takes a list of values, "
                        f"got {type(values).__name__}")
    for v in values:
        t = type(v)
        if t is int:
            if _MIN_INT64 <= v < _MAX_UINT64:
                continue
        elif t in _SCALARS:
            continue
        err = _check_nested(v)
        if err:
            raise EmitError(f"component {component!r}, stream {stream!r}: cannot serialise "
                            f"{err}; emit plain data (str, int, float, bool, None, bytes, "
                            "lists, dicts)")
