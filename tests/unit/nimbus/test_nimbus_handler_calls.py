"""The Nimbus RPC handler called in-process over the in-memory cluster state: what a leader and a
standby answer to each call, the exact refusals of bad arguments (naming what was wrong), the
replication wait of a submit, the spec size bound, and the figures and warnings of
``get_cluster_info`` / ``get_topology_info`` / ``get_daemon_stats``."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

import msgpack
import pytest
from nimbus_fakes import NimbusRig, staged_bundle

from stormpy.cluster import StormBase
from stormpy.cluster.records import encode
from stormpy.nimbus.downloads import DownloadManager
from stormpy.nimbus.handler import NimbusHandler
from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.recovery import NO_CODE, UNSCHEDULED
from stormpy.nimbus.submission import check_znode, roll_back_submission
from stormpy.nimbus.uploads import UploadManager
from stormpy.nimbus.validation import validate_topology_conf
from stormpy.rpc.errors import InvalidRequestError, NotLeaderError, TopologyRefusedError
from stormpy.state import KeyValueState, StatefulBolt
from stormpy.topology import Spout, TopologyBuilder, Tuple
from wordcount import build

THIS = {"id": "n-a", "host": "nimbus-a", "port": 6627}


class Holders:
    """A replicator stand-in: how many Nimbus hosts hold each topology's bundle."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts
        self.asked: list[list[str]] = []

    def holder_counts(self, topology_ids: list[str]) -> dict[str, int]:
        self.asked.append(topology_ids)
        return {tid: n for tid, n in self.counts.items() if tid in topology_ids}


class Recovery:
    def __init__(self, holders: Holders) -> None:
        self.replicator = holders


class Nimbus:
    """A handler over a :class:`NimbusRig`'s manager, real uploads and downloads, a leadership
    flag and leader address the test sets, and replication calls recorded."""

    def __init__(self, tmp: Path, conf: dict[str, Any] | None = None, *, recovery: Any = None,
                 replicate_answer: str | None = None, replicating: bool = True) -> None:
        self.tmp = tmp
        self.rig = NimbusRig(tmp, conf or {}, monitor=False)
        self.uploads = UploadManager(NimbusDirs(tmp / "local"), max_bundle_bytes=10_000_000,
                                     expiration_secs=600)
        self.downloads = DownloadManager(chunk_size=1000, expiration_secs=600)
        self.leading = True
        self.leader: str | None = "nimbus-a:6627"
        self.changes = 0
        self.replicated: list[tuple[str, int, float, bool]] = []
        self.replicate_answer = replicate_answer

        def replicate(tid: str, count: int, wait: float, strict: bool) -> str | None:
            self.replicated.append((tid, count, wait, strict))
            return self.replicate_answer

        self.handler = NimbusHandler(self.rig.manager, self.uploads, self.downloads,
                                     nimbus_info=lambda: dict(THIS), on_change=self._changed,
                                     is_leader=lambda: self.leading, leader_address=lambda: self.leader,
                                     replicate=replicate if replicating else None, recovery=recovery,
                                     conf=conf)

    def _changed(self) -> None:
        self.changes += 1

    def upload(self, key: str = "b") -> str:
        data = staged_bundle(self.tmp, key).path.read_bytes()
        begun = self.handler.begin_upload(len(data))
        self.handler.upload_chunk(begun["upload_id"], data, 0)
        finished = self.handler.finish_upload(begun["upload_id"], hashlib.sha256(data).hexdigest())
        return str(finished["bundle_key"])

    def submit(self, name: str = "wc", conf: dict[str, Any] | None = None,
               spec: dict[str, Any] | None = None) -> dict[str, Any]:
        doc = spec if spec is not None else build(100).create_topology().to_doc()
        return self.handler.submit_topology(name, self.upload(name), doc,
                                            {"topology.workers": 2, **(conf or {})})


@pytest.fixture
def nimbus(tmp_path: Path) -> Nimbus:
    return Nimbus(tmp_path)


