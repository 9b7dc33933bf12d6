"""The roots of a spout task's tuple trees: fresh random 62-bit ids (``edges.py``) pinned to an
acker of the spout's own worker, and the acker's init of each.

An acker index is chosen by ``root % n_ackers``. When an acker runs in the spout's worker, every
root the spout draws is moved to an id of that acker (its home acker, one per spout task, spread
over the worker's ackers by task id): the init, the acker's replies and the acks of co-located
bolts then stay off the network. 0 means "in no tree", so it is never a root. Used by a spout's
single emits (``SpoutTask``) and its batches (``BatchEmitter``). This module is compiled with the
rest of the tuple path.
"""

from __future__ import annotations

from typing import Final

from stormpy.acker.streams import ACK_INIT
from stormpy.topology._tuple import Tuple
from stormpy.worker.dispatch import Dispatch

__all__ = ["SpoutRoots"]

#: roots are below this (62 bits, like edges: unboxed when compiled; ``edges.py``)
_ROOT_LIMIT: Final = 2 ** 62


class SpoutRoots:
    """Root ids and acker inits of one spout task (see the module docstring)."""

    def __init__(self, dispatch: Dispatch, task_id: int, component_id: str) -> None:
        self.task_id = task_id
        self.component_id = component_id
        self._deliver = dispatch.deliver
        self._ackers = dispatch.acker_tasks
        self._acker_direct = dispatch.acker_cores
        self._edges = dispatch.edges
        self.n_ackers = len(dispatch.acker_tasks)
        #: index of the acker in this worker the roots are pinned to, or -1 (none, or not
        #: chosen yet: ``choose_home``)
        self.home = -1

    def choose_home(self) -> None:
        """Pin the roots to an acker of this worker, if any (called when the spout opens, once
        every task of the worker exists)."""
        local = [i for i, a in enumerate(self._acker_direct) if a is not None]
        if local:
            self.home = local[self.task_id % len(local)]

    def fresh(self) -> int:
        """A new random root id (``pin`` of the worker's next 62-bit id)."""
        return self.pin(self._edges.next())

    def pin(self, drawn: int) -> int:
        """Root id made of the random id ``drawn`` (0 <= drawn < 2**62): non-zero, below 2**62,
        and of the home acker when there is one."""
        n_ackers = self.n_ackers
        root = drawn
        home = self.home
        if home >= 0:  # root % n picks the acker: move the id to the home acker's
            root += home - root % n_ackers
            if root >= _ROOT_LIMIT:  # past 62 bits: the previous id with the same acker
                root -= n_ackers
        if not root:  # 0 means "in no tree": the next id with the same acker
            root = n_ackers
        return root

    def init(self, root: int, xor: int) -> None:
        """Tell the acker of ``root`` that the tree starts with the edges XORed in ``xor``: a
        direct call when that acker runs in this worker, a tuple through the transport
        otherwise."""
        i = root % self.n_ackers
        acker = self._acker_direct[i]
        task = self.task_id
        if acker is not None:
            acker.init(root, xor, task)
        else:
            self._deliver[self._ackers[i]](Tuple([root, xor, task], ACK_INIT, task,
                                                 self.component_id, None))
