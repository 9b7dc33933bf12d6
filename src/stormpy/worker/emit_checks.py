"""The checks of what a component emits, raising ``EmitError`` naming the component, the stream
and what was wrong: the stream is declared (direct when emitted with ``emit_direct``, not direct
otherwise), each values is a list of as many plain values as the stream has fields
(``values.check_values``), a direct emit names a task subscribed directly.

Everything is checked before anything is sent. The two hottest emits (``BoltTask.emit``,
``SpoutTask.emit``) inline the first step of ``checked_values_list``'s pre-check (plain scalars
pass without a call) and call ``check_emit`` only for anything else (through
``TaskRunner._check`` and ``_bad_stream``): a call per tuple is what that saves. This module
is compiled with the rest of the tuple path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn, cast

from stormpy.topology._errors import EmitError
from stormpy.worker.routing import StreamRouter
from stormpy.worker.values import SHORT_INT_MAX, SHORT_INT_MIN, check_values

__all__ = ["bad_stream", "check_emit", "checked_router", "checked_values_list", "direct_target"]


def check_emit(values: Any, component: str, stream: Any, router: StreamRouter) -> None:
    """The full check of one ``values`` emitted on ``stream`` (its router's fields)."""
    check_values(values, component, stream)
    if len(values) != router.n_fields:
        raise EmitError(f"component {component!r}, stream {stream!r}: emitted "
                        f"{len(values)} values for fields {router.fields.to_list()}")


def checked_values_list(values_list: Any, component: str, stream: Any,
                        router: StreamRouter) -> list[Any]:
    """``values_list`` as a list after checking every values in it (``emit_many``'s and
    ``emit_batch``'s checks); counts them as emitted on the router."""
    if type(values_list) is not list:
        if isinstance(values_list, (str, bytes, dict)) or not hasattr(values_list, "__iter__"):
            raise EmitError(f"component {component!r}, stream {stream!r}: emit_many "
                            "takes a list of values lists, got "
                            f"{type(values_list).__name__}")
        values_list = list(values_list)
    n_fields = router.n_fields
    for values in values_list:
        if type(values) is list and len(values) == n_fields:
            for v in values:  # plain scalars pass here; anything else gets the full check
                vt = type(v)
                if vt is str or vt is bytes or vt is float or v is None or \
                        (type(v) is int and SHORT_INT_MIN <= v <= SHORT_INT_MAX):
                    continue
                check_emit(values, component, stream, router)
                break
        else:
            check_emit(values, component, stream, router)
    router.emitted += len(values_list)
    return cast(list[Any], values_list)


def bad_stream(routers: Mapping[str, StreamRouter], component: str, stream: Any,
               direct: bool) -> NoReturn:
    """Raise the error of an emit on ``stream`` that has no router of its kind (``direct``: the
    call was ``emit_direct``): undeclared, or direct where it is not (or the reverse)."""
    if stream not in routers:
        raise EmitError(f"component {component!r} emitted on undeclared stream "
                        f"{stream!r} (declared: {sorted(routers)})")
    if direct:
        raise EmitError(f"component {component!r}: emit_direct on stream {stream!r}, "
                        "which is not declared direct")
    raise EmitError(f"component {component!r}: stream {stream!r} is direct; use "
                    "emit_direct(task, values)")


def checked_router(routers: Mapping[str, StreamRouter], component: str, stream: Any,
                   values: Any, direct: bool) -> StreamRouter:
    """The router of ``stream`` after checking one emit of ``values`` on it (the slow path,
    used by ``emit_direct``), counted as emitted."""
    router = routers.get(stream)
    if router is None or router.direct != direct:
        bad_stream(routers, component, stream, direct)
    check_emit(values, component, stream, router)
    router.emitted += 1
    return router


def direct_target(router: StreamRouter, component: str, task: Any) -> list[Any]:
    """``[task]`` when ``task`` is subscribed directly to the router's stream."""
    try:
        subscribed = task in router.direct_tasks
    except TypeError:  # unhashable (a list of tasks, a dict): not a task id either
        subscribed = False
    if not subscribed:
        raise EmitError(f"component {component!r}: emit_direct to task {task} on stream "
                        f"{router.stream!r}, which is not a task subscribed to it directly "
                        f"{sorted(router.direct_tasks)}")
    return [task]
