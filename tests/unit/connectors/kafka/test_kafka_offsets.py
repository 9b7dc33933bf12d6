"""OffsetManager and the shared AckedPrefix: out-of-order acks, gaps, nth uncommitted, commit."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stormpy.connectors._offsets import AckedPrefix
from stormpy.connectors.kafka import KafkaSpoutMessageId, OffsetAndMetadata, OffsetManager, TopicPartition

TP = TopicPartition("t", 0)


def mid(offset: int) -> KafkaSpoutMessageId:
    return KafkaSpoutMessageId("t", 0, offset)


def manager(start: int, emitted: list[int]) -> OffsetManager:
    om = OffsetManager(TP, start)
    for o in emitted:
        om.add_to_emit_msgs(o)
    return om


def test_nothing_is_committable_until_the_first_offset_is_acked() -> None:
    om = manager(0, [0, 1, 2, 3])
    assert om.find_next_commit_offset("m") is None
    om.add_to_ack_msgs(mid(2))
    om.add_to_ack_msgs(mid(1))
    assert om.find_next_commit_offset("m") is None
    om.add_to_ack_msgs(mid(0))
    assert om.find_next_commit_offset("m") == OffsetAndMetadata(3, "m")


def test_out_of_order_acks_commit_only_the_contiguous_prefix() -> None:
    om = manager(5, [5, 6, 7, 8, 9])
    for o in (9, 7, 5, 6):
        om.add_to_ack_msgs(mid(o))
    nxt = om.find_next_commit_offset("meta")
    assert nxt == OffsetAndMetadata(8, "meta")
    assert om.commit(nxt) == 3
    assert om.committed_offset == 8 and om.has_committed
    assert om.num_uncommitted_offsets == 2  # 8 (unacked) and 9 (acked)
    assert om.contains(mid(9)) and not om.contains(mid(5))
    om.add_to_ack_msgs(("t", 0, 8))  # a plain tuple is a message id too
    assert om.find_next_commit_offset().offset == 10


def test_a_gap_with_nothing_emitted_does_not_block_the_commit() -> None:
    # offsets 2 and 3 were compacted away (or are transaction markers): never emitted
    om = manager(0, [0, 1, 4, 5])
    for o in (0, 1, 4):
        om.add_to_ack_msgs(mid(o))
    assert om.find_next_commit_offset().offset == 5


def test_an_emitted_unacked_offset_in_the_gap_blocks_the_commit() -> None:
    om = manager(0, [0, 2, 3])
    for o in (0, 3):
        om.add_to_ack_msgs(mid(o))
    assert om.find_next_commit_offset().offset == 1
    om.add_to_ack_msgs(mid(2))
    assert om.find_next_commit_offset().offset == 4


def test_a_gap_right_after_the_committed_offset() -> None:
    om = manager(10, [13, 14])
    om.add_to_ack_msgs(mid(13))
    assert om.find_next_commit_offset().offset == 14


def test_nth_uncommitted_offset_after_committed() -> None:
    om = manager(0, [1, 2, 8, 10])
    assert [om.nth_uncommitted_offset_after_committed(n) for n in (1, 2, 3, 4)] == [1, 2, 8, 10]
    with pytest.raises(IndexError):
        om.nth_uncommitted_offset_after_committed(5)
    assert om.latest_emitted_offset == 10


def test_acks_of_committed_offsets_are_ignored_and_replays_are_idempotent() -> None:
    om = manager(0, [0, 1])
    om.add_to_ack_msgs(mid(0))
    om.commit(om.find_next_commit_offset())
    assert om.add_to_ack_msgs(mid(0)) is False
    om.add_to_emit_msgs(1)  # a replay of an emitted offset
    assert om.num_uncommitted_offsets == 1
    assert om.commit(OffsetAndMetadata(0)) == 0  # below the committed offset: no change
    assert om.committed_offset == 1


def test_bad_message_id_and_initial_offset_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="initial fetch offset"):
        OffsetManager(TP, -1)
    with pytest.raises(TypeError, match="not a Kafka message id"):
        OffsetManager(TP, 0).add_to_ack_msgs("x")


def test_message_id_equals_its_plain_tuple() -> None:
    m = KafkaSpoutMessageId("t", 1, 7, num_fails=2)
    assert m == ("t", 1, 7) and hash(m) == hash(("t", 1, 7))
    assert m == KafkaSpoutMessageId("t", 1, 7) and m != ("t", 1, 8)
    assert {m: 1}[("t", 1, 7)] == 1
    assert tuple(m) == ("t", 1, 7) and m.topic_partition == TopicPartition("t", 1)


def test_acked_prefix_emits_below_the_scanned_run_reset_it() -> None:
    p = AckedPrefix()
    for x in (1, 2, 5):
        p.ack(x)
    assert p.committable() == 5
    p.emit(3)  # an unacked position appears inside the run
    assert p.committable() == 2
    assert p.commit_through(2) == 2 and p.pending == 2 and p.first() == 3


# -- property test against a trivial model -----------------------------------------------------

ops = st.lists(st.tuples(st.sampled_from(["emit", "ack", "commit"]), st.integers(0, 40)), max_size=120)


@settings(max_examples=300, deadline=None)
@given(start=st.integers(0, 5), ops=ops)
def test_offset_manager_matches_a_model(start: int, ops: list[tuple[str, int]]) -> None:
    om = OffsetManager(TP, start)
    committed = start
    emitted: set[int] = set()
    acked: set[int] = set()
    for op, x in ops:
        if op == "emit" and x >= committed:
            om.add_to_emit_msgs(x)
            emitted.add(x)
        elif op == "ack" and x in emitted:
            om.add_to_ack_msgs(mid(x))
            acked.add(x)
        elif op == "commit":
            nxt = om.find_next_commit_offset("m")
            # model: walk the emitted offsets in order from the committed one while acked
            run = None
            for o in sorted(emitted):
                if o not in acked:
                    break
                run = o
            assert nxt == (None if run is None else OffsetAndMetadata(run + 1, "m"))
            if nxt is not None:
                assert om.commit(nxt) == len({o for o in acked if o < nxt.offset})
                committed = nxt.offset
                emitted = {o for o in emitted if o >= committed}
                acked = {o for o in acked if o >= committed}
        assert om.num_uncommitted_offsets == len(emitted)
        assert om.committed_offset == committed
        for n, o in enumerate(sorted(emitted), 1):
            assert om.nth_uncommitted_offset_after_committed(n) == o
        assert all(om.contains(mid(o)) for o in acked)
