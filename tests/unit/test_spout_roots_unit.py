"""``SpoutRoots`` on a stand-in dispatch: no acker in the spout's worker leaves the roots
unpinned (``home`` -1), and an init for an acker elsewhere is a tuple naming the spout task and
its component on the acker-init stream."""

from __future__ import annotations

from typing import Any

from stormpy.acker.streams import ACK_INIT
from stormpy.topology.tuple import Tuple
from stormpy.worker.edges import EdgeIds
from stormpy.worker.spout_roots import SpoutRoots


class RemoteAckerDispatch:
    """One acker, task 7, in another worker: deliveries to it are recorded."""

    def __init__(self) -> None:
        self.sent: list[Tuple] = []
        self.deliver = {7: self.sent.append}
        self.acker_tasks = [7]
        self.acker_cores: list[Any] = [None]
        self.edges = EdgeIds(3)


def test_without_an_acker_in_the_worker_roots_stay_unpinned_and_inits_travel_as_tuples() -> None:
    dispatch = RemoteAckerDispatch()
    roots = SpoutRoots(dispatch, 4, "feeder")  # type: ignore[arg-type]
    assert roots.home == -1
    roots.choose_home()
    assert roots.home == -1  # no acker here: none to pin to
    assert roots.pin(2 ** 62 - 1) == 2 ** 62 - 1 and roots.pin(0) == 1
    root = roots.fresh()
    assert root == EdgeIds(3).next()  # the worker's next id, unmoved
    roots.init(root, 99)
    (tup,) = dispatch.sent
    assert (tup.values, tup.stream, tup.task, tup.component, tup.fields) == (
        [root, 99, 4], ACK_INIT, 4, "feeder", None)
    assert (roots.task_id, roots.component_id, roots.n_ackers) == (4, "feeder", 1)