# -- standbys and leadership ---------------------------------------------------------------------
WRITES = [("begin_upload", (10,)), ("upload_chunk", ("u", b"x", 0)), ("finish_upload", ("u", "0" * 64)),
          ("submit_topology", ("wc", "b", {})), ("kill_topology", ("wc",)), ("activate", ("wc",)),
          ("deactivate", ("wc",)), ("debug", ("wc",)), ("rebalance", ("wc",)),
          ("restore_bundle", ("wc-1", "b", {}))]


@pytest.mark.parametrize(("method", "args"), WRITES)
def test_a_standby_refuses_every_write_naming_the_leader(nimbus: Nimbus, method: str,
                                                         args: tuple[Any, ...]) -> None:
    nimbus.leading = False
    nimbus.leader = "nimbus-b:6627"
    with pytest.raises(NotLeaderError) as err:
        getattr(nimbus.handler, method)(*args)
    assert str(err.value) == (f"not the leader, leader is nimbus-b:6627 ({method} changes cluster state "
                              "and only the leader Nimbus accepts it)")


def test_with_no_leader_elected_a_standby_says_so_and_to_retry(nimbus: Nimbus) -> None:
    nimbus.leading = False
    nimbus.leader = None
    with pytest.raises(NotLeaderError) as err:
        nimbus.handler.kill_topology("wc")
    assert str(err.value) == ("not the leader, no leader is elected yet; retry shortly (kill_topology "
                              "changes cluster state and only the leader Nimbus accepts it)")


def test_get_leader_names_the_leader_and_this_nimbus(nimbus: Nimbus) -> None:
    assert nimbus.handler.get_leader() == {"leader": "nimbus-a:6627", "is_leader": True,
                                           "self": "nimbus-a:6627"}
    nimbus.leading, nimbus.leader = False, "nimbus-b:6627"
    assert nimbus.handler.get_leader() == {"leader": "nimbus-b:6627", "is_leader": False,
                                           "self": "nimbus-a:6627"}


def test_a_handler_without_leadership_leads_alone_and_counts_nothing(tmp_path: Path) -> None:
    rig = NimbusRig(tmp_path, {}, monitor=False)
    uploads = UploadManager(NimbusDirs(tmp_path / "local"), max_bundle_bytes=1000, expiration_secs=60)
    handler = NimbusHandler(rig.manager, uploads, None, nimbus_info=lambda: dict(THIS))  # type: ignore[arg-type]
    assert handler.get_leader() == {"leader": None, "is_leader": True, "self": "nimbus-a:6627"}
    assert handler.get_daemon_stats() == {
        "host": "nimbus-a", "port": 6627, "is_leader": True,
        "uploads": {"finished": 0, "bytes": 0, "failed": 0},
        "rpc": {"calls": {}, "errors": {}, "refused": 0}}


# -- the lifecycle calls -------------------------------------------------------------------------
def test_submit_kill_activate_deactivate_and_rebalance_change_the_topology(nimbus: Nimbus) -> None:
    tid = nimbus.submit(conf={"topology.submitter.user": "alice"})["topology_id"]
    records = nimbus.rig.manager.records
    base = records.storm_base(tid)
    assert (base.name, base.status, base.owner) == ("wc", "active", "alice")
    assert nimbus.changes == 1
    assert nimbus.handler.deactivate("wc") == {}
    assert records.storm_base(tid).status == "inactive"
    assert nimbus.handler.activate("wc") == {}
    assert records.storm_base(tid).status == "active"
    assert nimbus.handler.rebalance("wc", 7, 1, {"split": 1}) == {}
    base = records.storm_base(tid)
    assert (base.status, base.prev_status, base.kill_wait_secs, base.num_workers) == \
        ("rebalancing", "active", 7.0, 1)
    assert base.component_executors["split"] == 1
    assert nimbus.changes == 2
    assert nimbus.handler.kill_topology("wc", 3) == {}
    base = records.storm_base(tid)
    assert (base.status, base.kill_wait_secs) == ("killed", 3.0)
    assert nimbus.changes == 3
    nimbus.handler.kill_topology("wc", 0)
    assert records.storm_base(tid) is None


