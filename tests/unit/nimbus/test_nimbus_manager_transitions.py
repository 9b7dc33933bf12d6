"""TopologyManager's lookups and status transitions, each checked for what it writes: the
StormBase fields, the waits it arms, the refusals and their messages (in-memory cluster state,
simulated time)."""

from __future__ import annotations

from pathlib import Path

import pytest
from nimbus_fakes import FakeClusterState, SimClock, staged_bundle

from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.store import BundleStore
from stormpy.nimbus.topologies import TopologyManager
from stormpy.rpc.errors import NotFoundError
from wordcount import build

CONF = {"nimbus.task.timeout.secs": 4, "nimbus.supervisor.timeout.secs": 6, "nimbus.monitor.freq.secs": 10,
        "nimbus.task.launch.secs": 10, "topology.message.timeout.secs": 30}


class Env:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.clock = SimClock()
        self.state = FakeClusterState()
        self.state.add_supervisor("sup-a", [6700, 6701])
        self.state.add_supervisor("sup-b", [6700, 6701])
        self.store = BundleStore(NimbusDirs(tmp / "local"))
        self.manager = TopologyManager(self.state, self.store, CONF, clock=self.clock)  # type: ignore[arg-type]

    def submit(self, name: str = "wc", workers: int = 2, status: str = "active") -> str:
        return self.manager.submit(name, staged_bundle(self.tmp, name), build(100).create_topology(),
                                   {"topology.workers": workers}, status)


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


def test_a_topology_is_found_by_name_or_id_and_an_unknown_one_is_named(env: Env) -> None:
    with pytest.raises(NotFoundError, match=r"^no topology named 'wc' \(running: none\)$"):
        env.manager.base_by_name("wc")
    tid = env.submit("wc")
    other = env.submit("alpha")
    assert env.manager.base_by_name("wc") == env.state.bases[tid]
    assert env.manager.base_by_name(other) == env.state.bases[other]
    with pytest.raises(NotFoundError, match=r"^no topology named 'nope' \(running: alpha, wc\)$"):
        env.manager.base_by_name("nope")
    with pytest.raises(NotFoundError, match=r"^topology name must be a string, got 7$"):
        env.manager.base_by_name(7)
