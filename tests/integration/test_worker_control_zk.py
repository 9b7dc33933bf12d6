"""The worker control channel on a real ZooKeeper, without a cluster: a registered action is
answered by the control thread, an unknown one is refused naming the known ones, a request to a
worker that has not opened its channel is refused, log levels apply and revert, answered requests
are removed by the requester."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from stormpy.cluster.state import ClusterState
from stormpy.cluster.worker_ops import (
    change_log_config,
    read_request,
    remove_request,
    submit_request,
)
from stormpy.testing import wait_for
from stormpy.worker.control import WorkerControl

pytestmark = [pytest.mark.zookeeper]


def answered(state: ClusterState, path: str) -> Any:
    request = read_request(state, path)
    return request if request is not None and request.status != "pending" else None


def test_requests_and_levels_through_the_control_thread(cluster_state: ClusterState, tmp_path: Path) -> None:
    state = cluster_state
    with pytest.raises(LookupError, match="no control channel"):
        submit_request(state, "t-1", "node-a", 6700, "jstack")
    control = WorkerControl(state, topology_id="t-1", node="node-a", port=6700, log_dir=tmp_path,
                            conf={"worker.control.poll.secs": 0.2})

    def echo(args: Mapping[str, Any]) -> Mapping[str, Any]:
        return {"echo": args.get("say")}
    control.register("echo", echo)
    logger = logging.getLogger("test.worker.control")
    logger.setLevel(logging.WARNING)
    control.start()
    try:
        path = submit_request(state, "t-1", "node-a", 6700, "echo", {"say": "hi"})
        done = wait_for(lambda: answered(state, path), 20, "the echo answer")
        assert done.status == "done" and done.result == {"echo": "hi"}
        remove_request(state, path)
        assert read_request(state, path) is None

        path = submit_request(state, "t-1", "node-a", 6700, "explode")
        failed = wait_for(lambda: answered(state, path), 20, "the refusal")
        assert failed.status == "failed" and "unknown action 'explode'" in (failed.error or "")
        assert "echo" in (failed.error or "") and "jstack" in (failed.error or "")

        path = submit_request(state, "t-1", "node-a", 6700, "jstack")
        dump = wait_for(lambda: answered(state, path), 20, "the stack dump")
        text = (tmp_path / dump.result["file"]).read_text()
        assert "worker-control t-1:6700" in text  # the control thread's own stack is in it

        change_log_config(state, "t-1", [("test.worker.control", "DEBUG", 2)])
        wait_for(lambda: logger.level == logging.DEBUG, 20, "the DEBUG level applied")
        wait_for(lambda: logger.level == logging.WARNING, 20, "the level reverted after 2 s")
    finally:
        control.stop()
