"""A Nimbus leader that loses ZooKeeper while it writes (the cut noticed only during the call)
answers with NotLeaderError, which clients follow to the new leader, not with an InternalError;
a ZooKeeper failure while it still leads stays what it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stormpy.cluster import ZkConnectionError
from stormpy.nimbus.handler import NimbusHandler
from stormpy.nimbus.uploads import StagedBundle
from stormpy.rpc.errors import NotLeaderError
from stormpy.topology import Bolt, Spout, TopologyBuilder

CUT = "ZooKeeper get /stormpy/storms failed: could not reach zk:2181 within 20 s"


class Src(Spout):
    outputs = ["w"]


class Sink(Bolt):
    def execute(self, tup: Any) -> None:
        self.ack(tup)


def spec_doc() -> dict[str, Any]:
    b = TopologyBuilder()
    b.set_spout("src", Src)
    b.set_bolt("sink", Sink).shuffle_grouping("src")
    return b.create_topology().to_doc()


class Uploads:
    def __init__(self, tmp: Path) -> None:
        self.staged = {"b-1": StagedBundle("b-1", tmp / "b-1.zip", "0" * 64, 1, 0.0)}
        (tmp / "b-1.zip").write_bytes(b"x")

    def take(self, key: str) -> StagedBundle:
        return self.staged.pop(key)

    def restage(self, staged: StagedBundle) -> None:
        self.staged[staged.bundle_key] = staged


class CutManager:
    """A topology manager whose ZooKeeper is cut during every write; the Nimbus notices the cut
    (its leadership goes) while the write waits, as kazoo suspends the session."""

    conf: dict[str, Any] = {}

    def __init__(self, leading: list[bool], notices: bool) -> None:
        self.leading = leading
        self.notices = notices

    def _write(self, *_: Any, **__: Any) -> Any:
        if self.notices:
            self.leading[0] = False
        raise ZkConnectionError(CUT)

    submit = kill = set_active = rebalance = _write


def handler_for(tmp: Path, *, notices: bool) -> tuple[NimbusHandler, Uploads]:
    leading = [True]
    uploads = Uploads(tmp)
    handler = NimbusHandler(CutManager(leading, notices), uploads, None,  # type: ignore[arg-type]
                            nimbus_info=dict, is_leader=lambda: leading[0],
                            leader_address=lambda: None if leading[0] else "nimbus-b:6627")
    return handler, uploads


def test_a_submit_cut_off_from_zookeeper_is_refused_as_not_the_leader(tmp_path: Path) -> None:
    handler, uploads = handler_for(tmp_path, notices=True)
    with pytest.raises(NotLeaderError) as err:
        handler.submit_topology("wc", "b-1", spec_doc(), {})
    assert err.value.leader == "nimbus-b:6627"  # the client follows it
    assert "submit_topology" in err.value.message and CUT in err.value.message
    assert "b-1" in uploads.staged  # the upload stays for a retry here


@pytest.mark.parametrize("call", [
    lambda h: h.kill_topology("wc"), lambda h: h.activate("wc"), lambda h: h.deactivate("wc"),
    lambda h: h.rebalance("wc", 0, 2),
])
def test_the_other_writes_cut_off_from_zookeeper_are_refused_as_not_the_leader(
        tmp_path: Path, call: Any) -> None:
    handler, _ = handler_for(tmp_path, notices=True)
    with pytest.raises(NotLeaderError, match="lost the leadership"):
        call(handler)


def test_a_zookeeper_failure_of_a_leader_that_still_leads_is_not_disguised(tmp_path: Path) -> None:
    handler, _ = handler_for(tmp_path, notices=False)
    with pytest.raises(ZkConnectionError):
        handler.submit_topology("wc", "b-1", spec_doc(), {})
