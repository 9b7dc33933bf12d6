"""The znode layout: every node of a topology, supervisor and worker at its exact path."""

from __future__ import annotations

import re

import pytest

from stormpy.cluster.paths import (
    ZkPaths,
    decode_segment,
    encode_segment,
    normalize_root,
    parse_worker_key,
    worker_key,
)


def test_a_topologys_assignment_sits_under_the_root() -> None:
    assert ZkPaths("/stormpy").assignment("wc-1-17") == "/stormpy/assignments/wc-1-17"


P = ZkPaths("/stormpy")


def test_every_node_of_the_layout_sits_at_its_path() -> None:
    assert P.top_level() == [
        "/stormpy/supervisors", "/stormpy/storms", "/stormpy/assignments", "/stormpy/workerbeats",
        "/stormpy/errors", "/stormpy/nimbuses", "/stormpy/checkpoints", "/stormpy/transactional",
        "/stormpy/blobstore", "/stormpy/blobstore-wanted", "/stormpy/submitting", "/stormpy/logconfigs",
        "/stormpy/workercontrol"]
    assert P.supervisor("sup-1") == "/stormpy/supervisors/sup-1"
    assert P.storm("t-1") == "/stormpy/storms/t-1"
    assert P.workerbeats("t-1") == "/stormpy/workerbeats/t-1"
    assert P.workerbeat("t-1", "node-a", 6700) == "/stormpy/workerbeats/t-1/node-a-6700"
    assert P.errors("t-1") == "/stormpy/errors/t-1"
    assert P.component_errors("t-1", "my bolt/1") == "/stormpy/errors/t-1/my%20bolt%2F1"
    assert P.nimbus("nim-1") == "/stormpy/nimbuses/nim-1"
    assert P.nimbus_leader() == "/stormpy/nimbuses/leader"
    assert P.blobstore("t-1") == "/stormpy/blobstore/t-1"
    assert P.replica("t-1", "nim-1") == "/stormpy/blobstore/t-1/nim-1"
    assert P.bundle_wanted("t-1") == "/stormpy/blobstore-wanted/t-1"
    assert P.submitting("t-1") == "/stormpy/submitting/t-1"
    assert P.logconfig("t-1") == "/stormpy/logconfigs/t-1"
    assert P.workercontrol("t-1") == "/stormpy/workercontrol/t-1"
    assert P.worker_requests("t-1", "n", 6701) == "/stormpy/workercontrol/t-1/n-6701"
    assert P.checkpoints("t-1") == "/stormpy/checkpoints/t-1"
    assert P.spout_checkpoints("t-1", "sp") == "/stormpy/checkpoints/t-1/sp"
    assert P.checkpoint("t-1", "sp", 3) == "/stormpy/checkpoints/t-1/sp/3"  # type: ignore[arg-type]
    assert P.transactional("t-1") == "/stormpy/transactional/t-1"
    assert P.transactional("t-1", "a b", "c") == "/stormpy/transactional/t-1/a%20b/c"


def test_a_kill_removes_every_subtree_of_the_topology_assignment_first_status_last() -> None:
    assert P.topology_paths("t-1") == [
        "/stormpy/assignments/t-1", "/stormpy/workerbeats/t-1", "/stormpy/errors/t-1",
        "/stormpy/checkpoints/t-1", "/stormpy/transactional/t-1", "/stormpy/blobstore/t-1",
        "/stormpy/blobstore-wanted/t-1", "/stormpy/logconfigs/t-1", "/stormpy/workercontrol/t-1",
        "/stormpy/storms/t-1"]


def test_the_root_is_normalised_and_the_slash_root_has_no_double_slash() -> None:
    assert ZkPaths().root == "/stormpy"
    assert ZkPaths("/a/b//").storm("t") == "/a/b/storms/t"
    assert ZkPaths("/").storm("t") == "/storms/t"
    assert ZkPaths("///").root == "/"
    assert normalize_root("/x/") == "/x"
    with pytest.raises(ValueError, match="^ZooKeeper root 'stormpy' must be an absolute path$"):
        ZkPaths("stormpy")


