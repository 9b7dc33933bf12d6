"""Worker actions asked through Nimbus (a thread dump, a heap summary, a sampled CPU profile):
the request and the wait for its answer, shared by ``stormpy profile``/``dump-*`` and the UI's
profiling routes.

Contract: :func:`request_worker_action` asks the leading Nimbus to relay ``action`` to the
worker at ``host:port`` and returns the request's id; :func:`await_worker_action` polls
``worker_action_result`` for that id every ``interval`` seconds until its status is no longer
``pending`` or ``patience`` seconds have passed on ``clock``, and returns the last answer (status
``done`` with its ``result``, ``failed`` with its ``error``, or still ``pending`` when the worker
did not answer in time). ``call`` is a Nimbus call (``NimbusClient.call`` or a wrapper of it);
its errors pass through.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from stormpy.host.waiting import WaitTimeout, wait_for

#: a Nimbus call: ``call(method, **args)`` -> the method's answer
NimbusCall = Callable[..., Any]


def request_worker_action(call: NimbusCall, name: str, host: str, port: int, action: str,
                          args: Mapping[str, Any]) -> str:
    """Ask Nimbus for ``action`` (with ``args``) on topology ``name``'s worker at
    ``host:port``; returns the request's id, the key of its answer."""
    answer = call("request_worker_action", name=name, host=host, port=port, action=action,
                  args=dict(args))
    return str(answer["request"])


def await_worker_action(call: NimbusCall, name: str, request: str, patience: float, *,
                        interval: float, clock: Callable[[], float] | None = None,
                        sleep: Callable[[float], None] | None = None) -> dict[str, Any]:
    """Poll the answer to ``request`` every ``interval`` seconds for up to ``patience``
    seconds of ``clock`` (the first poll at once; ``clock`` and ``sleep`` default to
    ``time.monotonic`` and ``time.sleep``); returns the last answer, whose ``status`` is still
    ``pending`` when the worker did not answer in time."""
    answer: dict[str, Any]  # bound by the first poll, which wait_for makes before any deadline

    def answered() -> bool:
        nonlocal answer
        answer = dict(call("worker_action_result", name=name, request=request))
        return answer["status"] != "pending"

    try:
        wait_for(answered, patience, f"the answer to worker action {request}", interval=interval,
                 clock=clock, sleep=sleep)
    except WaitTimeout:
        pass  # the answer says pending: the caller decides what that means
    return answer
