"""Which methods of a handler object an RPC server exposes, and how a call is bound to one.

Only methods marked with :func:`rpc_method` (or listed in an explicit ``methods`` mapping) are
callable over the wire; everything else on the handler is invisible, including dunder and private
methods. Arguments arrive as keyword arguments; a call whose arguments do not fit the method's
signature is refused with :class:`~stormpy.rpc.errors.InvalidRequestError` before the method runs.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

from stormpy.rpc.errors import InvalidRequestError

__all__ = ["MethodTable", "rpc_method"]

F = TypeVar("F", bound=Callable[..., Any])

_MARK = "__stormpy_rpc_name__"


@overload
def rpc_method(func: F, /) -> F: ...


@overload
def rpc_method(*, name: str | None = None) -> Callable[[F], F]: ...


def rpc_method(func: F | None = None, /, *, name: str | None = None) -> F | Callable[[F], F]:
    """Mark a handler method as callable over RPC, under its own name or ``name``.

    Use as ``@rpc_method`` or ``@rpc_method(name="getClusterInfo")``.
    """

    def mark(f: F) -> F:
        setattr(f, _MARK, name or f.__name__)
        return f

    return mark(func) if func is not None else mark


class MethodTable:
    """The callable methods of one handler: wire name → bound callable with its signature."""

    def __init__(self, handler: object | None = None,
                 methods: Mapping[str, Callable[..., Any]] | None = None) -> None:
        self._methods: dict[str, Callable[..., Any]] = {}
        if handler is not None:
            for attr in dir(type(handler)):
                raw = getattr(type(handler), attr, None)
                wire_name = getattr(raw, _MARK, None)
                if isinstance(wire_name, str):
                    self._add(wire_name, getattr(handler, attr))
        for wire_name, func in (methods or {}).items():
            self._add(wire_name, func)
        self._signatures = {n: inspect.signature(f) for n, f in self._methods.items()}

    def _add(self, wire_name: str, func: Callable[..., Any]) -> None:
        if wire_name in self._methods:
            raise ValueError(f"RPC method {wire_name!r} is exposed twice")
        if not callable(func):
            raise TypeError(f"RPC method {wire_name!r} is not callable")
        self._methods[wire_name] = func

    @property
    def names(self) -> list[str]:
        """Sorted wire names of the exposed methods."""
        return sorted(self._methods)

    def bind(self, method: str, args: Mapping[str, Any]) -> Callable[[], Any]:
        """Return a zero-argument callable running ``method(**args)``.

        Raises InvalidRequestError naming the method when it is unknown or the arguments do not fit.
        """
        func = self._methods.get(method)
        if func is None:
            known = ", ".join(self.names) or "none"
            raise InvalidRequestError(f"unknown method {method!r} (known methods: {known})")
        try:
            bound = self._signatures[method].bind(**args)
        except TypeError as exc:
            raise InvalidRequestError(f"bad arguments for method {method!r}: {exc}") from exc
        return lambda: func(*bound.args, **bound.kwargs)