@pytest.mark.parametrize("wait", [-1, True, "soon", [1]])
def test_kill_and_rebalance_refuse_a_wait_that_is_not_a_non_negative_number(nimbus: Nimbus,
                                                                           wait: Any) -> None:
    nimbus.submit()
    for method in ("kill_topology", "rebalance"):
        with pytest.raises(InvalidRequestError) as err:
            getattr(nimbus.handler, method)("wc", wait)
        assert str(err.value) == f"{method}: wait_secs must be a non-negative number, got {wait!r}"
    assert nimbus.rig.manager.base_by_name("wc").status == "active"


def test_a_zero_wait_is_a_wait_of_zero_seconds(nimbus: Nimbus) -> None:
    tid = nimbus.submit()["topology_id"]
    nimbus.handler.rebalance("wc", 0)
    assert nimbus.rig.manager.records.storm_base(tid).status == "active"  # rebalanced at once


@pytest.mark.parametrize("value", ["", 5, None])
def test_calls_by_topology_id_refuse_an_id_that_is_not_a_non_empty_string(nimbus: Nimbus, value: Any) -> None:
    for call in (nimbus.handler.get_topology_files, nimbus.handler.begin_download,
                 nimbus.handler.get_worker_heartbeats):
        with pytest.raises(InvalidRequestError) as err:
            call(value)
        assert str(err.value) == f"topology id must be a non-empty string, got {value!r}"


def test_a_submitted_bundle_is_downloaded_whole_from_its_topology_id(nimbus: Nimbus) -> None:
    tid = nimbus.submit()["topology_id"]
    files = nimbus.handler.get_topology_files(tid)
    begun = nimbus.handler.begin_download(tid)
    assert (begun["size"], begun["sha256"]) == (files["bundle_size"], files["bundle_sha256"])
    data, offset = b"", 0
    while chunk := nimbus.handler.download_chunk(begun["download_id"], offset)["data"]:
        data += chunk
        offset += len(chunk)
    assert hashlib.sha256(data).hexdigest() == files["bundle_sha256"]
    assert len(data) == files["bundle_size"]


# -- the submit's replication wait -----------------------------------------------------------------
def test_a_submit_waits_for_the_replicas_its_config_asks_for(tmp_path: Path) -> None:
    nimbus = Nimbus(tmp_path, {"topology.max.replication.wait.time.sec": 30})
    tid = nimbus.submit(conf={"topology.min.replication.count": 2})["topology_id"]
    assert nimbus.replicated == [(tid, 2, 30.0, True)]
    tid2 = nimbus.submit("other", conf={"topology.max.replication.wait.time.sec": 4})["topology_id"]
    assert nimbus.replicated[1] == (tid2, 1, 4.0, False)  # the default count: one copy, not strict


def test_the_replication_warning_is_in_the_submits_answer(tmp_path: Path) -> None:
    nimbus = Nimbus(tmp_path, replicate_answer="only 1 of 2 Nimbus hosts hold it")
    assert nimbus.submit()["warnings"] == ["only 1 of 2 Nimbus hosts hold it"]


def test_a_bad_replication_count_refuses_the_submit_naming_the_setting(nimbus: Nimbus) -> None:
    with pytest.raises(TopologyRefusedError) as err:
        nimbus.submit(conf={"topology.min.replication.count": 0})
    assert str(err.value) == ("topology refused: topology.min.replication.count: must be an integer >= 1 "
                              "(or unset), got 0")
    assert nimbus.rig.manager.records.storm_bases() == {}


def test_a_nimbus_without_replication_submits_without_waiting(tmp_path: Path) -> None:
    nimbus = Nimbus(tmp_path, replicating=False)
    assert nimbus.submit()["warnings"] == []
    assert nimbus.replicated == []


