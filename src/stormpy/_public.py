"""The public name of what a public package exports.

Contract: :func:`publish` is called once at the end of every public package (and public module),
with its name and namespace. Each class or function its ``__all__`` exports under its own name
that was defined in an internal module (``stormpy.state._redis_store``) gets the package as its
``__module__``, so tracebacks, ``repr``, ``help`` and error messages name it as users import it
(``stormpy.state.StateUnavailableError``), and pickling and component class paths
(``module:QualName``) resolve it through the package. What another public package or module
published first keeps its name (``stormpy.Tuple`` stays ``stormpy.topology.Tuple``); a package
imports the packages it re-exports from before it publishes, so the owner publishes first. An
object whose ``__module__`` cannot be set (a compiled function, a class of an extension that
forbids it) keeps its own: the pinned test of public names shows it. The standard library only.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

__all__ = ["publish", "published"]

_PUBLISHED: set[str] = set()


def published() -> frozenset[str]:
    """The packages and modules that have published their names so far."""
    return frozenset(_PUBLISHED)


def publish(package: str, namespace: Mapping[str, Any]) -> None:
    """Give ``package`` as ``__module__`` to the classes and functions of ``namespace["__all__"]``
    that internal modules define (see the module contract)."""
    _PUBLISHED.add(package)
    for name in namespace.get("__all__", ()):
        obj = namespace.get(name)
        if not (isinstance(obj, type) or inspect.isroutine(obj)):
            continue
        if getattr(obj, "__qualname__", None) != name:
            continue  # an alias (DocStore = Store) or a nested class: named where it is defined
        if getattr(obj, "__module__", None) in _PUBLISHED:
            continue
        try:
            obj.__module__ = package
        except (AttributeError, TypeError):
            continue