def test_named_state_sits_beside_the_topologies_in_an_owner_segment() -> None:
    assert P.connector_checkpoints("kinesis", "my cfg") == "/stormpy/checkpoints/kinesis:my%20cfg"
    assert P.connector_checkpoints("kinesis", "c", "shard/1", 2) == \
        "/stormpy/checkpoints/kinesis:c/shard%2F1/2"  # type: ignore[arg-type]
    assert P.named_state("transactional", "tx", "id") == "/stormpy/transactional/tx:id"
    with pytest.raises(ValueError, match="^state area 'errors' must be 'checkpoints' or 'transactional'$"):
        P.named_state("errors", "tx", "id")
    for owner in ("Kinesis", "kin1", "", "a:b", 7):
        with pytest.raises(ValueError, match=f"^connector {owner!r} must be a lowercase word"):
            P.named_state("checkpoints", owner, "id")  # type: ignore[arg-type]


@pytest.mark.parametrize(("what", "call"), [
    ("supervisor id", lambda v: P.supervisor(v)), ("topology id", lambda v: P.storm(v)),
    ("topology id", lambda v: P.assignment(v)), ("topology id", lambda v: P.workerbeats(v)),
    ("topology id", lambda v: P.workerbeat(v, "n", 1)), ("node id", lambda v: P.workerbeat("t", v, 1)),
    ("topology id", lambda v: P.errors(v)), ("topology id", lambda v: P.component_errors(v, "c")),
    ("nimbus id", lambda v: P.nimbus(v)), ("topology id", lambda v: P.blobstore(v)),
    ("topology id", lambda v: P.replica(v, "n")), ("nimbus id", lambda v: P.replica("t", v)),
    ("topology id", lambda v: P.bundle_wanted(v)), ("topology id", lambda v: P.submitting(v)),
    ("topology id", lambda v: P.logconfig(v)), ("topology id", lambda v: P.workercontrol(v)),
    ("topology id", lambda v: P.worker_requests(v, "n", 1)),
    ("node id", lambda v: P.worker_requests("t", v, 1)),
    ("topology id", lambda v: P.checkpoints(v)), ("topology id", lambda v: P.spout_checkpoints(v, "s")),
    ("topology id", lambda v: P.checkpoint(v, "s", "p")), ("topology id", lambda v: P.transactional(v)),
])
@pytest.mark.parametrize("bad", ["", "a/b", ".", "..", "a\x00b", 5])
def test_an_id_that_is_no_plain_segment_is_refused_naming_what_it_is(what: str, call: object,
                                                                     bad: object) -> None:
    expected = f"^{re.escape(f'{what} {bad!r}')} is not a valid ZooKeeper path segment$"
    with pytest.raises(ValueError, match=expected):
        call(bad)  # type: ignore[operator]


def test_user_names_are_one_reversible_segment() -> None:
    for name in ("a b", "x/y", ".", "..", "50%", "ünï", "a.b", "~-_"):
        seg = encode_segment(name)
        assert "/" not in seg and seg not in (".", "..")
        assert decode_segment(seg) == name
    assert encode_segment(".") == "%2E"
    assert encode_segment("..") == "%2E%2E"
    assert encode_segment("a.b") == "a.b"
    for bad in ("", None, 3):
        with pytest.raises(ValueError, match=f"^name {bad!r} must be a non-empty string$"):
            encode_segment(bad)  # type: ignore[arg-type]


def test_worker_keys_split_at_the_last_dash() -> None:
    assert worker_key("node-a", "6700") == "node-a-6700"  # type: ignore[arg-type]
    assert parse_worker_key("node-a-6700") == ("node-a", 6700)
    for bad in ("node6700", "-6700", "node-", "node-67x0"):
        with pytest.raises(ValueError, match=f"^worker key {bad!r} is not of the form <node>-<port>$"):
            parse_worker_key(bad)


def test_only_trailing_slashes_are_trimmed_from_the_root() -> None:
    assert ZkPaths("/rootX/").root == "/rootX"
    assert normalize_root("/stormpy-XX//") == "/stormpy-XX"