# -- the spec size bound ---------------------------------------------------------------------------
def test_the_spec_and_config_may_encode_to_exactly_the_bound(tmp_path: Path) -> None:
    spec = build(100).create_topology().to_doc()
    conf = {"topology.workers": 2}
    size = len(msgpack.packb(spec, use_bin_type=True)) + len(msgpack.packb(conf, use_bin_type=True))
    assert Nimbus(tmp_path / "a", {"nimbus.max.spec.size.bytes": size}).submit(spec=spec)["topology_id"]
    with pytest.raises(TopologyRefusedError) as err:
        Nimbus(tmp_path / "b", {"nimbus.max.spec.size.bytes": size - 1}).submit(spec=spec)
    assert str(err.value) == (f"topology 'wc' refused: its spec and config encode to {size} bytes, beyond "
                              f"nimbus.max.spec.size.bytes ({size - 1})")


def test_a_spec_that_is_not_plain_data_is_refused_as_such(nimbus: Nimbus) -> None:
    with pytest.raises(TopologyRefusedError) as err:
        nimbus.handler.submit_topology("wc", "b", {"components": {"a", "b"}})
    assert str(err.value) == ("topology 'wc' refused: spec and config must be plain data: "
                              "can not serialize 'set' object")


# -- information ---------------------------------------------------------------------------------
def test_cluster_info_says_which_topologies_are_degraded_and_why(tmp_path: Path) -> None:
    holders = Holders({})
    nimbus = Nimbus(tmp_path, recovery=Recovery(holders))
    held = nimbus.submit("held")["topology_id"]
    lost = nimbus.submit("lost")["topology_id"]
    nimbus.rig.state.sups.clear()
    unscheduled = nimbus.submit("unscheduled")["topology_id"]
    holders.counts.update({held: 1, unscheduled: 2, "other-1": 0})
    info = nimbus.handler.get_cluster_info()
    assert {t["name"]: t["degraded"] for t in info["topologies"]} == {
        "held": None, "lost": NO_CODE, "unscheduled": UNSCHEDULED}
    assert holders.asked == [sorted([held, lost, unscheduled])]
    assert nimbus.handler.get_topology_info("lost")["degraded"] == NO_CODE
    assert nimbus.handler.get_topology_info("unscheduled")["degraded"] == UNSCHEDULED
    assert nimbus.handler.get_topology_info("held")["degraded"] is None


class Src(Spout):
    outputs = ["w"]


class Counting(StatefulBolt):
    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


def test_topology_info_repeats_the_state_warning_under_the_topologys_name(nimbus: Nimbus) -> None:
    builder = TopologyBuilder()
    builder.set_spout("src", Src)
    builder.set_bolt("count", Counting).shuffle_grouping("src")
    nimbus.rig.state.add_supervisor("sup-c", [6700], host="10.0.0.3")
    answer = nimbus.submit("counts", spec=builder.create_topology().to_doc())
    [warning] = answer["warnings"]
    assert warning.startswith("topology 'counts' keeps its stateful bolts' state ")
    assert nimbus.handler.get_topology_info("counts")["warnings"] == [warning]


# -- the submit's checks (validation.py, submission.py) ----------------------------------------------
@pytest.mark.parametrize("conf", ["abc", ["topology.workers"], {1: "x"}])
def test_a_config_that_is_not_a_map_with_string_keys_is_refused(conf: Any) -> None:
    with pytest.raises(TopologyRefusedError) as err:
        validate_topology_conf(conf)
    assert str(err.value) == "topology config must be a map with string keys"


def test_a_config_value_that_is_not_plain_data_is_refused(nimbus: Nimbus) -> None:
    with pytest.raises(TopologyRefusedError) as err:
        validate_topology_conf({"topology.tags": {"a", "b"}})
    assert str(err.value) == "topology config must be plain data: can not serialize 'set' object"
    assert validate_topology_conf({"topology.tags": [b"a", "b"]}) == {"topology.tags": [b"a", "b"]}
    assert validate_topology_conf(None) == {}


