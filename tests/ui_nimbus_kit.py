"""A scripted Nimbus for the UI's app tests: the UI's backend and its Starlette app in-process,
with each RPC answered by the test (a value, a callable of the call's arguments, or an exception
to raise) and every call recorded. No cluster, no sockets."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from starlette.testclient import TestClient

from stormpy.rpc.errors import NotFoundError
from stormpy.ui._app import create_app
from stormpy.ui._source import UiBackend

__all__ = ["CLUSTER", "FILES", "INFO", "ScriptedNimbus", "ui_app"]

#: ``get_topology_info`` of a two-worker topology ``wc`` (id ``wc-1``) on supervisors a and b
INFO: dict[str, Any] = {
    "id": "wc-1",
    "name": "wc",
    "status": "ACTIVE",
    "uptime_secs": 61.0,
    "num_workers": 2,
    "num_executors": 3,
    "num_tasks": 3,
    "owner": "me",
    "requested_workers": 2,
    "workers": [
        {
            "node": "sup-a",
            "host": "ha",
            "port": 6700,
            "executors": [[1, 1], [2, 2]],
            "uptime_secs": 60.0,
            "heartbeat_age_secs": 0.5,
        },
        {
            "node": "sup-b",
            "host": "hb",
            "port": 6701,
            "executors": [[3, 3]],
            "uptime_secs": 60.0,
            "heartbeat_age_secs": 0.5,
        },
    ],
    "components": {"spout": {"tasks": 1, "executors": 1}, "count": {"tasks": 2, "executors": 2}},
    "errors": {},
}

#: ``get_topology_files`` of ``wc``: its spec (``spout`` → ``count`` by fields) and its own settings
FILES: dict[str, Any] = {
    "spec": {
        "version": 1,
        "components": {
            "spout": {"kind": "spout", "tasks": 1, "inputs": []},
            "count": {
                "kind": "bolt",
                "tasks": 2,
                "inputs": [
                    {
                        "component": "spout",
                        "stream": "default",
                        "grouping": {"type": "fields", "fields": ["w"]},
                    }
                ],
            },
        },
    },
    "conf": {"topology.message.timeout.secs": 30, "my.password": "hidden"},
}

#: ``get_cluster_info``: supervisor a publishes its log server's port, b none
CLUSTER: dict[str, Any] = {
    "nimbus": {"host": "nh", "port": 6627, "version": "0.1.0", "uptime_secs": 5.0},
    "supervisors": [
        {
            "id": "sup-a",
            "host": "ha",
            "ports": [6700],
            "slots_total": 1,
            "slots_used": 1,
            "uptime_secs": 9.0,
            "version": "0.1.0",
            "logviewer_port": 8000,
        },
        {
            "id": "sup-b",
            "host": "hb",
            "ports": [6701],
            "slots_total": 1,
            "slots_used": 1,
            "uptime_secs": 9.0,
            "version": "0.1.0",
            "logviewer_port": None,
        },
    ],
    "topologies": [],
}


def _files_of_wc(topology_id: Any) -> dict[str, Any]:
    if topology_id != "wc-1":  # Nimbus knows the files by topology id only
        raise NotFoundError(f"no topology {topology_id!r}")
    return FILES


class ScriptedNimbus:
    """Stands in for the backend's NimbusClient; ``answers[method]`` scripts each RPC."""

    address = "127.0.0.1:6627"

    def __init__(self, answers: Mapping[str, Any] | None = None) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.answers: dict[str, Any] = {
            "get_cluster_info": CLUSTER,
            "get_topology_files": _files_of_wc,
            **(answers or {}),
        }

    def call(self, method: str, **args: Any) -> Any:
        self.calls.append((method, args))
        if method == "get_topology_info" and method not in self.answers:
            if args.get("name") in ("wc", "wc-1"):
                return INFO
            raise NotFoundError(f"no topology {args.get('name')!r}")
        answer = self.answers[method]
        if isinstance(answer, BaseException):
            raise answer
        return answer(**args) if callable(answer) else answer

    def sent(self, method: str) -> list[dict[str, Any]]:
        """The arguments of every call of ``method``, in order."""
        return [args for name, args in self.calls if name == method]

    def worker_heartbeats(self, topology_id: str) -> dict[Any, Any]:
        return {}

    def close(self) -> None:
        pass


def ui_app(
    conf: Mapping[str, Any] | None = None,
    answers: Mapping[str, Any] | None = None,
    clock: Callable[[], float] = lambda: 100.0,
) -> tuple[TestClient, ScriptedNimbus, UiBackend]:
    """The app over a backend whose Nimbus is a fresh :class:`ScriptedNimbus`."""
    backend = UiBackend(dict(conf or {}), state_factory=lambda: None, clock=clock)  # type: ignore[arg-type,return-value]
    nimbus = ScriptedNimbus(answers)
    backend.client = nimbus  # type: ignore[assignment]
    return TestClient(create_app(backend, clock=clock)), nimbus, backend
