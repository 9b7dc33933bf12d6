"""The XOR ledger: unit cases and a property test over random tuple trees."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from stormpy.acker import AckLedger, RotatingMap
from stormpy.acker.ledger import COMPLETED, FAILED


def test_completes_when_value_returns_to_zero() -> None:
    ledger = AckLedger()
    e1, e2 = 0x1234, 0x9876
    assert ledger.init(7, e1 ^ e2, spout_task=3) is None
    assert ledger.ack(7, e1) is None
    out = ledger.ack(7, e2)
    assert out is not None and (out.kind, out.root, out.spout_task) == (COMPLETED, 7, 3)
    assert 7 not in ledger


def test_ack_before_init_waits_for_the_init() -> None:
    ledger = AckLedger()
    assert ledger.ack(1, 0xAB) is None
    out = ledger.init(1, 0xAB, spout_task=9)
    assert out is not None and out.kind == COMPLETED


def test_fail_before_init_fails_when_the_spout_task_is_known() -> None:
    ledger = AckLedger()
    assert ledger.fail(5) is None
    out = ledger.init(5, 0x1, spout_task=2)
    assert out is not None and out.kind == FAILED


def test_entries_expire_after_rotations() -> None:
    ledger = AckLedger(buckets=3)
    ledger.init(1, 0xF, spout_task=1)
    assert ledger.rotate() == []
    assert ledger.rotate() == []
    assert ledger.rotate() == [1]
    assert ledger.ack(1, 0xF) is None  # a late ack opens an orphan entry, never a completion


def test_reset_timeout_moves_entry_to_the_newest_bucket() -> None:
    ledger = AckLedger(buckets=3)
    ledger.init(1, 0xF, spout_task=4)
    ledger.rotate()
    ledger.rotate()
    assert ledger.reset_timeout(1) == 4
    ledger.rotate()
    ledger.rotate()
    assert 1 in ledger
    assert ledger.rotate() == [1]


def test_rotating_map_basics() -> None:
    m: RotatingMap[str, int] = RotatingMap(2)
    m.put("a", 1)
    assert m.get("a") == 1 and "a" in m and len(m) == 1
    assert m.rotate() == {}
    assert m.touch("a")
    assert m.rotate() == {}
    assert m.rotate() == {"a": 1}
    assert m.pop("a") is None


class _Node:
    def __init__(self, edge: int) -> None:
        self.edge = edge
        self.children: list[_Node] = []


def _random_tree(rnd: random.Random, size: int) -> list[_Node]:
    """Spout children of a root plus descendants; returns every non-root node."""
    nodes: list[_Node] = []
    for _ in range(size):
        node = _Node(rnd.getrandbits(64))
        if nodes and rnd.random() < 0.7:
            rnd.choice(nodes).children.append(node)
        nodes.append(node)
    return nodes


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32), size=st.integers(1, 25), fail_at=st.one_of(st.none(),
                                                                            st.integers(0, 30)))
def test_random_trees_complete_exactly_when_every_edge_is_acked(seed: int, size: int,
                                                                 fail_at: int | None) -> None:
    rnd = random.Random(seed)
    nodes = _random_tree(rnd, size)
    child_ids = {id(c) for n in nodes for c in n.children}
    spout_children = [n for n in nodes if id(n) not in child_ids]
    init_xor = 0
    for n in spout_children:
        init_xor ^= n.edge
    messages: list[tuple[str, int]] = [("init", init_xor)]
    for n in nodes:
        val = n.edge
        for c in n.children:
            val ^= c.edge
        messages.append(("ack", val))
    if fail_at is not None:  # one tuple of the tree fails instead of being acked
        messages[1 + fail_at % len(nodes)] = ("fail", 0)
    rnd.shuffle(messages)
    ledger = AckLedger()
    outcomes = []
    for i, (kind, val) in enumerate(messages):
        if kind == "init":
            out = ledger.init(42, val, spout_task=1)
        elif kind == "ack":
            out = ledger.ack(42, val)
        else:
            out = ledger.fail(42)
        if out is not None:
            outcomes.append((i, out.kind))
    if fail_at is None:
        assert outcomes == [(len(messages) - 1, COMPLETED)]
    else:
        assert len(outcomes) == 1 and outcomes[0][1] == FAILED
        seen_init = [k for k, _ in messages[:outcomes[0][0] + 1]]
        assert "init" in seen_init and "fail" in seen_init


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32), roots=st.integers(1, 6))
def test_interleaved_roots_and_joins_complete_independently(seed: int, roots: int) -> None:
    """A joined tuple is anchored to several roots; each root gets the edge in its own ledger."""
    rnd = random.Random(seed)
    ledger = AckLedger()
    messages: list[tuple[str, int, int]] = []
    for r in range(roots):
        e_spout = rnd.getrandbits(64)
        e_join = rnd.getrandbits(64)
        messages.append(("init", r, e_spout))
        messages.append(("ack", r, e_spout ^ e_join))  # the spout tuple, acked with its child
        messages.append(("ack", r, e_join))            # the joined child acked
    rnd.shuffle(messages)
    done: list[int] = []
    for kind, r, val in messages:
        out = ledger.init(r, val, 1) if kind == "init" else ledger.ack(r, val)
        if out is not None:
            assert out.kind == COMPLETED
            done.append(out.root)
    assert sorted(done) == list(range(roots))
    assert len(ledger) == 0