LIMITS = [("nimbus.tasks.perTopology", 9, "9 tasks"), ("nimbus.executors.perTopology", 9, "9 executors"),
          ("nimbus.slots.perTopology", 2, "2 workers (topology.workers)")]


@pytest.mark.parametrize(("key", "at", "asked"), LIMITS)
def test_a_topology_may_ask_for_exactly_the_limit_and_not_one_more(tmp_path: Path, key: str, at: int,
                                                                  asked: str) -> None:
    # the word count of build(10): 7 tasks in 7 executors, an acker per worker, two workers
    spec = build(10).create_topology().to_doc()
    assert Nimbus(tmp_path / "a", {key: at}).submit(spec=spec)["topology_id"]
    nimbus = Nimbus(tmp_path / "b", {key: at - 1})
    with pytest.raises(TopologyRefusedError) as err:
        nimbus.submit(spec=spec)
    assert str(err.value) == f"topology 'wc' asks for {asked}; this Nimbus allows at most {at - 1} ({key})"
    assert nimbus.rig.manager.records.storm_bases() == {}


def test_a_znode_may_be_exactly_jute_maxbuffer_and_not_one_byte_more() -> None:
    record = StormBase(topology_id="wc-1", name="wc", status="active", num_workers=2, launch_time=0.0,
                       owner="")
    size = len(encode(record))
    check_znode({"storm.zookeeper.jute.maxbuffer": size}, record, "the record")
    with pytest.raises(TopologyRefusedError) as err:
        check_znode({"storm.zookeeper.jute.maxbuffer": size - 1}, record, "the record")
    assert str(err.value) == (f"the record would be {size} bytes in ZooKeeper, beyond "
                              f"storm.zookeeper.jute.maxbuffer ({size - 1}); use fewer workers or executors")


def test_a_stormbase_beyond_jute_maxbuffer_is_named_and_nothing_is_left(tmp_path: Path) -> None:
    nimbus = Nimbus(tmp_path, {"storm.zookeeper.jute.maxbuffer": 50})
    with pytest.raises(TopologyRefusedError) as err:
        nimbus.submit()
    assert str(err.value).startswith("the StormBase of topology 'wc' would be ")
    assert nimbus.rig.manager.records.storm_bases() == {} and nimbus.rig.store.topology_ids() == []


def test_the_owner_is_the_submitter_user_or_empty(nimbus: Nimbus) -> None:
    tid = nimbus.submit()["topology_id"]
    assert nimbus.rig.manager.records.storm_base(tid).owner == ""


def test_a_submit_without_a_free_slot_is_accepted_and_says_so_in_the_log(
        nimbus: Nimbus, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="stormpy.nimbus.submission")
    nimbus.submit("placed")
    assert not [r for r in caplog.records if "no supervisor slot is free" in r.getMessage()]
    nimbus.rig.state.sups.clear()
    tid = nimbus.submit("waiting")["topology_id"]
    assert [r.getMessage() for r in caplog.records] == [
        f"topology {tid} submitted but no supervisor slot is free; it will be scheduled when slots appear"]
    assert nimbus.rig.manager.records.storm_base(tid).status == "active"


class Unremovable:
    def remove_storm_base(self, tid: str) -> None:
        raise OSError("base gone wrong")

    def remove_topology(self, tid: str) -> None:
        raise OSError("state gone wrong")

    def remove(self, tid: str) -> None:
        raise OSError("disk gone wrong")


def test_a_roll_back_tries_every_part_and_logs_each_it_cannot_remove(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="stormpy.nimbus.submission")
    parts = Unremovable()
    roll_back_submission(parts, parts, "wc-1")  # type: ignore[arg-type]
    assert [r.getMessage() for r in caplog.records] == [
        "rolling back topology wc-1: cannot remove its StormBase: base gone wrong",
        "rolling back topology wc-1: cannot remove its ZooKeeper state: state gone wrong",
        "rolling back topology wc-1: cannot remove its stored bundle: disk gone wrong"]
