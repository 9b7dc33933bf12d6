"""``SpoutRoots`` with its acker in another worker: no acker in the spout's worker leaves the roots
unpinned (``home`` -1), and an init for an acker elsewhere is a tuple naming the spout task and
its component on the acker-init stream."""

from __future__ import annotations

from stormpy.acker.streams import ACK_INIT
from stormpy.topology._tuple import Tuple
from stormpy.worker.dispatch import Dispatch
from stormpy.worker.edges import EdgeIds
from stormpy.worker.spout_roots import SpoutRoots


def remote_acker_dispatch() -> tuple[Dispatch, list[Tuple]]:
    """A worker's dispatch with one acker, task 7, in another worker (no core attached here),
    whose deliveries to it are recorded, and ids seeded with 3 (a real ``Dispatch``: compiled,
    ``SpoutRoots`` takes no other)."""
    dispatch = Dispatch(7, [7])
    sent: list[Tuple] = []
    dispatch.deliver[7] = sent.append
    dispatch.edges = EdgeIds(3)
    return dispatch, sent


def test_without_an_acker_in_the_worker_roots_stay_unpinned_and_inits_travel_as_tuples() -> None:
    dispatch, sent = remote_acker_dispatch()
    roots = SpoutRoots(dispatch, 4, "feeder")
    assert roots.home == -1
    roots.choose_home()
    assert roots.home == -1  # no acker here: none to pin to
    assert roots.pin(2 ** 62 - 1) == 2 ** 62 - 1 and roots.pin(0) == 1
    root = roots.fresh()
    assert root == EdgeIds(3).next()  # the worker's next id, unmoved
    roots.init(root, 99)
    (tup,) = sent
    assert (tup.values, tup.stream, tup.task, tup.component, tup.fields) == (
        [root, 99, 4], ACK_INIT, 4, "feeder", None)
    assert (roots.task_id, roots.component_id, roots.n_ackers) == (4, "feeder", 1)
